#!/usr/bin/env bash
# first_run.sh SOURCE_ROOT BUILD_ROOT — scripts/gpu-first-run against this
# build. Without a usable device it must run the host-side tests, end on its
# one "no usable GPU device: REASON" line and exit 0; with one, every check
# must pass (exit 0) and the log must hold its summary line.
set -euo pipefail
src=$1 build=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"$src/scripts/gpu-first-run" --build "$build" --log "$log" --quick > /dev/null 2>&1
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "FAIL: gpu-first-run exited $rc; its log:"; cat "$log"; exit 1
fi
if grep -q '^gpu-first-run: no usable GPU device: .\+' "$log"; then
  grep -q '^ok   test_gpu_host' "$log" || { echo "FAIL: host-side tests not run"; cat "$log"; exit 1; }
  grep '^gpu-first-run: no usable' "$log"
  exit 0
fi
grep -q '^gpu-first-run: 0 failed' "$log" || { echo "FAIL: no summary line"; cat "$log"; exit 1; }
echo "ok: gpu-first-run passed on a device"
