#!/bin/bash
# test_man.sh: every man page renders with `groff -ww` without a warning, and
# documents what the programs say they take: every option of `punch --help`
# and each command's --help, of `punchcardd --help` and `punch-train --help`,
# every config key of etc/punchcardd.conf, the engine's PUNCH_* variables and
# punch's exit codes.
set -u
build=${PUNCH_BUILD_ROOT:?} src=${PUNCH_SOURCE_ROOT:?}
man=$src/docs/man
command -v groff >/dev/null || { echo "SKIP: groff not installed (groff-base)"; exit 77; }
fail=0

for page in "$man"/*.[1-8]; do
  warnings=$(groff -ww -man -Tutf8 "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || { echo "FAIL: $page: groff warnings:"; echo "$warnings"; fail=1; }
  [ "$(groff -man -Tutf8 "$page" | wc -l)" -gt 20 ] || { echo "FAIL: $page renders empty"; fail=1; }
done

# The page's text as written: roff's \- and font escapes removed.
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man/$1"; }
# The long and short options a --help text lists.
options() { grep -oE '(^|[ [,])--?[a-z][a-z-]*' | grep -oE -- '--?[a-z][a-z-]*' | sort -u; }
expect_in() {
  local page=$1 what=$2; shift 2
  local text; text=$(plain "$page")
  for w in "$@"; do
    grep -qF -- "$w" <<<"$text" || { echo "FAIL: $page does not mention $what $w"; fail=1; }
  done
}

expect_in punch.1 option $("$build/client/punch" --help | options)
for cmd in submit state list wait logs cancel fetch keygen; do
  expect_in punch.1 "punch $cmd option" $("$build/client/punch" "$cmd" --help | options)
  expect_in punch.1 command "$cmd"
done
expect_in punch.1 "exit code" $("$build/client/punch" --help | sed -n '/^exit codes:/,$p' | awk 'NR > 1 {print $1}')
expect_in punch.1 variable PUNCH_URL PUNCH_SECRET PUNCH_CONFIG XDG_CONFIG_HOME
expect_in punchcardd.8 option $("$build/daemon/punchcardd" --help | options)
expect_in punchcardd.8 "config key" $(sed -n 's/^\([a-z-]*\) =.*/\1/p' "$src/etc/punchcardd.conf")
expect_in punchcardd.8 signal SIGTERM SIGINT SIGHUP
expect_in punch-train.1 option $("$build/engine/punch-train" --help | options)
expect_in punch-train.1 variable $(sed -n 's/^ \* *\(PUNCH_[A-Z_]*\) .*/\1/p' "$src/engine/train/options.h")
expect_in punchcard-job.5 section model data training distributed resources
expect_in punchcard-job.5 trainer single allreduce averaging ensemble downpour adag dynsgd aeasgd eamsgd
exit $fail
