#!/usr/bin/env bash
# check_layers_planted.sh — check_layers.sh fails on what it exists to
# catch: an upward include planted in a copy of the tree, and an upward
# call planted as an object of the lowest floor (engine/backend) that
# calls the single trainer (engine/train) — a header can hide that from
# the include check, the symbols cannot. And check_file_loops.sh fails on
# two planted files of engine/distributed that call each other.
set -u
root=${PUNCH_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${PUNCH_BUILD_ROOT:-$root/build}
check=$root/tests/layout/check_layers.sh
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# An upward call: backend/ (floor 0) calling train_single (train/).
mkdir "$tmp/objects"
printf 'int train_single(void);\nint planted(void) { return train_single(); }\n' >"$tmp/planted.c"
"${CC:-cc}" -c "$tmp/planted.c" -o "$tmp/objects/backend_planted.c.o" || exit 1
out=$(CHECK_LAYERS_EXTRA_OBJECTS=$tmp/objects PUNCH_BUILD_ROOT=$build bash "$check" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "a planted upward call: check_layers.sh exited $rc, not 1"
grep -q 'engine/backend/planted.c calls train_single, defined in engine/train' <<<"$out" ||
  fail "a planted upward call was not named: $out"
[ "$(grep -c '^FAIL' <<<"$out")" -eq 1 ] || fail "more than the planted call failed: $out"

# An upward include, in a copy of the sources check_layers.sh reads.
mkdir "$tmp/tree" && cp -r "$root/engine" "$root/lib" "$tmp/tree/" || exit 1
printf '#include "train/train.h"\n' >"$tmp/tree/engine/backend/planted.c"
out=$(PUNCH_SOURCE_ROOT=$tmp/tree PUNCH_BUILD_ROOT=$build bash "$check" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "a planted upward include: check_layers.sh exited $rc, not 1"
grep -q 'engine/backend/planted.c includes "train/train.h"' <<<"$out" ||
  fail "a planted upward include was not named: $out"

# A loop of files: distributed/planted_a.c and planted_b.c call each other.
loops=$root/tests/layout/check_file_loops.sh
mkdir "$tmp/loop"
printf 'int planted_b(int);\nint planted_a(int n) { return n ? planted_b(n - 1) : 0; }\n' >"$tmp/a.c"
printf 'int planted_a(int);\nint planted_b(int n) { return n ? planted_a(n - 1) : 1; }\n' >"$tmp/b.c"
"${CC:-cc}" -c "$tmp/a.c" -o "$tmp/loop/distributed_planted_a.c.o" || exit 1
"${CC:-cc}" -c "$tmp/b.c" -o "$tmp/loop/distributed_planted_b.c.o" || exit 1
out=$(CHECK_FILE_LOOPS_EXTRA_OBJECTS=$tmp/loop PUNCH_BUILD_ROOT=$build bash "$loops" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "a planted loop of files: check_file_loops.sh exited $rc, not 1"
grep -q 'engine/distributed/planted_a.c -> engine/distributed/planted_b.c (planted_b)' <<<"$out" &&
  grep -q 'engine/distributed/planted_b.c -> engine/distributed/planted_a.c (planted_a)' <<<"$out" ||
  fail "a planted loop of files was not named: $out"
[ "$(grep -c '^FAIL' <<<"$out")" -eq 1 ] || fail "more than the planted loop failed: $out"

[ $bad -eq 0 ] && echo "check_layers.sh fails on a planted upward call and include, check_file_loops.sh on a planted loop"
exit $bad
