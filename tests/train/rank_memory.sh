#!/usr/bin/env bash
# rank_memory.sh PUNCH_TRAIN SANITIZE — PUNCH_RANK_MEMORY_MAX (the share of
# a job's memory ceiling punchcardd gives every rank, engine/train/memlimit.h)
# bounds punch-train's data memory wherever it runs: a job whose training
# set alone needs 3.1 GB ends with an allocation error under a 1.5 GB limit
# (an exit status, not the OOM killer's signal), the same limit leaves a
# small job alone, and a malformed value is refused before any work. (The
# limit counts the libraries' writable segments and OpenBLAS's buffers
# too, some 330 MB in a CUDA build: below that a rank cannot start.)
# Skips in AddressSanitizer builds, where the limit is not applied.
set -euo pipefail
punch_train=$1
if [[ $2 == *address* ]]; then
  echo "SKIP: AddressSanitizer's shadow memory counts as data; the limit is not applied there"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
job() {   # job FILE TRAIN_SAMPLES
  cat > "$1" <<JSON
{"name": "memlimit", "model": {"input": [784], "layers": [{"type": "dense", "units": 10, "activation": "softmax"}]},
 "data": {"format": "synthetic", "synthetic_train": $2, "synthetic_test": 64, "num_classes": 10},
 "training": {"epochs": 1, "batch_size": 64, "loss": "categorical_crossentropy",
              "optimizer": {"name": "sgd"}, "seed": 1, "steps_per_epoch": 2}}
JSON
}
fail() { echo "FAIL: $*"; echo "--- stderr:"; cat "$tmp/err"; exit 1; }

job "$tmp/big.json" 1000000
set +e
PUNCH_RANK_MEMORY_MAX=1500000000 timeout -s KILL 60 "$punch_train" "$tmp/big.json" --out "$tmp/big" \
  > /dev/null 2> "$tmp/err"
rc=$?
set -e
[ $rc -ne 0 ] || fail "a 3.1 GB training set was loaded under a 1.5 GB limit"
[ $rc -lt 124 ] || fail "ended by a signal or the timeout (exit $rc), not by its own error"
grep -qi "memory" "$tmp/err" || fail "the error does not say memory"
echo "ok: over the limit: exit $rc: $(head -1 "$tmp/err")"

job "$tmp/small.json" 512
PUNCH_RANK_MEMORY_MAX=1500000000 timeout -s KILL 60 "$punch_train" "$tmp/small.json" --out "$tmp/small" \
  > /dev/null 2> "$tmp/err" || fail "a small job failed under a 1.5 GB limit"
[ -s "$tmp/small/weights.safetensors" ] || fail "no weights from the small job"
echo "ok: a small job trains under the same limit"

set +e
PUNCH_RANK_MEMORY_MAX=lots "$punch_train" "$tmp/small.json" --out "$tmp/bad" > /dev/null 2> "$tmp/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "a malformed PUNCH_RANK_MEMORY_MAX gave exit $rc, not 2"
grep -q "PUNCH_RANK_MEMORY_MAX" "$tmp/err" || fail "the error does not name the variable"
echo "ok: malformed value refused: $(cat "$tmp/err")"
