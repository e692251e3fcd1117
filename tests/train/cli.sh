#!/usr/bin/env bash
# cli.sh PUNCH_TRAIN — punch-train's command line: exit codes and one-line
# errors (bad data named by file and record, a bad environment knob), the summary and per-epoch lines, --evaluate-only agreeing with
# the run's own test figures, and SIGTERM mid-run followed by --resume
# reaching the same weights and history as an uninterrupted run.
set -u
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_exit CODE NAME CMD...: exit status and, for errors, one stderr line.
expect_exit() {
  local want=$1 name=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  if [ "$code" -ne "$want" ]; then
    fail "$name: exit $code, want $want; stderr: $(cat "$tmp/err")"; return
  fi
  if [ "$want" -ne 0 ]; then
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: want one stderr line, got: $(cat "$tmp/err")"
    grep -q '^punch-train: ' "$tmp/err" || fail "$name: no 'punch-train:' prefix: $(cat "$tmp/err")"
  fi
  echo "ok: $name (exit $code) $(head -c 150 "$tmp/err")"
}

job() { # job FILE EPOCHS [extra training fields]
  cat >"$1" <<JSON
{"name": "cli", "model": {"input": [12], "layers": [
   {"type": "dense", "units": 16, "activation": "tanh"}, {"type": "dropout", "rate": 0.2},
   {"type": "dense", "units": 3, "activation": "softmax"}]},
 "data": {"format": "synthetic", "synthetic_train": 4000, "synthetic_test": 300, "num_classes": 3,
          "validation_split": 0.1},
 "training": {"epochs": $2, "batch_size": 8, "optimizer": {"name": "sgd", "momentum": 0.9},
              "seed": 9 $3}}
JSON
}

job "$tmp/job.json" 3 ""
expect_exit 0 "--help" "$exe" --help
expect_exit 2 "no arguments" "$exe"
expect_exit 2 "unknown option" "$exe" "$tmp/job.json" --out "$tmp/x" --bogus
expect_exit 2 "missing --out" "$exe" "$tmp/job.json"
expect_exit 2 "bad --threads" "$exe" "$tmp/job.json" --out "$tmp/x" --threads 0
expect_exit 2 "--weights without --evaluate-only" "$exe" "$tmp/job.json" --out "$tmp/x" --weights w
echo '{"model": "mlp", "data": {"format": "idx", "train": "fashion-mnist/train"}, "training": {"epochs": -1}}' >"$tmp/bad.json"
expect_exit 2 "invalid spec" "$exe" "$tmp/bad.json" --out "$tmp/x"
grep -q 'training.epochs' "$tmp/err" || fail "invalid spec: error does not name training.epochs"
expect_exit 0 "--validate" "$exe" --validate "$tmp/job.json"
cat >"$tmp/nodata.json" <<'JSON'
{"model": "mlp", "data": {"format": "idx", "train": "no-such-set/train"}}
JSON
expect_exit 1 "missing dataset" "$exe" "$tmp/nodata.json" --out "$tmp/nodata" --datasets "$tmp"
OMPI_COMM_WORLD_SIZE=2 expect_exit 2 "single trainer on 2 ranks" "$exe" "$tmp/job.json" --out "$tmp/x"
PMI_SIZE=3 expect_exit 2 "single trainer on 3 MPICH ranks" \
  "$exe" "$tmp/job.json" --out "$tmp/x"
# The environment's knobs are checked once, before any work.
PUNCH_DIST_EXCHANGE_MB=lots expect_exit 2 "bad PUNCH_DIST_EXCHANGE_MB" \
  "$exe" "$tmp/job.json" --out "$tmp/x"
grep -q 'PUNCH_DIST_EXCHANGE_MB: must be a positive number' "$tmp/err" ||
  fail "bad knob: $(cat "$tmp/err")"
[ ! -e "$tmp/x" ] || fail "bad knob: the run directory was created"

# Bad data: exit 1 and one line naming the file and the record.
mkdir -p "$tmp/ds/bad"
# IDX images header: magic 0x803, 3 images of 2x2, but the bytes of only 2.
printf '\x00\x00\x08\x03\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00\x02' \
  >"$tmp/ds/bad/train-images-idx3-ubyte"
printf '\x01\x02\x03\x04\x05\x06\x07\x08' >>"$tmp/ds/bad/train-images-idx3-ubyte"
printf '\x00\x00\x08\x01\x00\x00\x00\x03\x00\x01\x02' >"$tmp/ds/bad/train-labels-idx1-ubyte"
cat >"$tmp/badidx.json" <<'JSON'
{"model": {"input": [1, 2, 2], "layers": [{"type": "flatten"},
   {"type": "dense", "units": 3, "activation": "softmax"}]},
 "data": {"format": "idx", "train": "bad/train", "num_classes": 3}}
JSON
expect_exit 1 "truncated IDX images" "$exe" "$tmp/badidx.json" --out "$tmp/badidx" --datasets "$tmp/ds"
grep -q '^punch-train: .*train-images-idx3-ubyte: truncated after 2 of 3 images$' "$tmp/err" ||
  fail "truncated IDX: want 'train-images-idx3-ubyte: truncated after 2 of 3 images': $(cat "$tmp/err")"
# CSV, label first then 4 features; line 3 has 3.
printf '0,1,2,3,4\n1,5,6,7,8\n2,9,10,11\n0,1,1,1,1\n' >"$tmp/ds/bad/data.csv"
cat >"$tmp/badcsv.json" <<'JSON'
{"model": {"input": [4], "layers": [{"type": "dense", "units": 3, "activation": "softmax"}]},
 "data": {"format": "csv", "train": "bad/data.csv", "num_classes": 3}}
JSON
expect_exit 1 "CSV with a short row" "$exe" "$tmp/badcsv.json" --out "$tmp/badcsv" --datasets "$tmp/ds"
grep -q '^punch-train: .*data.csv:3: 3 features, expected 4$' "$tmp/err" ||
  fail "bad CSV: want 'data.csv:3: 3 features, expected 4': $(cat "$tmp/err")"

# Dataset roots: names resolve under the --datasets roots and nowhere else.
csvjob() { # csvjob FILE NAME: the 4-feature CSV job reading dataset NAME
  printf '{"model": {"input": [4], "layers": [{"type": "dense", "units": 3, "activation": "softmax"}]}, "data": {"format": "csv", "train": "%s", "num_classes": 3}, "training": {"epochs": 1}}\n' "$2" >"$1"
}
mkdir -p "$tmp/outside"
printf '0,1,2,3,4\n1,5,6,7,8\n2,9,10,11,12\n' >"$tmp/outside/good.csv"
csvjob "$tmp/dotdot.json" "../../etc/passwd"
expect_exit 2 "dataset name with .." "$exe" "$tmp/dotdot.json" --out "$tmp/r" --datasets "$tmp/ds"
grep -q 'data.train: dataset name "../../etc/passwd" contains ".."' "$tmp/err" || fail "..: $(cat "$tmp/err")"
csvjob "$tmp/abs.json" "$tmp/outside/good.csv"
expect_exit 2 "absolute dataset path" "$exe" "$tmp/abs.json" --out "$tmp/r" --datasets "$tmp/ds"
grep -q 'data.train: dataset name ".*" is an absolute path' "$tmp/err" || fail "absolute: $(cat "$tmp/err")"
# good.csv exists, but in no root: not found, and the message lists the roots.
csvjob "$tmp/good.json" "good"
expect_exit 1 "dataset outside the roots" "$exe" "$tmp/good.json" --out "$tmp/r" --datasets "$tmp/ds"
grep -qF "not found: looked for good[.csv][.gz] under $tmp/ds" "$tmp/err" || fail "outside: $(cat "$tmp/err")"
# A symlink planted in a root does not lead out of it.
ln -s "$tmp/outside/good.csv" "$tmp/ds/evil.csv"
csvjob "$tmp/evil.json" "evil"
expect_exit 1 "symlink out of the root" "$exe" "$tmp/evil.json" --out "$tmp/r" --datasets "$tmp/ds"
grep -q 'dataset "evil": evil.csv leads outside the dataset root' "$tmp/err" || fail "symlink: $(cat "$tmp/err")"
# The same file under a root trains; without --datasets the roots are
# /usr/share/datasets then $PUNCH_DATASETS, which --datasets replaces.
expect_exit 0 "dataset under --datasets" "$exe" "$tmp/good.json" --out "$tmp/r" --datasets "$tmp/ds:$tmp/outside"
PUNCH_DATASETS="$tmp/ds:$tmp/outside" expect_exit 0 "dataset under \$PUNCH_DATASETS" \
  "$exe" "$tmp/good.json" --out "$tmp/r"
PUNCH_DATASETS="$tmp/outside" expect_exit 1 "--datasets replaces \$PUNCH_DATASETS" \
  "$exe" "$tmp/good.json" --out "$tmp/r" --datasets "$tmp/ds"
expect_exit 2 "more than 16 roots" "$exe" "$tmp/good.json" --out "$tmp/r" \
  --datasets "$(printf '/d%d:' $(seq 1 17))"

# A whole run: summary on stdout, one line per epoch on stderr.
expect_exit 0 "train" "$exe" "$tmp/job.json" --out "$tmp/run" --threads 2
grep -q 'Trainable params' "$tmp/out" || fail "train: no summary on stdout"
[ "$(grep -c '^epoch [0-9]/3 ' "$tmp/err")" -eq 3 ] || fail "train: want 3 epoch lines: $(cat "$tmp/err")"
test_acc=$(sed -n 's/.*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$tmp/run/progress.jsonl")
[ -n "$test_acc" ] || fail "train: no test_accuracy in the end event"

expect_exit 0 "--evaluate-only" "$exe" "$tmp/job.json" --out "$tmp/eval" --threads 2 \
  --evaluate-only --weights "$tmp/run/weights.safetensors"
eval_acc=$(sed -n 's/.*"test":{[^}]*"accuracy":\([0-9.e-]*\).*/\1/p' "$tmp/out")
[ "$eval_acc" = "$test_acc" ] || fail "--evaluate-only accuracy $eval_acc != run's $test_acc"

# SIGTERM mid-run, then --resume: the same weights and history as an
# uninterrupted run. The signal goes out as soon as the "start" event shows
# that training began (the handler is installed before it), and the job is
# long enough that it is still training then: 2 x 675 batches of 8 through
# 256-wide layers take about half a second here, and the signal lands
# within the first fifth of them. A run that was not actually interrupted
# fails the test instead of comparing two whole runs. test_train.c
# interrupts at exact steps; this checks the real signal path end to end.
cat >"$tmp/long.json" <<'JSON'
{"name": "cli-resume", "model": {"input": [256], "layers": [
   {"type": "dense", "units": 256, "activation": "tanh"}, {"type": "dropout", "rate": 0.2},
   {"type": "dense", "units": 256, "activation": "tanh"},
   {"type": "dense", "units": 3, "activation": "softmax"}]},
 "data": {"format": "synthetic", "synthetic_train": 6000, "synthetic_test": 300,
          "num_classes": 3, "validation_split": 0.1},
 "training": {"epochs": 2, "batch_size": 8, "optimizer": {"name": "sgd", "momentum": 0.9},
              "seed": 9}}
JSON
"$exe" "$tmp/long.json" --out "$tmp/full" --threads 2 >/dev/null 2>&1 || fail "uninterrupted run failed"
"$exe" "$tmp/long.json" --out "$tmp/cut" --threads 2 >/dev/null 2>"$tmp/cut.err" &
pid=$!
for _ in $(seq 1 3000); do
  grep -q '"event":"start"' "$tmp/cut/progress.jsonl" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
code=$?
if [ "$code" -eq 1 ] && grep -q '^punch-train: interrupted by SIGTERM at epoch [12] step [0-9]*; checkpoint saved' "$tmp/cut.err"; then
  echo "ok: interrupted: $(cat "$tmp/cut.err")"
  "$exe" "$tmp/long.json" --out "$tmp/cut" --threads 2 --resume >/dev/null 2>&1 || fail "--resume failed"
  cmp -s "$tmp/full/weights.safetensors" "$tmp/cut/weights.safetensors" ||
    fail "resumed weights differ from the uninterrupted run's"
  # Per-epoch series (loss ... lr: everything before the timings) and the test figures.
  for f in full cut; do
    sed -n '1,/"epoch_time_s"/p; /"test"/,/}/p' "$tmp/$f/history.json" >"$tmp/$f.hist"
  done
  grep -q '"loss"' "$tmp/full.hist" && cmp -s "$tmp/full.hist" "$tmp/cut.hist" ||
    fail "resumed history differs: $(diff "$tmp/full.hist" "$tmp/cut.hist" | head -5)"
  grep -q '"resumed":true' "$tmp/cut/progress.jsonl" || fail "resumed run did not log a resumed start"
else
  fail "SIGTERM did not interrupt the run (exit $code): $(cat "$tmp/cut.err")"
fi

[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "all ok"
