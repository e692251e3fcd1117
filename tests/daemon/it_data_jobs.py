"""it_data_jobs.py — uploaded datasets in jobs, against a real punchcardd and
punch-train: "@NAME" in data.train/test resolves to the submitter's upload
(another user's name is unknown: 400, nothing queued), an npz trains like
any other format (uint8 images in NHWC order, one-hot labels, a DEFLATED
archive), float y under training.loss mse train a regression, an IDX
pair uploaded as two files (real Fashion-MNIST) is "@STEM" under
data.format "idx", and a dataset a queued or running job uses (either
file of a pair too) can be neither replaced nor deleted (409) until the
job ends."""
import hashlib
import io
import json
import os
import re

import punchtest
from punchtest import Daemon, check, expect_error, require

np = punchtest.require_numpy()


def learnable(n, seed, nhwc=False):
    """4 classes of 4x4 one-channel images: class k brightens row k."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, size=n)
    x = rng.integers(0, 100, size=(n, 4, 4)).astype(np.uint8)
    x[np.arange(n), y, :] += 150
    return (x[..., None] if nhwc else x), y


def npz_bytes(compressed=False, **arrays):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def job(train="@fm", test="@fm", epochs=3, **data):
    return {"name": "npz", "model": {"input": [1, 4, 4], "layers": [
        {"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
        {"type": "dense", "units": 4, "activation": "softmax"}]},
        "data": {k: v for k, v in dict(format="npz", train=train, test=test, num_classes=4,
                                       **data).items() if v is not None},
        "training": {"epochs": epochs, "batch_size": 32, "metrics": ["accuracy"],
                     "optimizer": {"name": "adam"}, "seed": 3}}


def put(d, user, name, blob):
    return d.req("PUT", "/api/v1/datasets/" + name, user, body=blob,
                 headers={"Content-Type": "application/octet-stream"})


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "2", "--predict-max", "60000"]) as d:
        punchtest.case("train on an upload", train, d)
        punchtest.case("another user's name is unknown", foreign, d)
        punchtest.case("every run file", files, d)
        punchtest.case("warm start", warm, d)
        punchtest.case("predictions", predict, d)
        punchtest.case("regression", regression, d)
        punchtest.case("a preset on float16 x, int64 y", preset_half, d)
        punchtest.case("CSV regression", csv_regression, d)
        punchtest.case("an IDX pair", idx_pair, d)
    with Daemon(["--hold"]) as d:
        punchtest.case("in use: no replace, no delete", in_use, d)
        punchtest.case("in use: an IDX pair", idx_in_use, d)


def train(d):
    x, y = learnable(2000, 0, nhwc=True)
    xt, yt = learnable(400, 1, nhwc=True)
    onehot = np.eye(4, dtype=np.float32)[y]
    blob = npz_bytes(compressed=True, x_train=x, y_train=onehot, x_test=xt, y_test=yt)
    r = put(d, "alice", "fm", blob)
    check(r.status_code == 201, r.text)
    jid = d.submit_id("alice", job())
    spec_seen = d.job("alice", jid)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=90)
    check(end["state"] == "succeeded", "job: %s\n%s" % (end, d.train_log(jid)))
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    acc = hist["accuracy"][-1]
    check(acc > 0.9, "train accuracy %s after 3 epochs on a separable set" % acc)
    check(spec_seen["state"] in ("queued", "starting", "running", "succeeded"), spec_seen)
    # The spec the engine ran names the file, not another user's directory.
    with open(d.run_dir(jid) + "/job.json") as f:
        text = f.read()
    check(hashlib.sha256(b"alice").hexdigest() in text and "@fm" not in text, text[:400])
    # train.log, which the user reads, names the upload as the user did.
    data_line = re.search(r"^Data: .*$", d.train_log(jid), re.M)
    check(data_line and "train=@fm test=@fm" in data_line.group(0)
          and hashlib.sha256(b"alice").hexdigest() not in data_line.group(0),
          "train.log's data line: %s" % (data_line and data_line.group(0)))
    d.trained = jid


def files(d):
    jid = d.trained
    run = d.run_dir(jid)
    os.symlink("/etc/passwd", os.path.join(run, "planted"))
    os.symlink("/etc", os.path.join(run, "planted-dir"))
    r = d.req("GET", "/api/v1/jobs/%s/files" % jid, "alice")
    check(r.status_code == 200 and r.json()["truncated"] is False, r.text)
    listed = {f["path"]: f for f in r.json()["files"]}
    on_disk = {}
    for root, dirs, names in os.walk(run):
        for n in names:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                on_disk[os.path.relpath(p, run)] = os.path.getsize(p)
    check({p: f["bytes"] for p, f in listed.items()} == on_disk,
          "listing %s vs disk %s" % (sorted(listed), sorted(on_disk)))
    check({"weights.npz", "history.json", "job.json", "train.log"} <= set(listed), sorted(listed))
    check(sorted(listed) == [f["path"] for f in r.json()["files"]], "sorted by path")
    nested = [p for p in listed if "/" in p]
    check(nested, "a file in a subdirectory (checkpoints/): %s" % sorted(listed))
    for path in ["weights.npz"] + nested[:1]:
        got = d.req("GET", "/api/v1/jobs/%s/files/%s" % (jid, path), "alice")
        with open(os.path.join(run, path), "rb") as f:
            check(got.status_code == 200 and got.content == f.read(), "download " + path)
        check(got.headers.get("Content-Disposition", "").endswith(
            '"%s"' % os.path.basename(path)), got.headers)
    for bad in ("planted", "planted-dir/passwd", "%2E%2E/%2E%2E/punchcard.db", "%2E/job.json",
                "checkpoints", "nope", "checkpoints//x"):
        e = expect_error(d.req("GET", "/api/v1/jobs/%s/files/%s" % (jid, bad), "alice"), 404,
                         "refused " + bad)
        check("passwd" not in e["error"] or bad.startswith("planted"), e)
    # punch fetch --all: the same files (the planted links are not), same bytes.
    out = os.path.join(d.tmp, "fetched")
    p = d.punch("alice", "fetch", jid, "--all", "-o", out)
    check(p.returncode == 0, "punch fetch --all: %d %s %s" % (p.returncode, p.stdout, p.stderr))
    for path in on_disk:
        if path in ("progress.jsonl", "train.log"):
            continue  # may still grow while the supervisor writes exit.json
        with open(os.path.join(run, path), "rb") as a:
            try:
                with open(os.path.join(out, path), "rb") as b:
                    check(a.read() == b.read(), "fetched %s differs" % path)
            except OSError as e:
                check(False, "fetched %s: %s" % (path, e))
    check(not os.path.exists(os.path.join(out, "planted")), "a symlink was fetched")
    expect_error(d.req("GET", "/api/v1/jobs/%s/files" % jid, "bob"), 404, "bob lists")
    expect_error(d.req("GET", "/api/v1/jobs/%s/files/weights.npz" % jid, "bob"), 404,
                 "bob downloads")


def warm(d):
    first = d.trained
    hist = d.req("GET", "/api/v1/jobs/%s/history" % first, "alice").json()
    spec = job(epochs=1)
    spec["model"]["layers"][1]["units"] = 8
    spec["training"]["init_from"] = {"job": first}
    e = expect_error(d.submit("alice", spec), 400, "a shape mismatch")
    check(e["field"] == "training.init_from" and '"1.dense.weight" is [16, 16]' in e["error"]
          and "needs [16, 8]" in e["error"], e)
    spec = job(epochs=1)
    spec["training"]["init_from"] = {"job": first}
    e = expect_error(d.submit("bob", dict(spec, data=dict(spec["data"], train="@mine",
                                                          test="@mine"))), 400, "bob's warm")
    check("no" in e["error"], e)
    # The files a resolved warm start names are the daemon's to write: an
    # optimizer state (or weights) by path could be another user's run.
    other = os.path.join(d.run_dir(first), "checkpoints", "ckpt.bin")
    for key in ("optimizer", "path"):
        spec["training"]["init_from"] = {"job": first, key: "@" + other}
        e = expect_error(d.submit("alice", spec), 400, "init_from." + key + " given")
        check(e["field"] == "training.init_from." + key and "punchcardd" in e["error"], e)
    spec["training"]["init_from"] = {"job": first}
    jid = d.submit_id("alice", spec)
    # An uploaded weights file works the same way.
    with open(os.path.join(d.run_dir(first), "weights.npz"), "rb") as f:
        check(put(d, "alice", "w0.npz", f.read()).status_code == 201, "upload weights")
    spec2 = job(epochs=1)
    spec2["training"]["init_from"] = {"dataset": "@w0.npz"}
    jid2 = d.submit_id("alice", spec2)
    fresh = d.submit_id("alice", job(epochs=1))
    for j in (jid, jid2, fresh):
        end = d.wait_state("alice", j, punchtest.FINAL_STATES, timeout=90)
        check(end["state"] == "succeeded", "%s: %s" % (j, d.train_log(j)))
    loss = {j: d.req("GET", "/api/v1/jobs/%s/history" % j, "alice").json()["loss"][0]
            for j in (jid, jid2, fresh)}
    check(loss[jid] == loss[jid2], "the job's weights and their upload start alike: %s" % loss)
    check(loss[jid] < hist["loss"][0] and loss[jid] < loss[fresh] * 0.8,
          "warm first epoch %.4f vs the first job's first %.4f and a fresh one's %.4f"
          % (loss[jid], hist["loss"][0], loss[fresh]))
    check(loss[jid] <= hist["loss"][-1] * 1.1,
          "warm first epoch %.4f starts near the first job's last %.4f"
          % (loss[jid], hist["loss"][-1]))


def npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def predict(d):
    """Raw uint8 test images in, probabilities out: their accuracy is the
    job's own test accuracy, and punch predict writes the same array."""
    jid = d.trained
    xt, yt = learnable(400, 1, nhwc=True)
    r = d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice", body=npy_bytes(xt),
              headers={"Content-Type": "application/octet-stream"})
    check(r.status_code == 200, "predict: %d %s" % (r.status_code, r.text[:300]))
    p = np.load(io.BytesIO(r.content))
    check(p.dtype == np.float32 and p.shape == (400, 4), (p.dtype, p.shape))
    check(np.allclose(p.sum(axis=1), 1, atol=1e-4), "softmax rows sum to 1")
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    acc = float((p.argmax(axis=1) == yt).mean())
    check(abs(acc - hist["test"]["accuracy"]) < 1e-9,
          "predicted accuracy %.4f vs the job's test accuracy %.4f"
          % (acc, hist["test"]["accuracy"]))
    # The same inputs as [N, 1, 4, 4] (channels first) give the same outputs.
    r2 = d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice",
               body=npy_bytes(xt.transpose(0, 3, 1, 2)))
    check(r2.status_code == 200 and np.array_equal(np.load(io.BytesIO(r2.content)), p),
          "NCHW input")
    infile, outfile = os.path.join(d.tmp, "in.npy"), os.path.join(d.tmp, "out.npy")
    np.save(infile, xt[:50])
    proc = d.punch("alice", "predict", jid, infile, "-o", outfile)
    check(proc.returncode == 0, "punch predict: %s %s" % (proc.stdout, proc.stderr))
    check(np.array_equal(np.load(outfile), p[:50]), "punch predict's output")
    e = expect_error(d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice",
                           body=npy_bytes(np.zeros((3, 5), np.uint8))), 400, "wrong shape")
    check("16 values per sample" in e["error"], e)
    expect_error(d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice", body=b"junk"), 400,
                 "not an npy")
    expect_error(d.req("POST", "/api/v1/jobs/%s/predict" % jid, "alice",
                       body=npy_bytes(np.zeros((5000, 16), np.uint8))), 413, "over predict_max")
    expect_error(d.req("POST", "/api/v1/jobs/%s/predict" % jid, "bob", body=npy_bytes(xt)),
                 404, "bob predicts with alice's job")
    proc = d.punch("bob", "predict", jid, infile, "-o", outfile + ".bob")
    check(proc.returncode == 5 and not os.path.exists(outfile + ".bob"), proc.stderr)
    # Large inputs: a job with "task": "predict" over an upload.
    spec = job(train=None)
    spec["task"] = "predict"
    spec["training"]["init_from"] = {"job": jid}
    tid = d.submit_id("alice", spec)
    end = d.wait_state("alice", tid, punchtest.FINAL_STATES, timeout=90)
    check(end["state"] == "succeeded", "predict job: %s %s" % (end, d.train_log(tid)))
    r = d.req("GET", "/api/v1/jobs/%s/files/predictions.npy" % tid, "alice")
    check(r.status_code == 200 and np.array_equal(np.load(io.BytesIO(r.content)), p),
          "the predict job's predictions.npy = the request's")
    left = os.listdir(os.path.join(d.data_dir, "tmp"))
    check(not left, "temporary files left: %s" % left)


def foreign(d):
    before = d.req("GET", "/api/v1/jobs", "bob").json()["jobs"]
    e = expect_error(d.submit("bob", job()), 400, "bob names alice's upload")
    check(e["field"] == "data.train" and "no uploaded dataset \"fm\"" in e["error"], e)
    check(d.req("GET", "/api/v1/jobs", "bob").json()["jobs"] == before, "nothing queued")
    e = expect_error(d.submit("bob", job(train="@/etc/passwd")), 400, "a path")
    check(e["field"] == "data.train", e)
    e = expect_error(d.submit("alice", job(test="@nope")), 400, "alice names no upload")
    check(e["field"] == "data.test", e)


def in_use(d):
    x, y = learnable(50, 0)
    blob = npz_bytes(x=x, y=y)
    check(put(d, "alice", "fm", blob).status_code == 201, "upload")
    check(put(d, "alice", "other", blob).status_code == 201, "upload")
    jid = d.submit_id("alice", job(test=None))
    e = expect_error(d.req("DELETE", "/api/v1/datasets/fm", "alice"), 409, "delete in use")
    check("queued or running job (job %s)" % jid in e["error"], e)
    e = expect_error(put(d, "alice", "fm", npz_bytes(x=x[:10], y=y[:10])), 409, "replace in use")
    check("(job %s)" % jid in e["error"], e)
    check(d.req("GET", "/api/v1/datasets/fm", "alice").json()["records"] == 50,
          "the dataset is unchanged")
    # Only the dataset the job names is held.
    check(d.req("DELETE", "/api/v1/datasets/other", "alice").status_code == 200, "other")
    check(d.req("DELETE", "/api/v1/jobs/" + jid, "alice").status_code == 200, "cancel")
    check(put(d, "alice", "fm", npz_bytes(x=x[:10], y=y[:10])).status_code == 200,
          "replace once the job is over")
    check(d.req("DELETE", "/api/v1/datasets/fm", "alice").status_code == 200, "delete")


def preset_half(d):
    """Issue 31 #7: float16 images and int64 labels upload and train, and
    "model": "mlp" takes its input from the upload's shape, as for IDX."""
    x, y = learnable(1200, 4, nhwc=True)
    blob = npz_bytes(x_train=x.astype(np.float16), y_train=y.astype(np.int64))
    r = put(d, "alice", "half", blob)
    require(r.status_code == 201, r.text)
    spec = {"name": "half", "model": "mlp",
            "data": {"format": "npz", "train": "@half", "num_classes": 4},
            "training": {"epochs": 2, "batch_size": 32, "seed": 2, "metrics": ["accuracy"],
                         "optimizer": {"name": "adam"}}}
    jid = d.submit_id("alice", spec)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=90)
    require(end["state"] == "succeeded", "job: %s\n%s" % (end, d.train_log(jid)))
    acc = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()["accuracy"][-1]
    check(acc > 0.9, "train accuracy %s" % acc)
    # The spec as written comes back as written; the input is in what ran.
    written = d.req("GET", "/api/v1/jobs/%s/spec" % jid, "alice").json()
    check(written["model"] == "mlp", written)
    with open(d.run_dir(jid) + "/job.json") as f:
        ran = json.load(f)
    check(ran["model"]["input"] == [1, 4, 4], ran["model"])


def regression(d):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1000, 8)).astype(np.float32)
    y = (x @ rng.normal(size=(8, 2)) + 0.5 + 0.05 * rng.normal(size=(1000, 2)))
    y = y.astype(np.float32)
    blob = npz_bytes(x_train=x[:800], y_train=y[:800], x_test=x[800:], y_test=y[800:])
    check(put(d, "alice", "reg", blob).status_code == 201, "upload")
    spec = {"name": "reg", "model": {"input": [8], "layers": [{"type": "dense", "units": 2}]},
            "data": {"format": "npz", "train": "@reg", "test": "@reg", "num_classes": 2,
                     "scaling": "none"},
            "training": {"epochs": 6, "batch_size": 32, "seed": 1, "loss": "mse",
                         "metrics": ["mae"],
                         "optimizer": {"name": "adam", "learning_rate": 0.05}}}
    jid = d.submit_id("alice", spec)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=90)
    require(end["state"] == "succeeded", "job: %s\n%s" % (end, d.train_log(jid)))
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    var = float(y.var(axis=0).mean())
    # Noise of variance 0.0025; the mean alone would score var (about 4).
    check(hist["loss"][-1] < 0.01 and hist["loss"][-1] < var / 100,
          "mse %s against the variance of y %.3f" % (hist["loss"], var))



def csv_regression(d):
    """Issue 31 #5 as a user met it: a CSV with a header line and a float
    target in its last column, submitted without "header" and with
    label_column -1, trains a regression (it failed at run time with
    "label (column 1) 2.50737 is not an integer class"). A class-name
    column is refused at upload, naming its column."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 3))
    y = x @ np.array([1.5, -2.0, 0.5]) + 1.0
    text = "a,b,c,price\n" + "".join("%.5f,%.5f,%.5f,%.5f\n" % (*r, t) for r, t in zip(x, y))
    check(put(d, "alice", "houses.csv", text.encode()).status_code == 201, "upload")
    spec = {"name": "csv-reg", "model": {"input": [3], "layers": [{"type": "dense", "units": 1}]},
            "data": {"format": "csv", "train": "@houses.csv", "label_column": -1,
                     "num_classes": 1, "scaling": "none", "validation_split": 0.25},
            "training": {"epochs": 8, "batch_size": 16, "seed": 1, "loss": "mse",
                         "optimizer": {"name": "adam", "learning_rate": 0.05}}}
    jid = d.submit_id("alice", spec)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=90)
    require(end["state"] == "succeeded", "job: %s\n%s" % (end, d.train_log(jid)))
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    # y varies by about 6.5; a fitted line leaves only float rounding.
    check(hist["val_loss"][-1] < 0.05, "val mse %s (var of y %.2f)" % (hist["val_loss"], y.var()))
    iris = b"sepal,petal,width,species\n5.1,1.4,0.2,setosa\n7.0,4.7,1.4,versicolor\n"
    e = expect_error(put(d, "alice", "iris.csv", iris), 400, "class names")
    check("line 2, column 3 (counted from 0): \"setosa\" is not a number" in e["error"], e)


FM = os.path.join(punchtest.DATASETS, "fashion-mnist")


def fm_upload(d, user, *names):
    for name in names:
        with open(os.path.join(FM, name), "rb") as f:
            r = put(d, user, name, f.read())
        require(r.status_code in (200, 201), r.text)
        require(r.json()["format"] == "idx", r.text)


def idx_job(train, test, **data):
    return {"name": "idx", "model": {"input": [1, 28, 28], "layers": [
        {"type": "flatten"}, {"type": "dense", "units": 32, "activation": "relu"},
        {"type": "dense", "units": 10, "activation": "softmax"}]},
        "data": dict({"format": "idx", "train": train, "test": test, "train_samples": 2000,
                      "test_samples": 500}, **data),
        "training": {"epochs": 2, "batch_size": 64, "metrics": ["accuracy"],
                     "optimizer": {"name": "adam"}, "seed": 3}}


def idx_pair(d):
    if not os.path.exists(os.path.join(FM, "t10k-images-idx3-ubyte.gz")):
        punchtest.skip("no Fashion-MNIST under " + FM)
    fm_upload(d, "alice", "t10k-images-idx3-ubyte.gz")
    e = expect_error(d.submit("alice", idx_job("@t10k", "@t10k")), 400, "labels missing")
    check(e["field"] == "data.train" and "t10k-labels-idx1-ubyte[.gz]" in e["error"], e)
    fm_upload(d, "alice", "t10k-labels-idx1-ubyte.gz")
    # The stem, or either file's name, is the pair.
    jid = d.submit_id("alice", idx_job("@t10k", "@t10k-labels-idx1-ubyte.gz"))
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=120)
    require(end["state"] == "succeeded", "job: %s\n%s" % (end, d.train_log(jid)))
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    check(hist["accuracy"][-1] > 0.6, "Fashion-MNIST accuracy %s" % hist["accuracy"])
    e = expect_error(d.submit("bob", idx_job("@t10k", None)), 400, "bob names alice's pair")
    check(e["field"] == "data.train" and "no uploaded IDX pair" in e["error"], e)
    e = expect_error(d.submit("alice", idx_job("@fm", None)), 400, "an npz as idx")
    check("fm-images-idx3-ubyte[.gz]" in e["error"], e)


def idx_in_use(d):
    if not os.path.exists(os.path.join(FM, "t10k-labels-idx1-ubyte.gz")):
        punchtest.skip("no Fashion-MNIST under " + FM)
    fm_upload(d, "alice", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    jid = d.submit_id("alice", idx_job("@t10k-images-idx3-ubyte.gz", None))
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        expect_error(d.req("DELETE", "/api/v1/datasets/" + name, "alice"), 409,
                     "delete %s in use" % name)
    check(d.req("DELETE", "/api/v1/jobs/" + jid, "alice").status_code == 200, "cancel")
    check(d.req("DELETE", "/api/v1/datasets/t10k-labels-idx1-ubyte.gz",
                "alice").status_code == 200, "delete once the job is over")


if __name__ == "__main__":
    punchtest.main(cases)
