"""it_seq_steps.py — a label per step (data.per_step_labels, issue 28)
through punch-train: a character language model on data.format "text" (a
few KB of Debian's fortunes) whose loss falls well below the text's
unigram entropy, on one rank and with allreduce on two; its loss at the
first epoch's weights against PyTorch's CrossEntropyLoss on the same
weights and windows; a tagger (the bilstm_tagger preset) on npz
per-step labels with padding, whose --predict output [N, T, C] reproduces
its test accuracy over real steps.

Skips (77) without numpy or the fortunes package."""
import os
import subprocess
import tempfile

import punchtest
from punchtest import check, read_json, require

np = punchtest.require_numpy()
ENGINE = punchtest.engine_path()
FORTUNES = "/usr/share/games/fortunes/fortunes"
QUICK = os.environ.get("PUNCH_SEQ_QUICK") == "1"
BLOCK = 32


def fortunes_text(nbytes):
    if not os.path.exists(FORTUNES):
        punchtest.skip("no %s (install the fortunes-min package)" % FORTUNES)
    with open(FORTUNES, "rb") as f:
        raw = f.read(nbytes)
    return raw[: raw.rfind(b"\n") + 1].decode("utf-8", "replace").encode()


def unigram_entropy(data):
    counts = np.bincount(np.frombuffer(data, np.uint8), minlength=256).astype(np.float64)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def lm_job(epochs, **distributed):
    spec = {"name": "char-lm",
            "model": {"input": {"tokens": 256}, "layers": [
                {"type": "embedding", "output_dim": 16},
                {"type": "lstm", "units": 64, "return_sequences": True},
                {"type": "dense", "units": 256, "activation": "softmax"}]},
            "data": {"format": "text", "train": "fortunes", "test": "fortunes",
                     "max_length": BLOCK},
            "training": {"epochs": epochs, "batch_size": 8, "metrics": ["accuracy"],
                         "optimizer": {"name": "adam", "learning_rate": 0.02}, "seed": 3}}
    if distributed:
        spec["distributed"] = distributed
    return spec


def run(tmp, name, spec, ranks=None, *extra):
    path = punchtest.write_json(os.path.join(tmp, name + ".json"), spec)
    out = os.path.join(tmp, name)
    if ranks is None and extra:
        p = subprocess.run([ENGINE, path, "--out", out, "--datasets", tmp] + list(extra),
                           capture_output=True, text=True, timeout=120)
        require(p.returncode == 0, "%s: %s" % (name, p.stderr[-2000:]))
        return out
    punchtest.train(ENGINE, path, out, ranks, datasets=tmp)
    return out


def char_lm(tmp, text, ranks=None, **distributed):
    """The training loss (nats per real step) falls below 0.75 x the
    unigram entropy (12 epochs of 250 windows: 0.60 measured on one rank,
    0.68 on two with allreduce, whose global batch is twice as large)."""
    name = "lm-%s" % (distributed.get("trainer", "single"))
    epochs = 3 if QUICK else 12
    out = run(tmp, name, lm_job(epochs, **distributed), ranks)
    hist = read_json(os.path.join(out, "history.json"))
    h = unigram_entropy(text)
    loss = hist["loss"]
    print("%s: loss %s nats per step, unigram entropy %.3f, accuracy %.3f" % (
        name, " ".join("%.3f" % v for v in loss), h, hist["accuracy"][-1]))
    check(loss[-1] < loss[0], "%s: loss did not fall: %s" % (name, loss))
    if not QUICK:
        check(loss[-1] < 0.75 * h, "%s: loss %.3f not below 0.75 x unigram entropy %.3f"
              % (name, loss[-1], h))
    return out


def torch_loss(tmp, text):
    """The trained weights scored by PyTorch on the same windows:
    CrossEntropyLoss (the mean over steps) equals the job's test loss."""
    try:
        import torch
    except ImportError:
        print("no torch: the comparison is skipped")
        return
    out = os.path.join(tmp, "lm-single")
    hist = read_json(os.path.join(out, "history.json"))
    w = np.load(os.path.join(out, "weights.npz"))
    emb = torch.tensor(w["0.embedding.embeddings"])
    lstm = torch.nn.LSTM(16, 64, batch_first=True)
    with torch.no_grad():
        # Keras's kernels [in, 4U] and gate order (i, f, c, o) are PyTorch's
        # weight_ih [4U, in] transposed with (i, f, g, o): the same order.
        lstm.weight_ih_l0.copy_(torch.tensor(w["1.lstm.kernel"]).T)
        lstm.weight_hh_l0.copy_(torch.tensor(w["1.lstm.recurrent_kernel"]).T)
        lstm.bias_ih_l0.copy_(torch.tensor(w["1.lstm.bias"]))
        lstm.bias_hh_l0.zero_()
    dw = torch.tensor(w["2.dense.weight"])
    db = torch.tensor(w["2.dense.bias"])
    ids = np.frombuffer(text, np.uint8).astype(np.int64)
    n = (len(ids) - 1) // BLOCK
    x = torch.tensor(ids[: n * BLOCK].reshape(n, BLOCK))
    y = torch.tensor(ids[1: n * BLOCK + 1].reshape(n, BLOCK))
    with torch.no_grad():
        h, _ = lstm(emb[x])
        logits = h @ dw + db
        ref = float(torch.nn.functional.cross_entropy(logits.reshape(-1, 256), y.reshape(-1)))
    got = hist["test"]["loss"]
    print("test: punch-train loss %.6f, PyTorch CrossEntropyLoss %.6f" % (got, ref))
    check(abs(got - ref) < 1e-4 * ref, "loss %.6f vs PyTorch %.6f" % (got, ref))


def tag_data(n, steps, vocab, seed):
    """Token ids 1..vocab-1 with 0 as padding (lengths 4..steps); the tag at
    a step is the previous token's id mod 3 (0 at the first step): it needs
    the context, not only the step's own token."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, steps), np.int32)
    y = np.zeros((n, steps), np.int32)
    for i in range(n):
        k = int(rng.integers(4, steps + 1))
        x[i, :k] = rng.integers(1, vocab, size=k)
        y[i, 1:k] = x[i, : k - 1] % 3
    return x, y


def tagger(tmp):
    steps, vocab = 16, 20
    x, y = tag_data(600, steps, vocab, 1)
    xt, yt = tag_data(150, steps, vocab, 2)
    np.savez(os.path.join(tmp, "tags.npz"), x_train=x, y_train=y, x_test=xt, y_test=yt)
    spec = {"name": "tagger", "model": {"preset": "bilstm_tagger", "input": {"tokens": vocab}},
            "data": {"format": "npz", "train": "tags", "test": "tags", "num_classes": 3,
                     "max_length": steps, "per_step_labels": True},
            "training": {"epochs": 2 if QUICK else 4, "batch_size": 32,
                         "metrics": ["accuracy"],
                         "optimizer": {"name": "adam", "learning_rate": 0.01}, "seed": 1}}
    out = run(tmp, "tagger", spec)
    hist = read_json(os.path.join(out, "history.json"))
    acc = hist["test"]["accuracy"]
    print("bilstm_tagger: test accuracy over real steps %.4f" % acc)
    if not QUICK:
        check(acc > 0.9, "tagger test accuracy %.4f" % acc)
    np.save(os.path.join(tmp, "tags_in.npy"), xt)
    pred_dir = run(tmp, "tagger-predict", spec, None, "--weights",
                   os.path.join(out, "weights.safetensors"), "--predict",
                   os.path.join(tmp, "tags_in.npy"))
    p = np.load(os.path.join(pred_dir, "predictions.npy"))
    check(p.shape == (len(xt), steps, 3), "predictions %s" % (p.shape,))
    real = xt != 0
    check(np.all(p[~real] == 0) and np.allclose(p[real].sum(axis=1), 1, atol=1e-5),
          "probabilities at real steps, zeros at padding")
    pacc = float((p.argmax(axis=2) == yt)[real].mean())
    check(abs(pacc - acc) < 1e-9, "predicted accuracy %.6f vs the job's %.6f" % (pacc, acc))
    # A predict task on an npz whose len_test gives the lengths: the steps
    # past them hold junk ids, never read (the same predictions bit for bit).
    rng = np.random.default_rng(5)
    junk = np.where(real, xt, rng.integers(1, vocab, size=xt.shape)).astype(np.int32)
    np.savez(os.path.join(tmp, "tags_len.npz"), x_test=junk, len_test=real.sum(axis=1))
    task = dict(spec, task="predict", data=dict(spec["data"], test="tags_len"))
    del task["data"]["train"]
    task["training"] = dict(spec["training"], init_from={
        "dataset": "@" + os.path.join(out, "weights.safetensors")})
    task_dir = run(tmp, "tagger-task", task)
    q = np.load(os.path.join(task_dir, "predictions.npy"))
    check(np.array_equal(q, p), "predict task with len_test differs from --predict's output")


def cases():
    punchtest.require_engine()
    with tempfile.TemporaryDirectory() as tmp:
        text = fortunes_text(3000 if QUICK else 8000)
        with open(os.path.join(tmp, "fortunes.txt"), "wb") as f:
            f.write(text)
        punchtest.case("char LM on text below the unigram entropy", char_lm, tmp, text)
        punchtest.case("char LM with allreduce on 2 ranks", char_lm, tmp, text, 2,
                       trainer="allreduce", workers=2)
        if not QUICK:
            punchtest.case("per-step loss equals PyTorch's on the same weights",
                           torch_loss, tmp, text)
        punchtest.case("bilstm_tagger on npz per-step labels; --predict [N, T, C]",
                       tagger, tmp)


if __name__ == "__main__":
    punchtest.main(cases)
