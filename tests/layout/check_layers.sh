#!/usr/bin/env bash
# check_layers.sh — the layering the source tree promises (README "Layout",
# docs/engine.md "Inside"), checked on the files rather than trusted:
#   - lib/ includes nothing outside lib/; the programs (daemon/, client/,
#     engine/) include nothing of each other and no meson.build of theirs
#     names another program's folder;
#   - engine/ folders depend only on folders before them in ENGINE_ORDER,
#     by their includes and by their symbols: an engine object's undefined
#     symbols are defined only in its own folder, a folder before it, lib/
#     or the system (nm on the built objects of PUNCH_BUILD_ROOT, default
#     build/; a header can declare what a higher floor defines, so includes
#     alone do not prove a layering); lib/'s objects call nothing the
#     programs define.
# CHECK_LAYERS_EXTRA_OBJECTS names one more folder of objects, named as
# meson names them (FOLDER_FILE.c.o), for tests/layout/check_layers_planted.sh.
# Prints every violation, exits 1 if there is any.
set -u
root=${PUNCH_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1

ENGINE_ORDER=(backend optim data cpu gpu device layers model export train distributed bench)
LIB_DIRS=$(cd lib && ls -d */ | tr -d /) || { echo "FAIL: no lib/ under $root"; exit 1; }
# Lookups without a process per include line (the tree has thousands).
declare -A IS_LIB RANK
for l in $LIB_DIRS; do IS_LIB[$l]=1; done
for i in "${!ENGINE_ORDER[@]}"; do RANK[${ENGINE_ORDER[$i]}]=$i; done
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# The quoted includes of a folder's sources, as "file:target" lines.
includes() {
  grep -rHoE '^#include "[^"]+"' "$1" --include='*.c' --include='*.h' --include='*.cu' \
    | sed -E 's/:#include "(.*)"/:\1/'
}

# lib/: only lib's own folders.
while IFS=: read -r file target; do
  top=${target%%/*}
  # protoc-c's generated header lives in the build folder of its lib folder.
  case $target in *.pb-c.h) continue ;; esac
  [ "$top" = "$target" ] && { fail "$file includes \"$target\": lib headers are included as FOLDER/NAME.h"; continue; }
  [ -n "${IS_LIB[$top]:-}" ] || fail "$file includes \"$target\", outside lib/"
done < <(includes lib)

# No program reaches into another by a relative path, in code or in meson.
for prog in daemon client engine; do
  while IFS=: read -r file target; do
    case $target in ../*|*daemon/*|*client/*|*engine/*) fail "$file includes \"$target\"" ;; esac
  done < <(includes "$prog")
  while IFS= read -r line; do
    fail "$line: a program's meson.build names another program's folder"
  done < <(grep -rnE "'\.\./(daemon|client|engine)" "$prog" --include=meson.build)
done

# engine/: a folder includes only itself, lib/ and folders before it.
rank() { echo "${RANK[$1]:--1}"; }
for d in engine/*/; do
  d=${d%/}; name=${d#engine/}
  [ "$(rank "$name")" -ge 0 ] || fail "engine/$name is not in ENGINE_ORDER (tests/layout/check_layers.sh)"
done
for name in "${ENGINE_ORDER[@]}"; do
  [ -d "engine/$name" ] || { fail "engine/$name in ENGINE_ORDER does not exist"; continue; }
  mine=$(rank "$name")
  while IFS=: read -r file target; do
    top=${target%%/*}
    [ "$top" = "$target" ] && continue          # same folder, bare name
    [ -n "${IS_LIB[$top]:-}" ] && continue       # lib/
    theirs=${RANK[$top]:--1}
    if [ "$theirs" -lt 0 ]; then
      fail "$file includes \"$target\": no such engine folder or lib/ module"
    elif [ "$theirs" -gt "$mine" ]; then
      fail "$file includes \"$target\": engine/$name may only use folders before it (${ENGINE_ORDER[*]})"
    fi
  done < <(includes "engine/$name")
done

# Symbols. meson names an object FOLDER_FILE.c.o after its source's path
# below engine/ (engine/cpu/cpu_conv.c: cpu_cpu_conv.c.o), so the part
# before the first underscore is its folder.
build=${PUNCH_BUILD_ROOT:-$root/build}
shopt -s nullglob
engine_objs=("$build"/engine/libpunchengine.a.p/*.o "$build"/engine/gpu/libpunchgpukernels.a.p/*.o)
[ -n "${CHECK_LAYERS_EXTRA_OBJECTS:-}" ] && engine_objs+=("$CHECK_LAYERS_EXTRA_OBJECTS"/*.o)
lib_objs=("$build"/lib/*/*.a.p/*.o)
program_objs=()
while IFS= read -r o; do program_objs+=("$o"); done < <(
  find "$build/daemon" "$build/client" "$build/engine" -name '*.o' 2>/dev/null)
if [ ${#engine_objs[@]} -eq 0 ] || [ ${#lib_objs[@]} -eq 0 ]; then
  fail "no built objects under $build (PUNCH_BUILD_ROOT): build first; the symbol check never skips"
else
  defs=$(mktemp) && undefs=$(mktemp) || exit 1
  trap 'rm -f "$defs" "$undefs"' EXIT
  # "FILE:ADDR T SYM" and "FILE: U SYM": the symbol is the last field.
  nm -A -g --defined-only "${engine_objs[@]}" 2>/dev/null >"$defs"
  nm -A -u "${engine_objs[@]}" 2>/dev/null >"$undefs"
  while IFS= read -r line; do fail "$line"; done < <(
    awk -v order="${ENGINE_ORDER[*]}" '
      function obj(f) { sub(/:.*/, "", f); return f }
      function folder(f,  n, parts, b) { n = split(obj(f), parts, "/"); b = parts[n]; sub(/_.*/, "", b); return b }
      function source(f,  n, parts, b) { n = split(obj(f), parts, "/"); b = parts[n]; sub(/\.o$/, "", b); sub(/_/, "/", b); return "engine/" b }
      BEGIN { n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i }
      FNR == NR { if ($2 != "U") def[$NF] = folder($1); next }
      ($NF in def) && rank[def[$NF]] > rank[folder($1)] {
        print source($1) " calls " $NF ", defined in engine/" def[$NF] \
              ": engine/" folder($1) " may only call folders before it"
      }' "$defs" "$undefs")
  # lib/ calls nothing a program defines.
  nm -A -g --defined-only "${program_objs[@]}" 2>/dev/null >"$defs"
  nm -A -u "${lib_objs[@]}" 2>/dev/null >"$undefs"
  while IFS= read -r line; do fail "$line"; done < <(
    awk 'FNR == NR { if ($2 != "U") def[$NF] = 1; next }
         ($NF in def) { f = $1; sub(/:.*/, "", f); print f " (lib/) calls " $NF ", which a program defines" }' \
      "$defs" "$undefs")
fi

[ $bad -eq 0 ] && echo "layers: lib, programs and engine order hold (includes and symbols)"
exit $bad
