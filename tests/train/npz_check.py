#!/usr/bin/python3
"""npz_check.py PUNCH_TRAIN — data.format "npz" in the engine, with files
numpy writes: the same samples train to the same weights whatever the
archive's form (savez or savez_compressed, x/y or x_train/y_train, class
ids or one-hot labels, uint8 or float64 inputs, channels first or last);
x/y pairs that do not fit and bad labels fail naming the file, the array
and the record; --predict on raw inputs reproduces the test accuracy; and
training.init_from starts from saved weights or names the tensor whose
shape differs; float y under training.loss mse are regression targets
(a linear map trains to the noise's mse) and are refused, naming the
field, under a classification loss. Skips (77) without numpy."""
import os
import subprocess
import sys
import tempfile

import punchtest
from punchtest import check

np = punchtest.require_numpy()
EXE = sys.argv[1]


def learnable(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, size=n)
    x = rng.integers(0, 100, size=(n, 4, 4)).astype(np.uint8)
    x[np.arange(n), y, :] += 150
    return x, y


def job(train, test=None, epochs=2, input_=(1, 4, 4), **training):
    data = {"format": "npz", "train": "@" + train, "num_classes": 4}
    if test:
        data["test"] = "@" + test
    return {"name": "npz", "model": {"input": list(input_), "layers": [
        {"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
        {"type": "dense", "units": 4, "activation": "softmax"}]},
        "data": data,
        "training": dict({"epochs": epochs, "batch_size": 32, "seed": 5,
                          "metrics": ["accuracy"]}, **training)}


def run(tmp, name, spec, *extra):
    path = punchtest.write_json(os.path.join(tmp, name + ".json"), spec)
    out = os.path.join(tmp, name)
    p = subprocess.run([EXE, path, "--out", out, "--threads", "1"] + list(extra),
                       capture_output=True, text=True, timeout=120)
    return p, out


def weights(out):
    with open(os.path.join(out, "weights.npz"), "rb") as f:
        return f.read()


def cases():
    with tempfile.TemporaryDirectory() as tmp:
        x, y = learnable(600, 0)
        xt, yt = learnable(200, 1)

        def save(name, compressed=False, **arrays):
            path = os.path.join(tmp, name)
            (np.savez_compressed if compressed else np.savez)(path, **arrays)
            return path + ".npz"

        base = save("base", x_train=x, y_train=y, x_test=xt, y_test=yt)
        variants = {
            "compressed": save("c", True, x_train=x, y_train=y, x_test=xt, y_test=yt),
            "one-hot": save("o", x_train=x, y_train=np.eye(4, dtype=np.float32)[y],
                            x_test=xt, y_test=yt),
            "channels last": save("nhwc", x_train=x[..., None], y_train=y, x_test=xt,
                                  y_test=yt),
            "channels first": save("nchw", x_train=x[:, None], y_train=y.astype(np.int32),
                                   x_test=xt, y_test=yt.astype(np.uint8)),
            "float64": save("f8", x_train=x.astype(np.float64), y_train=y.astype(np.float64),
                            x_test=xt, y_test=yt),
        }
        p, ref = run(tmp, "ref", job(base, base))
        punchtest.require(p.returncode == 0, "reference run: %s" % p.stderr)
        for what, path in variants.items():
            punchtest.case(what, same, tmp, what, path, weights(ref))
        punchtest.case("x/y fallback", fallback, tmp, x, y, xt, yt)
        punchtest.case("errors", errors, tmp, x, y, save)
        punchtest.case("predict", predict, tmp, ref, xt, yt)
        punchtest.case("init_from", init_from, tmp, ref, base)
        punchtest.case("regression", regression, tmp)


def same(tmp, what, path, want):
    p, out = run(tmp, what.replace(" ", "-"), job(path, path))
    check(p.returncode == 0, "%s: %s" % (what, p.stderr))
    if p.returncode == 0:
        check(weights(out) == want, "%s: weights differ from the plain archive's" % what)


def fallback(tmp, x, y, xt, yt):
    # A single x/y serves train and test alike.
    path = os.path.join(tmp, "xy.npz")
    np.savez(path, x=x, y=y)
    p, out = run(tmp, "xy", job(path, path))
    check(p.returncode == 0, p.stderr)


def errors(tmp, x, y, save):
    cases = [
        (save("rows", x_train=x, y_train=y[:-1]), "x_train has 600 rows but y_train 599"),
        (save("none", a=x), "no x_train and y_train arrays for data.train (nor x and y)"),
        (save("label", x_train=x, y_train=np.where(np.arange(len(y)) == 7, 9, y)),
         "y_train: record 8: label 9 is not a class in [0, 4)"),
        (save("frac", x_train=x, y_train=y + 0.5),
         ".5 is not a class id; float targets (regression) need training.loss"),
        (save("half", x_train=x), "x_train without y_train"),
        (save("shape", x_train=x.reshape(600, 2, 8), y_train=y), "samples have shape"),
    ]
    for path, want in cases:
        p, _ = run(tmp, "err", job(path))
        check(p.returncode == 1 and want in p.stderr and os.path.basename(path) in p.stderr,
              "%s: want %r, got %d %s" % (path, want, p.returncode, p.stderr.strip()))
    with open(cases[0][0], "rb") as f:
        blob = f.read()
    cut = os.path.join(tmp, "cut.npz")
    with open(cut, "wb") as f:
        f.write(blob[:len(blob) - 100])
    p, _ = run(tmp, "err", job(cut))
    check(p.returncode == 1 and "cut.npz: " in p.stderr, p.stderr)
    p, _ = run(tmp, "err", job("fm"))
    check(p.returncode == 1 and "names an uploaded dataset" in p.stderr,
          "an unresolved @NAME: %s" % p.stderr)


def predict(tmp, ref, xt, yt):
    inp = os.path.join(tmp, "in.npy")
    np.save(inp, xt)
    out = os.path.join(tmp, "pred")
    spec = os.path.join(tmp, "ref.json")
    p = subprocess.run([EXE, spec, "--out", out, "--weights",
                        os.path.join(ref, "weights.safetensors"), "--predict", inp],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, p.stderr)
    probs = np.load(os.path.join(out, "predictions.npy"))
    hist = punchtest.read_json(os.path.join(ref, "history.json"))
    acc = float((probs.argmax(1) == yt).mean())
    check(probs.shape == (200, 4) and abs(acc - hist["test"]["accuracy"]) < 1e-9,
          "predicted accuracy %s vs test %s" % (acc, hist["test"]["accuracy"]))
    # A predict task: the same for data.test's inputs (x only, no labels).
    xonly = os.path.join(tmp, "xonly.npz")
    np.savez(xonly, x=xt[..., None])
    task = job(xonly, xonly)
    task["task"] = "predict"
    del task["data"]["train"]
    task["training"]["init_from"] = {"dataset": "@" + os.path.join(ref, "weights.safetensors")}
    p, task_out = run(tmp, "task", task)
    check(p.returncode == 0, "predict task: %s" % p.stderr)
    if p.returncode == 0:
        check(np.array_equal(np.load(os.path.join(task_out, "predictions.npy")), probs),
              "the predict task's output differs from --predict's")
    np.save(inp, np.zeros((3, 7), np.uint8))
    p = subprocess.run([EXE, spec, "--out", out, "--weights",
                        os.path.join(ref, "weights.safetensors"), "--predict", inp],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 2 and "16 values per sample" in p.stderr, p.stderr)


def init_from(tmp, ref, base):
    w = "@" + os.path.join(ref, "weights.safetensors")
    p, out = run(tmp, "warm", job(base, base, epochs=1, init_from={"dataset": w}))
    check(p.returncode == 0, p.stderr)
    first = punchtest.read_json(os.path.join(ref, "history.json"))["loss"]
    warm = punchtest.read_json(os.path.join(out, "history.json"))["loss"]
    check(warm[0] < first[0], "warm first epoch %s vs the first run's %s" % (warm, first))
    bad = job(base, epochs=1, init_from={"dataset": w})
    bad["model"]["layers"][1]["units"] = 8
    path = punchtest.write_json(os.path.join(tmp, "bad.json"), bad)
    p = subprocess.run([EXE, "--validate", path], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and 'tensor "1.dense.weight" is [16, 16]' in p.stderr
          and "needs [16, 8]" in p.stderr, p.stderr)


def linear(n, k, seed):
    """y = x w + 0.5 + noise of variance 0.0025: float32 [n] (k 0) or [n, k]."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    w = rng.normal(size=(8, max(k, 1)))
    y = x @ w + 0.5 + 0.05 * rng.normal(size=(n, max(k, 1)))
    return x, (y[:, 0] if k == 0 else y).astype(np.float32)


def regression_job(path, outputs, loss="mse"):
    return {"name": "reg", "model": {"input": [8], "layers": [
        {"type": "dense", "units": outputs}]},
        "data": {"format": "npz", "train": "@" + path, "test": "@" + path,
                 "num_classes": outputs, "scaling": "none", "validation_split": 0.2},
        "training": {"epochs": 8, "batch_size": 32, "seed": 1, "loss": loss,
                     "metrics": ["mae", "mse"],
                     "optimizer": {"name": "adam", "learning_rate": 0.05}}}


def regression(tmp):
    for k in (0, 3):
        x, y = linear(800, k, k)
        path = os.path.join(tmp, "reg%d.npz" % k)
        np.savez(path, x_train=x[:600], y_train=y[:600], x_test=x[600:], y_test=y[600:])
        p, out = run(tmp, "reg%d" % k, regression_job(path, max(k, 1)))
        check(p.returncode == 0, p.stderr)
        h = punchtest.read_json(os.path.join(out, "history.json"))
        var = float(y.var(axis=0).mean())
        # The noise's variance is 0.0025; predicting the mean would score var.
        check(h["mse"][-1] < 0.01 and h["mse"][-1] < var / 100 and h["val_mse"][-1] < 0.01,
              "k=%d: mse %s, val %s, variance of y %.3f" % (k, h["mse"], h["val_mse"], var))
        check(h["mae"][-1] < 0.1, "k=%d: mae %s" % (k, h["mae"]))
    x, y = linear(64, 0, 9)
    path = os.path.join(tmp, "regbad.npz")
    np.savez(path, x=x, y=y)
    spec = regression_job(path, 2, "categorical_crossentropy")
    spec["model"]["layers"][0]["activation"] = "softmax"
    p, _ = run(tmp, "regbad", spec)
    check(p.returncode != 0 and "data.train" in p.stderr and "training.loss" in p.stderr
          and "not a class id" in p.stderr, p.stderr)
    p, _ = run(tmp, "regwide", regression_job(os.path.join(tmp, "reg3.npz"), 2))
    check(p.returncode != 0 and "3 regression targets per record" in p.stderr, p.stderr)


if __name__ == "__main__":
    punchtest.main(cases)
