"""Train on punchcardd from a notebook on another machine, then look at the results.

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
while True:
    state = call("GET", f"/api/v1/jobs/{job_id}").json()
    p = state["progress"] or {}
    if "epoch" in p:
        print(f"  {state['state']}: epoch {p['epoch']}/{p['epochs']} loss {p['loss']:.4f}")
    if state["state"] in ("succeeded", "failed", "cancelled", "timeout"):
        break
    time.sleep(1)
if state["state"] != "succeeded":
    sys.exit(f"job {job_id} {state['state']}: {state['error']}")

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
