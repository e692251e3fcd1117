#!/usr/bin/env bash
# validate_corpus.sh PUNCH_TRAIN: every example job validates (exit 0); every
# broken spec in bad/ is refused with exit 2 and ONE line naming its field.
set -u
exe=$1
root=${PUNCH_SOURCE_ROOT:?}
fails=0
for job in "$root"/etc/jobs/*.json; do
  if ! out=$("$exe" --validate "$job" 2>&1); then
    echo "FAIL: example $job rejected: $out"; fails=$((fails + 1))
  fi
done
while IFS=$'\t' read -r file path; do
  err=$("$exe" --validate "$root/tests/spec/bad/$file" 2>&1 >/dev/null)
  code=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  if [ "$code" -ne 2 ]; then
    echo "FAIL: $file: exit $code, want 2 ($err)"; fails=$((fails + 1)); continue
  fi
  if [ "$lines" -ne 1 ]; then
    echo "FAIL: $file: $lines lines of error, want 1: $err"; fails=$((fails + 1)); continue
  fi
  case "$err" in
    *": $path"*) echo "ok: $file: $err" | cut -c1-150 ;;
    *) echo "FAIL: $file: error does not name '$path': $err"; fails=$((fails + 1)) ;;
  esac
done < "$root/tests/spec/bad/expect.tsv"
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
