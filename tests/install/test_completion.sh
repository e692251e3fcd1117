#!/bin/bash
# test_completion.sh: etc/completion/punch.bash completes commands, options,
# option values and job ids (from `punch list --json`, here a stub `punch`
# that prints what the API returns) for sample command lines.
set -u
src=${PUNCH_SOURCE_ROOT:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/punch-install-completion.$$.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/punch" <<'STUB'
#!/bin/sh
# A stand-in for punch: `list --json` prints two jobs; it logs its arguments.
echo "$*" >> "${0%/*}/calls"
case "$*" in
  *"list --json"*) printf '[{"id": "j-20261125-0002", "state": "running"},\n {"id":"j-20261125-0001","state":"succeeded"}]\n' ;;
esac
STUB
chmod +x "$tmp/punch"
fail=0

# complete WORD...: the completions for the line "WORD...", the cursor on the
# last word (give "" for an empty one).
complete_line() {
  PATH="$tmp:$PATH" bash -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _punch punch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    ((${#COMPREPLY[@]} == 0)) || printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$src/etc/completion/punch.bash" "$@"
}
expect() {
  local want=$1; shift
  local got; got=$(complete_line "$@" | tr '\n' ' ')
  [ "$got" = "$want" ] || { echo "FAIL: punch ${*:2}: got '$got', want '$want'"; fail=1; }
}

expect "submit " punch su
expect "cancel " punch ca
expect "state " punch --url http://h:8080 st
expect "--help --secret --url --version " punch --
expect "--wait " punch submit --w
expect "--dry-run " punch submit --d
expect "queued " punch list --state q
expect "safetensors " punch fetch j-1 --format s
expect "profile " punch prof
expect "--json " punch profile j-1 --j
expect "generate " punch gen
expect "--max-new-tokens " punch generate j-1 --m
expect "" punch generate j-1 --temperature ""
expect "j-20261125-0001 j-20261125-0002 " punch wait ""
expect "j-20261125-0002 " punch --url http://h:8080 logs -f j-20261125-0002
expect "" punch cancel j-20261125-0001 ""
grep -q -- "--url http://h:8080 list --json" "$tmp/calls" ||
  { echo "FAIL: --url was not passed on to punch list"; fail=1; }
exit $fail
