"""Train on punchcardd from a notebook on another machine, then look at the results,
then bring your own arrays: upload them, fine-tune the model on them starting from
the job's weights, and get predictions for new arrays back; last, a text file:
a character language model trained on it writes text from a prompt.

Only `requests` and `numpy` are needed (Debian: python3-requests python3-numpy);
the history is plotted with matplotlib when it is installed. As a script:

    PUNCH_URL=https://cluster:8080 PUNCH_SECRET=... python3 notebook_example.py [JOB.json]

Use the server's https:// URL so the secret does not cross the network in
clear; PUNCH_CACERT names the CA file (PEM) its certificate chains to when
the system's CAs do not know it.

The test suite runs this file against a live punchcardd (tests/client/e2e.py).
"""
import io
import json
import os
import sys
import time

import numpy as np
import requests

URL = os.environ.get("PUNCH_URL", "http://127.0.0.1:8080").rstrip("/")
api = requests.Session()
api.headers["Authorization"] = "Bearer " + os.environ["PUNCH_SECRET"]
# Passed with each request: requests lets REQUESTS_CA_BUNDLE override a
# session's own setting.
VERIFY = os.environ.get("PUNCH_CACERT") or True


def call(method, path, **kwargs):
    """One API call; a refusal raises with the server's message."""
    r = api.request(method, URL + path, timeout=60, verify=VERIFY, **kwargs)
    if not r.ok:
        try:
            why = r.json()["error"]          # punchcardd's errors are {"error", "field"}
        except (ValueError, KeyError, TypeError):
            why = r.text[:200]
        raise RuntimeError(f"{method} {path}: HTTP {r.status_code}: {why}")
    return r


# 1. Submit a job: plain JSON, no code travels.
if len(sys.argv) > 1:
    with open(sys.argv[1]) as f:
        job = json.load(f)
else:
    job = {
        "name": "notebook-mlp",
        "model": "mlp",
        "data": {"format": "idx", "train": "fashion-mnist/train",
                 "test": "fashion-mnist/t10k", "validation_split": 0.1},
        "training": {"epochs": 5, "batch_size": 64, "metrics": ["accuracy"],
                     "optimizer": {"name": "adam", "learning_rate": 0.001}},
    }
job_id = call("POST", "/api/v1/jobs", json=job).json()["id"]
print("submitted job", job_id)

# 2. Follow it until it ends.
def follow(job_id, what="job", progress=True):
    """Poll a job until it ends (printing its epochs when progress is set);
    stop here unless it succeeded."""
    while True:
        state = call("GET", f"/api/v1/jobs/{job_id}").json()
        p = state["progress"] or {}
        if progress and "epoch" in p:
            print(f"  {state['state']}: epoch {p['epoch']}/{p['epochs']} loss {p['loss']:.4f}")
        if state["state"] in ("succeeded", "failed", "cancelled", "timeout"):
            break
        time.sleep(1)
    if state["state"] != "succeeded":
        sys.exit(f"{what} {job_id} {state['state']}: {state['error']}")


follow(job_id)

# 3. Fetch the history (Keras History shape) and the weights (a numpy archive).
history = call("GET", f"/api/v1/jobs/{job_id}/history").json()
npz = call("GET", f"/api/v1/jobs/{job_id}/weights", params={"format": "npz"}).content
weights = np.load(io.BytesIO(npz))
for key in weights.files:          # "1.dense.weight" (784, 128), "1.dense.bias" (128,), ...
    print(f"  {key:24s} {weights[key].shape}")
# Scale new inputs as training did: (x - weights["input.shift"]) * weights["input.factor"].
test = history["test"]
print(f"test: loss {test['loss']:.4f} accuracy {test.get('accuracy', float('nan')):.4f} "
      f"({test.get('samples', '?')} samples)")

# 4. Plot loss and metrics per epoch, training and validation.
try:
    import matplotlib
    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")      # a script has no screen: write a PNG instead
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: skipping the plot")
else:
    # Loss and the job's metrics, each with its validation curve when there is one.
    metrics = [k for k in ["loss"] + job["training"].get("metrics", []) if k in history]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.5), squeeze=False)
    for ax, name in zip(axes[0], metrics):
        epochs = range(1, len(history[name]) + 1)
        ax.plot(epochs, history[name], label=name)
        if "val_" + name in history:
            ax.plot(epochs, history["val_" + name], "--", label="val_" + name)
        ax.set_xlabel("epoch")
        ax.set_title(name)
        ax.legend()
    if "ipykernel" in sys.modules:
        plt.show()
    else:
        fig.savefig(f"{job_id}-history.png", dpi=100, bbox_inches="tight")
        print("plot written to", f"{job_id}-history.png")


# 5. Your own data: numpy arrays uploaded as an .npz (what np.savez writes), named
#    "@NAME" in a job. Here, 28x28 uint8 images whose class is the bright band.
import hashlib

rng = np.random.default_rng(0)


def bands(n):
    y = rng.integers(0, 10, size=n)
    x = rng.integers(0, 80, size=(n, 28, 28)).astype(np.uint8)
    for i, k in enumerate(y):
        x[i, 2 * k + 4:2 * k + 7, :] += 175
    return x, y


x_train, y_train = bands(3000)
x_test, y_test = bands(500)
buf = io.BytesIO()
np.savez(buf, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
blob = buf.getvalue()
up = call("PUT", "/api/v1/datasets/nb-bands", data=blob,
          headers={"Content-Type": "application/octet-stream"}).json()
print(f"uploaded nb-bands: {up['bytes']} bytes, {up['records']} records, "
      f"sha256 {'matches' if up['sha256'] == hashlib.sha256(blob).hexdigest() else 'DIFFERS'}")

# 6. Fine-tune: the same model, started from the job's final weights, on the upload.
model = job["model"]
if isinstance(model, str):
    model = {"preset": model}
model = dict(model, input=model.get("input", [1, 28, 28]))
tune = {"name": "notebook-finetune", "model": model,
        "data": {"format": "npz", "train": "@nb-bands", "test": "@nb-bands"},
        "training": {"epochs": 2, "batch_size": 64, "metrics": ["accuracy"],
                     "optimizer": {"name": "adam", "learning_rate": 0.001},
                     "init_from": {"job": job_id}}}
tune_id = call("POST", "/api/v1/jobs", json=tune).json()["id"]
follow(tune_id, "fine-tune job", progress=False)
tune_hist = call("GET", f"/api/v1/jobs/{tune_id}/history").json()
print(f"fine-tuned job {tune_id}: loss {tune_hist['loss'][0]:.4f} -> {tune_hist['loss'][-1]:.4f}, "
      f"test accuracy {tune_hist['test']['accuracy']:.4f}")

# 7. Predictions for new arrays: raw uint8 in (the server scales them as training
#    did), float32 probabilities out.
x_new, y_new = bands(256)
buf = io.BytesIO()
np.save(buf, x_new)
probs = np.load(io.BytesIO(call("POST", f"/api/v1/jobs/{tune_id}/predict", data=buf.getvalue(),
                                 headers={"Content-Type": "application/octet-stream"}).content))
print(f"predicted {probs.shape[0]} new images: accuracy {(probs.argmax(1) == y_new).mean():.4f}")
call("DELETE", "/api/v1/datasets/nb-bands")

# 8. Text: a plain text file is a dataset too. A character language model
#    learns it (the label of each step is the next character), then writes
#    new text from a prompt; the same seed gives the same text.
text = ("the quick brown fox jumps over the lazy dog.\n" * 200).encode()
call("PUT", "/api/v1/datasets/nb-text.txt", data=text,
     headers={"Content-Type": "application/octet-stream"})
vocab = len(set(text))
lm = {"name": "notebook-charlm",
      "model": {"input": {"tokens": vocab}, "layers": [
          {"type": "embedding", "output_dim": 16},
          {"type": "lstm", "units": 64, "return_sequences": True},
          {"type": "dense", "units": vocab, "activation": "softmax"}]},
      "data": {"format": "text", "train": "@nb-text.txt", "tokenizer": "char",
               "num_classes": vocab, "max_length": 32},
      "training": {"epochs": 6, "batch_size": 16,
                   "optimizer": {"name": "adam", "learning_rate": 0.01}, "seed": 1}}
lm_id = call("POST", "/api/v1/jobs", json=lm).json()["id"]
follow(lm_id, "language model job", progress=False)
out = call("POST", f"/api/v1/jobs/{lm_id}/generate",
           json={"prompt": "the quick ", "max_new_tokens": 30, "temperature": 0}).json()
print(f"language model {lm_id} continues 'the quick ' with {out['text']!r}")
call("DELETE", "/api/v1/datasets/nb-text.txt")
