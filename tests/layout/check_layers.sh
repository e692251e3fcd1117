#!/usr/bin/env bash
# check_layers.sh — the layering the source tree promises (README "Layout",
# docs/engine.md "Inside"), checked on the files rather than trusted:
#   - lib/ includes nothing outside lib/; the programs (daemon/, client/,
#     engine/) include nothing of each other and no meson.build of theirs
#     names another program's folder;
#   - engine/ folders depend only on folders before them in ENGINE_ORDER.
# Prints every violation, exits 1 if there is any.
set -u
root=${PUNCH_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1

ENGINE_ORDER=(backend optim data cpu gpu layers model export train distributed bench)
LIB_DIRS=$(cd lib && ls -d */ | tr -d /) || { echo "FAIL: no lib/ under $root"; exit 1; }
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
  [ "$top" = "$target" ] && { fail "$file includes \"$target\": lib headers are included as FOLDER/NAME.h"; continue; }
  grep -qx "$top" <<<"$LIB_DIRS" || fail "$file includes \"$target\", outside lib/"
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
rank() { local i; for i in "${!ENGINE_ORDER[@]}"; do [ "${ENGINE_ORDER[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
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
    grep -qx "$top" <<<"$LIB_DIRS" && continue   # lib/
    theirs=$(rank "$top")
    if [ "$theirs" -lt 0 ]; then
      fail "$file includes \"$target\": no such engine folder or lib/ module"
    elif [ "$theirs" -gt "$mine" ]; then
      fail "$file includes \"$target\": engine/$name may only use folders before it (${ENGINE_ORDER[*]})"
    fi
  done < <(includes "engine/$name")
done

[ $bad -eq 0 ] && echo "layers: lib, programs and engine order hold"
exit $bad
