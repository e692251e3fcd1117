#!/usr/bin/python3
"""notebook_check.py PUNCH_TRAIN — what a notebook does with a run
directory: train the mlp preset on a Fashion-MNIST subset with punch-train,
load weights.npz with numpy, scale the raw test images with the input
scaling saved next to the weights (input.shift, input.factor), run the
forward pass in numpy, and get the test accuracy and loss the engine
reported in history.json — once with unit scaling and once with
standardisation. Skips (77) without numpy or the dataset."""
import os
import subprocess
import sys
import tempfile

import punchtest
from punchtest import DATASETS, check, np  # np is None without numpy: cases() skips first

TEST_SAMPLES = 2000
JOB = {
    "name": "notebook-mlp",
    "model": "mlp",
    "data": {"format": "idx", "train": "fashion-mnist/train", "test": "fashion-mnist/t10k",
             "train_samples": 6000, "test_samples": TEST_SAMPLES},
    "training": {"epochs": 2, "batch_size": 64, "optimizer": {"name": "adam"}, "seed": 3},
}


def cases():
    punchtest.require_numpy()
    punchtest.require_dataset("fashion-mnist/t10k-images-idx3-ubyte.gz")
    x, y = punchtest.fashion_mnist("t10k", 0, TEST_SAMPLES)
    x = x.astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        for scaling in ("unit", "standard"):
            punchtest.case(scaling + " scaling", reproduce, sys.argv[1], tmp, scaling, x, y)


def train(exe, tmp, scaling):
    job = dict(JOB, data=dict(JOB["data"], scaling=scaling))
    path = punchtest.write_json(os.path.join(tmp, "job-%s.json" % scaling), job)
    out = os.path.join(tmp, "run-" + scaling)
    subprocess.run([exe, path, "--out", out, "--datasets", DATASETS, "--threads", "2"],
                   check=True, stdout=subprocess.DEVNULL)
    history = punchtest.read_json(os.path.join(out, "history.json"))
    return history, punchtest.load_npz(os.path.join(out, "weights.npz"))


def reproduce(exe, tmp, scaling, x_raw, y):
    history, weights = train(exe, tmp, scaling)
    punchtest.require(sorted(weights) == ["1.dense.bias", "1.dense.weight", "2.dense.bias",
                                          "2.dense.weight", "input.factor", "input.shift"],
                      sorted(weights))
    check(weights["1.dense.weight"].shape == (784, 128), weights["1.dense.weight"].shape)
    check(weights["2.dense.weight"].shape == (128, 10), weights["2.dense.weight"].shape)
    shift, factor = weights["input.shift"], weights["input.factor"]
    punchtest.require(shift.shape == factor.shape == (1, 28, 28), shift.shape)
    if scaling == "unit":
        check(not shift.any() and np.allclose(factor, 1 / 255), (shift.max(), factor.min()))
    else:
        check(shift.max() > 50 and factor.min() > 0, (shift.max(), factor.min()))
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
    check(reported["samples"] == TEST_SAMPLES, reported)
    # float32 sums in another order may flip a near-tie: allow one sample.
    check(abs(accuracy - reported["accuracy"]) <= 1.0 / TEST_SAMPLES + 1e-12,
          "accuracy: numpy %.6f, engine %.6f" % (accuracy, reported["accuracy"]))
    check(abs(loss - reported["loss"]) <= 1e-4 * max(1.0, loss),
          "loss: numpy %.6f, engine %.6f" % (loss, reported["loss"]))
    check(accuracy > 0.7, "the mlp did not learn: accuracy %.3f" % accuracy)


if __name__ == "__main__":
    punchtest.main(cases)
