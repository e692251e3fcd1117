#!/usr/bin/python3
"""notebook_check.py PUNCH_TRAIN — what a notebook does with a run
directory: train the mlp preset on a Fashion-MNIST subset with punch-train,
load weights.npz with numpy, run the forward pass in numpy on the same test
samples, and get the test accuracy and loss the engine reported in
history.json. Skips (77) without numpy or the dataset."""
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


def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.join(tmp, "job.json")
        with open(job, "w") as f:
            json.dump(JOB, f)
        out = os.path.join(tmp, "run")
        subprocess.run([exe, job, "--out", out, "--datasets", ROOT, "--threads", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "history.json")) as f:
            history = json.load(f)
        weights = np.load(os.path.join(out, "weights.npz"))
        assert sorted(weights.files) == ["1.dense.bias", "1.dense.weight", "2.dense.bias",
                                         "2.dense.weight"], weights.files
        assert weights["1.dense.weight"].shape == (784, 128)
        assert weights["2.dense.weight"].shape == (128, 10)

    with gzip.open(IMAGES) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:TEST_SAMPLES]
    with gzip.open(LABELS) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:TEST_SAMPLES]
    x = x.astype(np.float32) / np.float32(255)

    h = np.maximum(x @ weights["1.dense.weight"] + weights["1.dense.bias"], 0)
    logits = (h @ weights["2.dense.weight"] + weights["2.dense.bias"]).astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    accuracy = float((logits.argmax(axis=1) == y).mean())
    loss = float(-logp[np.arange(len(y)), y].mean())

    reported = history["test"]
    print("numpy: accuracy %.4f loss %.5f; engine: accuracy %.4f loss %.5f"
          % (accuracy, loss, reported["accuracy"], reported["loss"]))
    assert reported["samples"] == TEST_SAMPLES, reported
    # float32 sums in another order may flip a near-tie: allow one sample.
    assert abs(accuracy - reported["accuracy"]) <= 1.0 / TEST_SAMPLES + 1e-12
    assert abs(loss - reported["loss"]) <= 1e-4 * max(1.0, loss)
    assert accuracy > 0.7, "the mlp did not learn"


if __name__ == "__main__":
    main()
