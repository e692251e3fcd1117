#!/usr/bin/env bash
# check_file_loops.sh — no loop of files that call each other within a
# folder: file A calling B (directly or through others of the folder) and B
# calling A means neither can be read, tested or moved without the other.
# The graph comes from the built objects (nm on PUNCH_BUILD_ROOT, default
# build/): an edge A -> B for each global symbol A leaves undefined that B
# defines, both objects of one folder (engine/NAME, lib/NAME, daemon/ or
# daemon/NAME, client/). A loop is a
# strongly connected set of two or more files; each is printed with the
# calls that close it.
# Every folder fails on a loop (STRICT "all"); CHECK_FILE_LOOPS_STRICT may
# name a list of folders instead, the others' loops then printed as
# information.
# CHECK_FILE_LOOPS_EXTRA_OBJECTS names one more folder of objects, named as
# meson names engine objects (FOLDER_FILE.c.o), for check_layers_planted.sh.
# Exits 1 on a loop in a strict folder.
set -u
root=${PUNCH_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${PUNCH_BUILD_ROOT:-$root/build}
STRICT=${CHECK_FILE_LOOPS_STRICT:-all}

shopt -s nullglob
objs=("$build"/engine/libpunchengine.a.p/*.o "$build"/engine/gpu/libpunchgpukernels.a.p/*.o
      "$build"/lib/*/*.a.p/*.o "$build"/daemon/*.a.p/*.o "$build"/client/*.a.p/*.o)
# daemon/'s subfolders: meson names their objects SUB_FILE.c.o, and a file
# of daemon/ itself may hold an underscore too.
DAEMON_SUBS=$(cd "$root/daemon" && ls -d */ 2>/dev/null | tr -d / | tr '\n' ' ')
[ -n "${CHECK_FILE_LOOPS_EXTRA_OBJECTS:-}" ] && objs+=("$CHECK_FILE_LOOPS_EXTRA_OBJECTS"/*.o)
if [ ${#objs[@]} -eq 0 ]; then
  echo "FAIL: no built objects under $build (PUNCH_BUILD_ROOT): build first; the check never skips"
  exit 1
fi

# "FILE:ADDR T SYM" and "FILE: U SYM" lines, one nm for all objects.
nm -A -g "${objs[@]}" 2>/dev/null | awk -v strict="$STRICT" -v dsubs="$DAEMON_SUBS" '
  # An object as "folder file": engine objects are FOLDER_FILE.c.o in one
  # archive folder (the gpu kernels in engine/gpu/), lib objects sit in
  # lib/NAME/libX.a.p/FILE.c.o, daemon objects in one archive folder as
  # SUB_FILE.c.o or FILE.c.o (generated ones as meson-generated_..._FILE.c.o),
  # client objects as FILE.c.o.
  function place(f,  n, p, b, dir, sd) {
    sub(/:.*/, "", f); n = split(f, p, "/"); b = p[n]; sub(/\.o$/, "", b)
    if (n >= 3 && (p[n - 2] == "daemon" || p[n - 2] == "client") && p[n - 1] ~ /\.a\.p$/) {
      dir = p[n - 2]
      if (b ~ /^meson-generated_/) { sub(/^meson-generated_(\.\._)*/, "", b); return dir " " b }
      sd = b; sub(/_.*/, "", sd)
      if (dir == "daemon" && b ~ /_/ && index(" " dsubs " ", " " sd " ") > 0) {
        sub(/^[^_]*_/, "", b); return "daemon/" sd " " b }
      return dir " " b
    }
    if (n >= 4 && p[n - 3] == "lib") dir = "lib/" p[n - 2]
    if (dir == "" && p[n - 2] == "gpu" && p[n - 1] ~ /gpukernels/) { return "engine/gpu " b }
    if (dir != "") return dir " " b
    dir = b; sub(/_.*/, "", dir); sub(/^[^_]*_/, "", b)
    return "engine/" dir " " b
  }
  BEGIN { n = split(strict, s, " "); for (i = 1; i <= n; i++) is_strict[s[i]] = 1 }
  {
    split(place($1), fp, " "); folder = fp[1]; file = folder "/" fp[2]
    if ($2 == "U") { nu++; uf[nu] = file; ud[nu] = folder; us[nu] = $NF }
    else if ($2 ~ /^[TDBRCVWGS]$/) { def[folder SUBSEP $NF] = file }
    node[folder SUBSEP file] = 1
  }
  END {
    for (i = 1; i <= nu; i++) {
      k = ud[i] SUBSEP us[i]
      if (!(k in def) || def[k] == uf[i]) continue
      a = uf[i]; b = def[k]
      if (!((a, b) in edge)) edge[a, b] = us[i]
      reach[a, b] = 1
    }
    # Per folder, the transitive closure (folders hold tens of files).
    for (k in node) { split(k, p, SUBSEP); nf[p[1]]++; files[p[1], nf[p[1]]] = p[2] }
    for (f in nf) {
      m = nf[f]
      for (x = 1; x <= m; x++) { mid = files[f, x]
        for (y = 1; y <= m; y++) { from = files[f, y]; if (!((from, mid) in reach)) continue
          for (z = 1; z <= m; z++) { to = files[f, z]
            if ((mid, to) in reach) reach[from, to] = 1 } } }
      # A loop: the files that reach each other, with the edges among them.
      delete seen
      for (x = 1; x <= m; x++) {
        a = files[f, x]; if (a in seen || !((a, a) in reach)) continue
        members = ""; calls = ""
        for (y = 1; y <= m; y++) { b = files[f, y]
          if ((a, b) in reach && (b, a) in reach) { seen[b] = 1; members = members " " b } }
        for (y = 1; y <= m; y++) { b = files[f, y]; if (index(members " ", " " b " ") == 0) continue
          for (z = 1; z <= m; z++) { c = files[f, z]
            if ((b, c) in edge && index(members " ", " " c " ") > 0)
              calls = calls "\n    " b " -> " c " (" edge[b, c] ")" } }
        msg = "a loop of files calling each other in " f ":" members calls
        if (strict == "all" || f in is_strict) { print "FAIL: " msg; bad = 1 } else print "info: " msg
      }
    }
    all = "any folder of engine/, lib/, daemon/ and client/"
    if (!bad) print "file loops: none in " (strict == "all" ? all : strict)
    exit bad
  }'
