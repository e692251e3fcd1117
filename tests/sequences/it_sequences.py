"""it_sequences.py — sequence models end to end through a real punchcardd
and punch-train (issue 28).

Language identification from raw bytes on Debian's fortunes (en, de, es,
it; scripts/fortunes-langid): an upload of int32 token ids [N, T] with 0 as
padding trains an embedding -> LSTM classifier, a GRU, a bidirectional LSTM
and conv1d + global max pooling, each to the accuracy PyTorch reaches on the
same arrays (scripts/bench_torch_seq.py, figures in docs/performance.md,
less 0.03; 16 epochs, a few seconds each); an allreduce run on two ranks trains the LSTM too; predictions
on raw token ids (with and without their padding) reproduce the job's own
test accuracy; a transformer encoder block written as layers classifies as
well as the LSTM does.

The CNTK notebook's model (the cntk_lstm preset) trains on its CTF format
(a synthetic task: which of five marker ids a word sequence holds) to 0.95.

Under the sanitizer build (PUNCH_SEQ_QUICK=1) only the LSTM and the
predictions run, on fewer samples, with a loose bound: the point there is
memory safety, not accuracy.

Skips (77) without the fortunes packages or numpy."""
import io
import os
import subprocess
import sys

import punchtest
from punchtest import Daemon, check, require

np = punchtest.require_numpy()

QUICK = os.environ.get("PUNCH_SEQ_QUICK") == "1"
STEPS = 64
EPOCHS = 2 if QUICK else 16
# PyTorch 1.13's test accuracy on the same arrays with the same model,
# initial-weight scheme and settings (scripts/bench_torch_seq.py --emb 16
# --units 32 --filters 32 --epochs 16 --lr 0.002, seeds 1 and 2, their
# mean; 2026-11-27, docs/performance.md): each model must reach it less 0.03.
# punch-train's own seeds 1-3 gave lstm 0.920-0.932, gru 0.935-0.939,
# bilstm 0.911-0.934, conv1d 0.980-0.987 on the machine these came from.
TORCH_ACCURACY = {"lstm": 0.922, "gru": 0.932, "bilstm": 0.922, "conv1d": 0.984}


def langid_npz(tmp, per_lang_train, per_lang_test):
    """The fortunes language-id arrays, made by the script users run."""
    out = os.path.join(tmp, "langid.npz")
    script = punchtest.source_path("scripts", "fortunes-langid")
    proc = subprocess.run([sys.executable, script, out, "--steps", str(STEPS), "--train",
                           str(per_lang_train), "--test", str(per_lang_test)],
                          capture_output=True, text=True)
    if proc.returncode != 0 and "install the packages" in proc.stderr:
        punchtest.skip(proc.stderr.strip())
    require(proc.returncode == 0, "fortunes-langid: %s" % proc.stderr)
    return out


def body(kind):
    """The layers between the embedding and the classifier."""
    return {
        "lstm": [{"type": "lstm", "units": 32}],
        "gru": [{"type": "gru", "units": 32}],
        "bilstm": [{"type": "bidirectional", "layer": {"type": "lstm", "units": 16}}],
        "conv1d": [{"type": "conv1d", "filters": 32, "kernel_size": 5, "padding": "same",
                    "activation": "relu"}, {"type": "global_maxpool1d"}],
        # A pre-LayerNorm transformer encoder block written as layers
        # (issue 29); indices count from the embedding, layer 0.
        "encoder": [{"type": "positional_embedding"}, {"type": "layer_norm"},
                    {"type": "multi_head_attention", "heads": 2},
                    {"type": "add", "inputs": [1, 3]}, {"type": "layer_norm"},
                    {"type": "dense", "units": 64, "activation": "gelu"},
                    {"type": "dense", "units": 16}, {"type": "add", "inputs": [4, 7]},
                    {"type": "global_avgpool1d"}],
    }[kind]


def job(kind, epochs=EPOCHS, **distributed):
    spec = {"name": "langid-" + kind,
            "model": {"input": {"tokens": 256}, "layers": [
                {"type": "embedding", "output_dim": 16}] + body(kind) + [
                {"type": "dense", "units": 4, "activation": "softmax"}]},
            "data": {"format": "npz", "train": "@langid", "test": "@langid",
                     "num_classes": 4, "max_length": STEPS},
            "training": {"epochs": epochs, "batch_size": 32, "metrics": ["accuracy"],
                         "optimizer": {"name": "adam", "learning_rate": 0.002}, "seed": 1}}
    if distributed:
        spec["distributed"] = distributed
    return spec


def upload(d, path):
    with open(path, "rb") as f:
        r = d.req("PUT", "/api/v1/datasets/langid", "alice", body=f.read(),
                  headers={"Content-Type": "application/octet-stream"})
    require(r.status_code == 201, "upload: %d %s" % (r.status_code, r.text[:300]))


def train(d, kind, epochs=EPOCHS, **distributed):
    jid = d.submit_id("alice", job(kind, epochs, **distributed))
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=400)
    require(end["state"] == "succeeded", "%s: %s\n%s" % (kind, end, d.train_log(jid)))
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    return jid, hist


def accuracy(d, kind, **distributed):
    jid, hist = train(d, kind, **distributed)
    acc = hist["test"]["accuracy"]
    want = TORCH_ACCURACY[kind] - 0.03
    check(acc >= want, "%s: test accuracy %.4f, PyTorch %.4f" % (kind, acc,
                                                                 TORCH_ACCURACY[kind]))
    print("%s%s: test accuracy %.4f (PyTorch %.4f)" % (
        kind, " allreduce" if distributed else "", acc, TORCH_ACCURACY[kind]))
    return jid


def predictions(d, jid, npz):
    """Token ids in, class probabilities out: argmax accuracy equals the
    job's test accuracy, and cutting the padding off changes nothing."""
    data = np.load(npz)
    xt, yt = data["x_test"], data["y_test"]
    buf = io.BytesIO()
    np.save(buf, xt)
    r = d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice", body=buf.getvalue(),
              headers={"Content-Type": "application/octet-stream"})
    require(r.status_code == 200, "predict: %d %s" % (r.status_code, r.text[:300]))
    p = np.load(io.BytesIO(r.content))
    check(p.shape == (len(xt), 4), p.shape)
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    acc = float((p.argmax(axis=1) == yt).mean())
    check(abs(acc - hist["test"]["accuracy"]) < 1e-9,
          "predicted accuracy %.4f vs the job's test accuracy %.4f"
          % (acc, hist["test"]["accuracy"]))
    short = xt[:, : STEPS // 2].astype(np.int64)
    buf = io.BytesIO()
    np.save(buf, short)
    r = d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice", body=buf.getvalue())
    require(r.status_code == 200, "predict int64, %d steps: %d %s"
            % (STEPS // 2, r.status_code, r.text[:300]))
    q = np.load(io.BytesIO(r.content))
    full = np.concatenate([short, np.zeros((len(short), STEPS - STEPS // 2), np.int64)], 1)
    buf = io.BytesIO()
    np.save(buf, full)
    r = d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice", body=buf.getvalue())
    require(r.status_code == 200, r.text[:300])
    check(np.array_equal(q, np.load(io.BytesIO(r.content))),
          "a shorter array and the same ids zero-padded give the same outputs")


def ctf_text(n, seed, vocab=50, markers=5):
    """The CNTK notebook's format (`SEQID |x ID:1 |y one-hot` on a
    sequence's first line, `SEQID |x ID:1` after): random word sequences
    of 5-20 ids, each holding one marker id (1..markers) whose index is the
    label; the other ids are above the markers."""
    rng = np.random.default_rng(seed)
    lines = []
    for s in range(n):
        label = int(rng.integers(0, markers))
        ids = rng.integers(markers + 1, vocab, size=int(rng.integers(5, 21)))
        ids[int(rng.integers(0, len(ids)))] = label + 1
        onehot = " ".join("1" if k == label else "0" for k in range(markers))
        for t, i in enumerate(ids):
            lines.append("%d |x %d:1%s" % (s, i, " |y " + onehot if t == 0 else ""))
    return ("\n".join(lines) + "\n").encode()


def cntk_notebook(d):
    """The seed notebook's model (cntk_lstm: LSTM(20) on the sparse one-hot
    ids, its last step, a dense layer) on its format, uploaded as CTF."""
    for name, n, seed in (("words.ctf", 1500, 1), ("words-test.ctf", 300, 2)):
        r = d.req("PUT", "/api/v1/datasets/" + name, "alice", body=ctf_text(n, seed),
                  headers={"Content-Type": "application/octet-stream"})
        require(r.status_code == 201, "upload %s: %d %s" % (name, r.status_code, r.text[:300]))
    spec = {"name": "cntk-notebook", "model": {"preset": "cntk_lstm", "input": {"tokens": 50}},
            "data": {"format": "ctf", "train": "@words.ctf", "test": "@words-test.ctf",
                     "num_classes": 5, "max_length": 20},
            "training": {"epochs": 2 if QUICK else 10, "batch_size": 32,
                         "metrics": ["accuracy"],
                         "optimizer": {"name": "adam", "learning_rate": 0.01}, "seed": 1}}
    jid = d.submit_id("alice", spec)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=300)
    require(end["state"] == "succeeded", "%s\n%s" % (end, d.train_log(jid)))
    acc = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()["test"]["accuracy"]
    print("cntk_lstm on CTF: test accuracy %.4f" % acc)
    if not QUICK:
        check(acc >= 0.95, "which marker a sequence holds: test accuracy %.4f" % acc)


def quick(d, npz):
    jid, _ = train(d, "lstm")
    predictions(d, jid, npz)


def lstm_and_predictions(d, npz, seen):
    jid = accuracy(d, "lstm")
    seen["lstm"] = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    predictions(d, jid, npz)


def encoder(d, seen):
    """The encoder written as layers classifies as well as the LSTM in this
    run does (less 0.02), in 8 epochs (0.918 measured, the LSTM 0.92-0.93)."""
    require("lstm" in seen, "the LSTM case did not run")
    _, hist = train(d, "encoder", epochs=8)
    acc, lstm = hist["test"]["accuracy"], seen["lstm"]["test"]["accuracy"]
    print("encoder: test accuracy %.4f (the LSTM %.4f)" % (acc, lstm))
    check(acc >= lstm - 0.02, "encoder: test accuracy %.4f, the LSTM %.4f" % (acc, lstm))


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "2", "--predict-max", "1000000"]) as d:
        npz = langid_npz(d.tmp, 150 if QUICK else 1000, 50 if QUICK else 250)
        punchtest.case("upload token ids", upload, d, npz)
        punchtest.case("the CNTK notebook's model on its CTF format", cntk_notebook, d)
        if QUICK:
            punchtest.case("an lstm trains; predictions on token ids", quick, d, npz)
            return
        seen = {}
        punchtest.case("lstm to PyTorch's accuracy; predictions on token ids",
                       lstm_and_predictions, d, npz, seen)
        punchtest.case("a transformer encoder as layers as well as the lstm", encoder, d, seen)
        for kind in ("gru", "bilstm", "conv1d"):
            punchtest.case(kind + " to PyTorch's accuracy", accuracy, d, kind)
        punchtest.case("allreduce on 2 ranks", accuracy, d, "lstm", trainer="allreduce",
                       workers=2)


if __name__ == "__main__":
    punchtest.main(cases)
