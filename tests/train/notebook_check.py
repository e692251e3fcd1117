#!/usr/bin/python3
"""notebook_check.py PUNCH_TRAIN — what a notebook does with a run
directory: train the mlp preset on a Fashion-MNIST subset with punch-train,
load weights.npz with numpy, scale the raw test images with the input
scaling saved next to the weights (input.shift, input.factor), run the
forward pass in numpy, and get the test accuracy and loss the engine
reported in history.json — once with unit scaling and once with
standardisation. Skips (77) without numpy or the dataset."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: /usr/bin/python3 has no numpy (apt-get install python3-numpy)")
    sys.exit(77)

ROOT = "/usr/share/datasets"
IMAGES = os.path.join(ROOT, "fashion-mnist", "t10k-images-idx3-ubyte.gz")
LABELS = os.path.join(ROOT, "fashion-mnist", "t10k-labels-idx1-ubyte.gz")
if not os.path.exists(IMAGES):
    print("SKIP: no Fashion-MNIST under %s (apt-get install dataset-fashion-mnist)" % ROOT)
    sys.exit(77)

TEST_SAMPLES = 2000
JOB = {
    "name": "notebook-mlp",
    "model": "mlp",
    "data": {"format": "idx", "train": "fashion-mnist/train", "test": "fashion-mnist/t10k",
             "train_samples": 6000, "test_samples": TEST_SAMPLES},
    "training": {"epochs": 2, "batch_size": 64, "optimizer": {"name": "adam"}, "seed": 3},
}


def train(exe, tmp, scaling):
    job = dict(JOB, data=dict(JOB["data"], scaling=scaling))
    path = os.path.join(tmp, "job-%s.json" % scaling)
    with open(path, "w") as f:
        json.dump(job, f)
    out = os.path.join(tmp, "run-" + scaling)
    subprocess.run([exe, path, "--out", out, "--datasets", ROOT, "--threads", "2"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "history.json")) as f:
        history = json.load(f)
    with np.load(os.path.join(out, "weights.npz")) as npz:
        weights = {k: npz[k] for k in npz.files}
    return history, weights


def check(exe, tmp, scaling, x_raw, y):
    history, weights = train(exe, tmp, scaling)
    assert sorted(weights) == ["1.dense.bias", "1.dense.weight", "2.dense.bias",
                               "2.dense.weight", "input.factor", "input.shift"], sorted(weights)
    assert weights["1.dense.weight"].shape == (784, 128)
    assert weights["2.dense.weight"].shape == (128, 10)
    shift, factor = weights["input.shift"], weights["input.factor"]
    assert shift.shape == factor.shape == (1, 28, 28), shift.shape
    if scaling == "unit":
        assert not shift.any() and np.allclose(factor, 1 / 255), (shift.max(), factor.min())
    else:
        assert shift.max() > 50 and factor.min() > 0, (shift.max(), factor.min())
    x = ((x_raw - shift.reshape(1, -1)) * factor.reshape(1, -1)).astype(np.float32)

    h = np.maximum(x @ weights["1.dense.weight"] + weights["1.dense.bias"], 0)
    logits = (h @ weights["2.dense.weight"] + weights["2.dense.bias"]).astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    accuracy = float((logits.argmax(axis=1) == y).mean())
    loss = float(-logp[np.arange(len(y)), y].mean())

    reported = history["test"]
    print("%s scaling: numpy: accuracy %.4f loss %.5f; engine: accuracy %.4f loss %.5f"
          % (scaling, accuracy, loss, reported["accuracy"], reported["loss"]))
    assert reported["samples"] == TEST_SAMPLES, reported
    # float32 sums in another order may flip a near-tie: allow one sample.
    assert abs(accuracy - reported["accuracy"]) <= 1.0 / TEST_SAMPLES + 1e-12
    assert abs(loss - reported["loss"]) <= 1e-4 * max(1.0, loss)
    assert accuracy > 0.7, "the mlp did not learn"


def main():
    with gzip.open(IMAGES) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:TEST_SAMPLES]
    with gzip.open(LABELS) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:TEST_SAMPLES]
    x = x.astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        for scaling in ("unit", "standard"):
            check(sys.argv[1], tmp, scaling, x, y)


if __name__ == "__main__":
    main()
