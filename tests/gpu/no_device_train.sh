#!/usr/bin/env bash
# no_device_train.sh PUNCH_TRAIN CUDA_BUILT — a job with resources.gpus = 1
# on a machine where no CUDA device is usable must make punch-train exit
# non-zero at start-up with exactly one line on stderr naming the reason
# (never a crash, never a silent fall-back to the CPU):
#   CUDA build, no driver:  "no CUDA device: CUDA driver version is
#                            insufficient for CUDA runtime version"
#   CUDA build, a driver:   devices hidden with CUDA_VISIBLE_DEVICES="",
#                           "no CUDA device: ..." (the runtime's reason)
#   build without CUDA:     "... built without ... CUDA ..."
# No skip: punch-train always chooses its backend from the job
# (device/device.c), and a guard reading the binary's symbol table would
# skip forever on a stripped binary.
set -euo pipefail

punch_train=$1
cuda_built=$2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/job.json" <<'JSON'
{
  "name": "gpu-no-device",
  "model": {"input": [8], "layers": [{"type": "dense", "units": 4, "activation": "softmax"}]},
  "data": {"format": "synthetic", "synthetic_train": 64, "synthetic_test": 16,
           "num_classes": 4},
  "training": {"epochs": 1, "batch_size": 16, "loss": "categorical_crossentropy",
               "optimizer": {"name": "sgd"}, "seed": 1},
  "resources": {"gpus": 1}
}
JSON

if [ "$cuda_built" = cuda ]; then
  if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    export CUDA_VISIBLE_DEVICES=
    expect_re='^(punch-train: )?.*no CUDA device: .+$'
  else
    expect_re='^(punch-train: )?.*no CUDA device: CUDA driver version is insufficient for CUDA runtime version$'
  fi
else
  expect_re='^(punch-train: )?.*built without.*CUDA.*$'
fi

set +e
timeout 60 "$punch_train" "$tmp/job.json" --out "$tmp/run" >"$tmp/stdout" 2>"$tmp/stderr"
status=$?
set -e

fail() {
  echo "FAIL: $*"
  echo "--- exit status: $status"
  echo "--- stderr:"; cat "$tmp/stderr"
  echo "--- stdout:"; cat "$tmp/stdout"
  exit 1
}

[ "$status" -ne 0 ] || fail "punch-train succeeded on a GPU job without a usable GPU"
[ "$status" -lt 124 ] || fail "punch-train timed out or died from a signal"
[ "$(wc -l < "$tmp/stderr")" -eq 1 ] || fail "expected exactly one line on stderr"
grep -Eq "$expect_re" "$tmp/stderr" || fail "stderr does not match /$expect_re/"
if [ -e "$tmp/run/weights.safetensors" ] || [ -e "$tmp/run/history.json" ]; then
  fail "punch-train trained anyway (silent CPU fall-back)"
fi
echo "ok: $(cat "$tmp/stderr")"
