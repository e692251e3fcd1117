"""e2e.py — punch end to end against a real punchcardd and punch-train.

Starts punchcardd (punchtest.Daemon: temporary data dir, random port)
with a secrets file made by `punch keygen`, then drives only the `punch`
binary: submit a small Fashion-MNIST MLP, wait (plain lines in a pipe),
state, list --json, logs, fetch --format both. The fetched weights are loaded
with numpy and run forward over the same test samples: they must reproduce
the accuracy and loss the job reported. curves.svg must parse as XML with one
series per metric. A second, long job is followed by `punch wait` across a
restart of punchcardd, then cancelled while running (wait exits 7). A job
that fails at run time (exit 1) and one over its time limit (exit 8). Every
error path with its exit code and message (no server 3, wrong or missing
secret 4, unknown id 5, invalid spec 2 with no network traffic), --help for
punch and each command, and client/notebook_example.py against the live
daemon, without matplotlib.

Run by meson with PUNCH_SOURCE_ROOT, PUNCH_BUILD_ROOT, PUNCHCARDD and PUNCH.
"""
import ast
import hashlib
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

import numpy as np
import punchtest
from punchtest import DATASETS, Daemon, check, fail, wait_for

PUNCH = os.environ.get("PUNCH") or punchtest.build_path("client", "punch")
JOBS = punchtest.source_path("tests", "client", "jobs")


def load_job(name):
    with open(os.path.join(JOBS, name)) as f:
        return json.load(f)


class Punch:
    """Runs the punch binary with a clean environment (no user config)."""

    def __init__(self, home, url=None, secret=None):
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PUNCH_URL", "PUNCH_SECRET", "PUNCH_CONFIG", "XDG_CONFIG_HOME")}
        self.env["HOME"] = home
        if url:
            self.env["PUNCH_URL"] = url
        if secret:
            self.env["PUNCH_SECRET"] = secret

    def run(self, *args, want=0, timeout=240, env=None, cwd=None):
        e = dict(self.env)
        e.update(env or {})
        r = subprocess.run([PUNCH] + list(args), capture_output=True, text=True, timeout=timeout,
                           env={k: v for k, v in e.items() if v is not None}, cwd=cwd)
        # The secret is never printed, whichever way it was given.
        given = [e.get("PUNCH_SECRET")] + [b for a, b in zip(args, args[1:]) if a == "--secret"]
        for secret in given:
            if secret and len(secret) >= 8:
                check(secret not in r.stdout + r.stderr,
                      "punch %s printed the secret" % " ".join(args[:1]))
        if want is not None and r.returncode != want:
            fail("punch %s: exit %d, wanted %d\nstdout: %s\nstderr: %s" % (
                " ".join(args), r.returncode, want, r.stdout[-3000:], r.stderr[-3000:]))
        return r


def keygen(punch, identity):
    r = punch.run("keygen", "--identity", identity)
    lines = r.stdout.splitlines()
    check(len(lines) == 2, "keygen prints two lines on stdout: %r" % r.stdout)
    secret, entry = lines[0], json.loads(lines[1])
    check(re.fullmatch(r"[0-9a-f]{64}", secret), "keygen secret: %r" % secret)
    check(entry.get("identity") == identity and "secret" not in entry, entry)
    check(secret not in r.stderr, "keygen repeats the secret on stderr")
    check(entry.get("secret_sha256") == hashlib.sha256(secret.encode()).hexdigest(),
          "keygen's entry holds the secret's SHA-256")
    return secret, entry


# -- the model in the weights, in numpy ----------------------------------------

def forward(spec, weights, x):
    """The spec's flatten/dense layers with the weights: y = x @ W + b."""
    acts = {"relu": lambda z: np.maximum(z, 0), "linear": lambda z: z, None: lambda z: z}
    h = x.reshape(len(x), -1).astype(np.float64)
    for i, layer in enumerate(spec["model"]["layers"]):
        if layer["type"] == "flatten":
            continue
        check(layer["type"] == "dense", "forward() knows flatten and dense only")
        h = h @ weights["%d.dense.weight" % i] + weights["%d.dense.bias" % i]
        act = layer.get("activation")
        if act == "softmax":
            h = np.exp(h - h.max(axis=1, keepdims=True))
            h /= h.sum(axis=1, keepdims=True)
        else:
            h = acts[act](h)
    return h


def check_weights(spec, out_dir, reported):
    """Shapes from the spec; safetensors == npz; the forward pass over the
    job's test samples reproduces its reported test accuracy and loss."""
    st = punchtest.load_safetensors(os.path.join(out_dir, "weights.safetensors"))
    npz = punchtest.load_npz(os.path.join(out_dir, "weights.npz"))
    want = {}
    width = int(np.prod(spec["model"]["input"]))
    for i, layer in enumerate(spec["model"]["layers"]):
        if layer["type"] == "dense":
            want["%d.dense.weight" % i] = (width, layer["units"])
            want["%d.dense.bias" % i] = (layer["units"],)
            width = layer["units"]
    # The input scaling travels with the weights (a notebook needs it for new data).
    want["input.shift"] = want["input.factor"] = tuple(spec["model"]["input"])
    check({k: v.shape for k, v in st.items()} == want, "safetensors shapes %s, want %s" % (
        {k: v.shape for k, v in st.items()}, want))
    punchtest.require(sorted(npz) == sorted(want), "npz keys %s" % sorted(npz))
    for k in want:
        check(npz[k].dtype == np.float32 and npz[k].shape == want[k], "npz %s" % k)
        check(np.array_equal(npz[k], st[k]), "npz and safetensors differ in %s" % k)

    n = spec["data"]["test_samples"]
    test = os.path.join(DATASETS, spec["data"]["test"])
    x = punchtest.read_idx(test + "-images-idx3-ubyte.gz")[:n]
    y = punchtest.read_idx(test + "-labels-idx1-ubyte.gz")[:n]
    x = (x.reshape(n, -1) - st["input.shift"].reshape(1, -1)) * st["input.factor"].reshape(1, -1)
    p = forward(spec, st, x.astype(np.float32))
    acc = float(np.mean(np.argmax(p, axis=1) == y))
    loss = float(-np.mean(np.log(np.maximum(p[np.arange(n), y], 1e-7))))
    print("numpy forward pass over %d test samples: accuracy %.4f loss %.5f; reported %s" % (
        n, acc, loss, reported))
    check(abs(acc - reported["accuracy"]) <= 1e-4,
          "numpy accuracy %.6f != reported %.6f" % (acc, reported["accuracy"]))
    check(abs(loss - reported["loss"]) <= 1e-3 * max(1.0, reported["loss"]),
          "numpy loss %.6f != reported %.6f" % (loss, reported["loss"]))
    check(acc > 0.5, "the model learned nothing: accuracy %.3f" % acc)


def check_svg(path, history):
    """Valid SVG; one series per per-epoch metric of history.json."""
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(path).getroot()
    check(root.tag == ns + "svg", "curves.svg root is %s" % root.tag)
    series = [el.get("data-series") for el in root.iter(ns + "path")
              if el.get("class") == "series"]
    metrics = {k for k in history if isinstance(history[k], list)
               and k.removeprefix("val_") in ("loss", "accuracy", "mse", "mae")}
    check({"loss", "accuracy", "val_loss", "val_accuracy"} <= metrics, "history keys %s" % metrics)
    check(sorted(series) == sorted(metrics), "SVG series %s, want one per metric %s" % (
        series, sorted(metrics)))
    panels = [el.get("data-metric") for el in root.iter(ns + "g") if el.get("class") == "panel"]
    check(sorted(panels) == ["accuracy", "loss"], "SVG panels %s" % panels)


# -- the flow -----------------------------------------------------------------

def job_flow(d, punch, work):
    spec = load_job("mlp-small.json")
    r = punch.run("submit", os.path.join(JOBS, "mlp-small.json"), "--quiet")
    jid = r.stdout.strip()
    check(re.fullmatch(r"[0-9a-f]{12}", jid) and r.stdout == jid + "\n",
          "submit --quiet prints only the id: %r" % r.stdout)

    r = punch.run("wait", jid)
    out = r.stdout
    check("\r" not in out and "\x1b" not in out, "wait in a pipe draws no bar: %r" % out[:300])
    epochs = spec["training"]["epochs"]
    for e in range(1, epochs + 1):
        check(re.search(r"^.*epoch %d/%d.*loss.*$" % (e, epochs), out, re.M),
              "wait output has no line for epoch %d:\n%s" % (e, out))
    check("succeeded" in out, "wait says how the job ended:\n%s" % out)

    r = punch.run("state", jid)
    check(jid in r.stdout and "succeeded" in r.stdout, "state:\n%s" % r.stdout)
    r = punch.run("state", jid[:6])
    check("%s is job %s" % (jid[:6], jid) in r.stderr and "succeeded" in r.stdout,
          "a short id names the job it matched:\n%s" % r.stderr)
    job = json.loads(punch.run("state", jid, "--json").stdout)
    check(job["id"] == jid and job["state"] == "succeeded", job)
    check(job["owner"] == "e2e", "owner %s" % job["owner"])
    latest = json.loads(punch.run("state", "--json").stdout)
    check(latest["id"] == jid, "state without ID shows the latest job")

    listed = json.loads(punch.run("list", "--json").stdout)
    check(isinstance(listed, list) and [j["id"] for j in listed] == [jid], listed)
    check(json.loads(punch.run("list", "--state", "succeeded", "--json").stdout)[0]["id"] == jid,
          "list --state succeeded")
    check(json.loads(punch.run("list", "--state", "running", "--json").stdout) == [],
          "list --state running is empty")
    r = punch.run("list")
    check(jid in r.stdout and "succeeded" in r.stdout, "list table:\n%s" % r.stdout)

    r = punch.run("logs", jid)
    with open(os.path.join(d.run_dir(jid), "train.log")) as f:
        check(r.stdout == f.read(), "punch logs differs from train.log")

    out_dir = os.path.join(work, "results")
    r = punch.run("fetch", jid, "-o", out_dir + "/", "--format", "both")
    check("//" not in r.stdout, "fetch -o DIR/ printed a doubled slash: %r" % r.stdout)
    check("test accuracy %.4f\n" % job["result"]["test_accuracy"] in r.stdout and
          "test samples %d\n" % spec["data"]["test_samples"] in r.stdout,
          "fetch reports the test results: %r" % r.stdout)
    for name in ("weights.safetensors", "weights.npz", "history.json", "curves.svg"):
        check(os.path.getsize(os.path.join(out_dir, name)) > 0, "fetch wrote no %s" % name)
    with open(os.path.join(out_dir, "history.json")) as f:
        history = json.load(f)
    check(len(history["loss"]) == epochs, "history has %d epochs" % len(history["loss"]))
    reported = history["test"]
    check(reported["samples"] == spec["data"]["test_samples"], reported)
    check(abs(reported["accuracy"] - job["result"]["test_accuracy"]) <= 1e-6 and
          abs(reported["loss"] - job["result"]["test_loss"]) <= 1e-6,
          "history.json's test %s != state's result %s" % (reported, job["result"]))
    check_weights(spec, out_dir, reported)
    check_svg(os.path.join(out_dir, "curves.svg"), history)

    tty_wait(punch, jid)

    # fetch with the default directory (./ID) and one format.
    punch.run("fetch", jid, "--format", "npz", cwd=work)
    check(sorted(os.listdir(os.path.join(work, jid))) ==
          ["curves.svg", "history.json", "weights.npz"], os.listdir(os.path.join(work, jid)))
    return jid


def line_reader(stream):
    """A queue of the lines a child writes, read by a thread."""
    q = queue.Queue()

    def pump():
        for line in stream:
            q.put(line)
        q.put(None)
    threading.Thread(target=pump, daemon=True).start()
    return q


def expect_line(q, needle, what, timeout=120):
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = q.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line)
        if needle in line:
            return
    fail("%s: no line with %r in %r" % (what, needle, seen))


def cancel_flow(d, punch, work):
    """A long job: seen running; punch wait rides out a restart of
    punchcardd; the job is cancelled, and `punch wait` exits 7."""
    spec = load_job("mlp-small.json")
    spec["name"] = "client-e2e-long"
    spec["training"]["epochs"] = 100000
    spec["resources"]["time_limit_s"] = 600   # should this test fail before its cancel
    path = os.path.join(work, "long.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    jid = punch.run("submit", path, "--quiet").stdout.strip()
    def running():
        j = json.loads(punch.run("state", jid, "--json").stdout)
        return j["state"] == "running" and j["progress"].get("epoch")
    wait_for(running, "the long job to run an epoch", timeout=120, interval=0.1)

    tty_interrupt(punch, jid)
    check(json.loads(punch.run("state", jid, "--json").stdout)["state"] == "running",
          "Ctrl-C on punch wait left the job running")

    waiter = subprocess.Popen([PUNCH, "wait", "--interval", "0.2", jid], env=punch.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = line_reader(waiter.stdout)
    expect_line(lines, "running", "punch wait reaches the server")
    d.stop()     # the job runs on under its supervisor
    expect_line(lines, "lost contact with the server", "punch wait notices the server went")
    d.start()
    check(json.loads(punch.run("state", jid, "--json").stdout)["state"] == "running",
          "the job survived the restart")

    # logs -f follows until the job ends, which the cancel below makes happen.
    follow = subprocess.Popen([PUNCH, "logs", "-f", "--interval", "0.2", jid], env=punch.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    r = punch.run("cancel", jid)
    check(jid in r.stdout + r.stderr, "cancel names the job: %r %r" % (r.stdout, r.stderr))
    r = punch.run("wait", jid, "--interval", "0.2", want=7)
    check("cancelled" in r.stdout + r.stderr, "wait says cancelled: %r %r" % (r.stdout, r.stderr))
    check(json.loads(punch.run("state", jid, "--json").stdout)["state"] == "cancelled", "state")
    try:
        rc = waiter.wait(timeout=60)
    except subprocess.TimeoutExpired:
        waiter.kill()
        fail("punch wait did not end after the restart and the cancel")
    err = waiter.stderr.read()
    check(rc == 7, "punch wait across the restart exits %d, want 7: %s" % (rc, err))
    check("cancelled" in err, "punch wait across the restart says cancelled: %r" % err)
    r = punch.run("cancel", jid, want=6)
    check("cancelled" in r.stderr, "cancelling a finished job: %r" % r.stderr)
    try:
        out, err = follow.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        follow.kill()
        fail("punch logs -f did not end with the job")
    check(follow.returncode == 0, "logs -f exit %d: %s" % (follow.returncode, err))
    with open(os.path.join(d.run_dir(jid), "train.log")) as f:
        check(out == f.read(), "logs -f printed other than train.log")
    listed = json.loads(punch.run("list", "--json").stdout)
    check(listed[0]["id"] == jid and len(listed) == 2, "list newest first: %s" %
          [(j["id"], j["state"]) for j in listed])
    check([j["id"] for j in json.loads(punch.run("list", "--state", "cancelled", "--json")
                                       .stdout)] == [jid], "list --state cancelled")
    # A clone of it with changes: --dry-run shows them, then it is queued
    # with the spec as written plus the changes (issue 31 #3).
    secret = punch.env["PUNCH_SECRET"]
    written = json.loads(d.req("GET", "/api/v1/jobs/%s/spec" % jid, secret=secret).text)
    r = punch.run("submit", "--from", jid, "--set", "training.epochs=1", "--set", "name=clone 2",
                  "--dry-run")
    check('"clone 2"' in r.stdout and "1 epoch" in r.stdout, "dry run of a clone: %r" % r.stdout)
    clone = punch.run("submit", "--from", jid, "--set", "training.epochs=1", "--set",
                      "name=clone 2", "--quiet").stdout.strip()
    got = json.loads(d.req("GET", "/api/v1/jobs/%s/spec" % clone, secret=secret).text)
    want = dict(written, name="clone 2", training=dict(written["training"], epochs=1))
    check(got == want, "the clone's spec: %s, want %s" % (got, want))
    punch.run("cancel", clone)
    punch.run("submit", "--set", "a=1", os.path.join(JOBS, "mlp-small.json"), want=2)
    run_dir = d.run_dir(jid)
    r = punch.run("rm", jid, "000000000000", want=5)
    check(re.search(r"job %s deleted \(\d+\.\d MB freed\)" % jid, r.stdout),
          "rm says what it freed: %r" % r.stdout)
    check("000000000000" in r.stderr, "rm names the unknown job: %r" % r.stderr)
    check(not os.path.exists(run_dir), "rm left the run directory")
    punch.run("state", jid, want=5)


def failed_and_timeout_flow(punch, work):
    """A job the engine refuses at run time (more train samples than the
    set has): submit --wait exits 1 with its reason. A job over its time
    limit: submit --wait --quiet prints only the id and exits 8."""
    spec = load_job("mlp-small.json")
    spec["name"] = "client-e2e-fails"
    spec["data"]["train_samples"] = 10 ** 6
    path = os.path.join(work, "fails.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    r = punch.run("submit", path, "--wait", "--interval", "0.2", want=1)
    m = re.match(r"submitted job ([0-9a-f]{12}) ", r.stdout)
    check(m, "submit --wait says which job first: %r" % r.stdout)
    jid = m.group(1)
    check("failed" in r.stdout + r.stderr and "train_samples" in r.stdout + r.stderr,
          "submit --wait says why the job failed: %r %r" % (r.stdout, r.stderr))
    job = json.loads(punch.run("state", jid, "--json").stdout)
    check(job["state"] == "failed" and "train_samples" in (job["error"] or ""), job)
    punch.run("wait", jid, want=1)

    spec = load_job("mlp-small.json")
    spec["name"] = "client-e2e-timeout"
    spec["training"]["epochs"] = 100000
    spec["resources"]["time_limit_s"] = 1
    path = os.path.join(work, "timeout.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    r = punch.run("submit", path, "--wait", "--quiet", "--interval", "0.2", want=8)
    check(re.fullmatch(r"[0-9a-f]{12}\n", r.stdout), "submit --wait --quiet: %r" % r.stdout)
    jid = r.stdout.strip()
    check("time limit" in r.stderr, "submit --wait --quiet still says why: %r" % r.stderr)
    r = punch.run("wait", jid, want=8)
    check("time" in r.stdout + r.stderr, "wait says the time limit ended it: %r %r" % (
        r.stdout, r.stderr))
    check(json.loads(punch.run("state", jid, "--json").stdout)["state"] == "timeout", "state")


def read_to_end(fd):
    """What a pty's child writes until it closes (EIO on Linux)."""
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def tty_wait(punch, jid):
    """On a terminal, punch wait draws with carriage returns and ends on the
    same summary; the exit code is the job's."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(PUNCH, [PUNCH, "wait", jid], punch.env)
    out = read_to_end(fd)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    out = out.decode(errors="replace")
    check(os.WEXITSTATUS(status) == 0, "wait on a tty exit %d: %r" % (os.WEXITSTATUS(status), out))
    check("succeeded" in out, "wait on a tty: %r" % out)


def tty_interrupt(punch, jid):
    """punch wait on a terminal draws a live bar (redrawn with \\r); Ctrl-C
    erases it, says the job goes on, and exits 130."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(PUNCH, [PUNCH, "wait", "--interval", "0.1", jid], punch.env)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not re.search(rb"\r\x1b\[K[^\r\n]*epoch \d+/", out):
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    drawn = re.search(rb"\r\x1b\[K[^\r\n]*epoch \d+/", out)
    os.kill(pid, signal.SIGINT)
    out += read_to_end(fd)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = out.decode(errors="replace")
    check(drawn, "no live bar on a terminal: %r" % text[-500:])
    check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130,
          "Ctrl-C on wait: status %r: %r" % (status, text[-500:]))
    check("goes on" in text and "punch cancel " + jid in text, "Ctrl-C message: %r" % text[-500:])


def no_traffic_submit(punch, path, want):
    """punch submit PATH against a listening socket nobody answers: returns
    the result and checks no connection was made."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)
    url = "http://127.0.0.1:%d" % lsock.getsockname()[1]
    try:
        r = punch.run("--url", url, "submit", path, want=want, timeout=30)
        ready, _, _ = select.select([lsock], [], [], 0)
        check(not ready, "punch submit of an invalid spec connected to the server")
    finally:
        lsock.close()
    return r


def error_paths(d, punch, secret, work):
    # A user without jobs: an empty list, and no latest job to show.
    check(json.loads(punch.run("list", "--json").stdout) == [], "list with no jobs")
    r = punch.run("state", want=5)
    check("no jobs" in r.stderr.lower() or "no job" in r.stderr.lower(), "state: %r" % r.stderr)

    closed = "http://127.0.0.1:%d" % punchtest.free_port()
    for args in (["list"], ["state", "0123456789ab"], ["wait", "0123456789ab"],
                 ["submit", os.path.join(JOBS, "mlp-small.json")]):
        r = punch.run("--url", closed, *args, want=3, timeout=60)
        check("is punchcardd running? set PUNCH_URL" in r.stderr and closed in r.stderr,
              "no server (%s): %r" % (args[0], r.stderr))
        check(secret not in r.stdout + r.stderr, "the secret was printed")
    # The URL from the environment and the config file are used too.
    Punch(punch.env["HOME"], url=closed, secret=secret).run("list", want=3)

    # A long spec error reaches the user whole (the list of every preset).
    bad = load_job("mlp-small.json")
    bad["model"] = {"preset": "no-such-net", "input": [784]}
    bad_path = os.path.join(work, "unknown-preset.json")
    with open(bad_path, "w") as f:
        json.dump(bad, f)
    r = punch.run("submit", bad_path, want=2)
    check(r.stderr.rstrip().endswith("transformer_classifier"), "cut: %r" % r.stderr[-80:])

    # Wrong secret: the server refuses it.
    for args in (["list"], ["state", "0123456789ab"],
                 ["submit", os.path.join(JOBS, "mlp-small.json")]):
        r = punch.run("--secret", "not-the-secret", *args, want=4)
        check("refused" in r.stderr or "secret" in r.stderr, "wrong secret: %r" % r.stderr)
        check("not-the-secret" not in r.stdout + r.stderr, "the wrong secret was printed")

    # Missing secret: no flag, no environment, no config file.
    nosecret = Punch(punch.env["HOME"], url=d.url)
    for args in (["list"], ["state", "0123456789ab"]):
        r = nosecret.run(*args, want=4)
        check("no secret" in r.stderr and "PUNCH_SECRET" in r.stderr, "missing: %r" % r.stderr)
    # ... and the config file supplies it.
    cfg = os.path.join(work, "punch.conf")
    with open(cfg, "w") as f:
        f.write("# test\nurl = %s\nsecret = %s\n" % (closed, secret))
    os.chmod(cfg, 0o600)
    nosecret.run("list", env={"PUNCH_CONFIG": cfg})   # PUNCH_URL beats the file's url

    # Unknown job id: every command that takes one.
    for args in (["state", "0123456789ab"], ["wait", "0123456789ab"],
                 ["logs", "0123456789ab"], ["cancel", "0123456789ab"],
                 ["fetch", "0123456789ab", "-o", os.path.join(work, "nothing")]):
        r = punch.run(*args, want=5)
        check("0123456789ab" in r.stderr and "no job" in r.stderr.lower(),
              "unknown id (%s): %r" % (args[0], r.stderr))

    # Invalid spec: the spec library's one-line message naming the field,
    # exit 2, before any network traffic.
    for name, field in (("invalid-epochs.json", "training.epochs"),):
        r = no_traffic_submit(punch, os.path.join(JOBS, name), 2)
        lines = r.stderr.strip().splitlines()
        check(len(lines) == 1 and field in lines[0], "invalid spec message: %r" % r.stderr)
        check(r.stdout == "", "invalid spec printed %r" % r.stdout)
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"name": "x", "model": "mlp", "data": {"format": "idx", "train": '
                '"fashion-mnist/train"}, "training": {"epochs": 1, "optimiser": "sgd"}}')
    r = no_traffic_submit(punch, bad, 2)
    check("optimiser" in r.stderr, "unknown key: %r" % r.stderr)
    with open(bad, "w") as f:
        f.write('{"name": "x",')
    r = no_traffic_submit(punch, bad, 2)
    check("bad.json" in r.stderr, "broken JSON names the file: %r" % r.stderr)
    r = no_traffic_submit(punch, os.path.join(work, "missing.json"), 9)
    check("missing.json" in r.stderr, "missing file: %r" % r.stderr)

    # Usage errors.
    check("see punch" in punch.run("frobnicate", want=2).stderr, "unknown command")
    check("--bogus" in punch.run("list", "--bogus", want=2).stderr, "unknown option")
    punch.run("list", "--state", "sleeping", want=2)
    punch.run("state", "a", "b", want=2)
    punch.run("wait", want=2)
    punch.run("fetch", "0123456789ab", "--format", "pickle", want=2)


def check_help(punch):
    """punch --help lists every command and exit code; CMD --help every option."""
    top = punch.run("--help").stdout
    commands = ["submit", "state", "list", "wait", "logs", "cancel", "rm", "fetch", "keygen",
                "help", "version"]
    for c in commands:
        check(re.search(r"^  %s\b" % c, top, re.M), "punch --help lacks %s" % c)
    for code in range(10):
        check(re.search(r"^  %d  \S" % code, top, re.M), "punch --help lacks exit code %d" % code)
    for word in ("PUNCH_URL", "PUNCH_SECRET", "--url", "--secret", ".config/punch/config"):
        check(word in top, "punch --help lacks %s" % word)
    check(punch.run("help").stdout == top and punch.run("-h").stdout == top, "help aliases")
    options = {
        "submit": ["--wait", "--quiet", "--dry-run", "--interval", "--from", "--set"],
        "state": ["--json"],
        "list": ["--state", "--json"],
        "wait": ["--interval", "--quiet"],
        "logs": ["--follow", "--interval"],
        "cancel": [],
        "rm": [],
        "fetch": ["--output", "--format", "safetensors", "npz", "both"],
        "keygen": ["--identity", "--admin"],
    }
    for c, opts in options.items():
        text = punch.run(c, "--help").stdout
        check(text.startswith("usage: punch %s" % c), "punch %s --help: %r" % (c, text[:80]))
        check(punch.run("help", c).stdout == text, "punch help %s" % c)
        check("exit:" in text, "punch %s --help lacks exit codes" % c)
        for o in opts:
            check(o in text, "punch %s --help lacks %s" % (c, o))
    # Every long option a command's parser accepts (its cli_option table in
    # client/cmd_NAME.c) is in its --help, and punch accepts every one.
    for c in options:
        with open(punchtest.source_path("client", "cmd_%s.c" % c)) as f:
            tables = re.findall(r"cli_option \w+\[\] = \{(.*?)\n\s*\};", f.read(), re.S)
        # An entry's name comes first, positional or as .name = "...".
        accepted = re.findall(r'\{\s*(?:\.name\s*=\s*)?"([a-z-]+)"', "".join(tables))
        check(accepted or not options[c], "no option table found in client/cmd_%s.c" % c)
        text = punch.run(c, "--help").stdout
        for o in accepted:
            check("--" + o in text, "punch %s accepts --%s but its --help does not say" % (c, o))
        for o in re.findall(r"--[a-z][a-z-]+", text):
            if o in ("--help",):
                continue
            check(o[2:] in accepted, "punch %s --help documents %s, which it does not accept"
                  % (c, o))
    r = punch.run("--version")
    check(re.fullmatch(r"punch \d+\.\d+\.\d+\n", r.stdout), r.stdout)
    check(punch.run("version").stdout == r.stdout, "punch version")
    r = punch.run(want=2)
    check(r.stdout == "" and r.stderr == top, "punch alone: the usage on stderr, exit 2")


def notebook(d, secret, work):
    """client/notebook_example.py against the live daemon, matplotlib hidden."""
    src = punchtest.source_path("client", "notebook_example.py")
    with open(src) as f:
        tree = ast.parse(f.read())
    # The notebook's own default job must be a valid spec.
    default = [ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "job" for t in n.targets)
               and isinstance(n.value, ast.Dict)]
    check(len(default) == 1, "notebook_example.py has one literal default job")
    path = os.path.join(work, "notebook-default.json")
    with open(path, "w") as f:
        json.dump(default[0], f)
    Punch(work).run("submit", "--dry-run", path)

    hide = os.path.join(work, "no-matplotlib")
    os.makedirs(os.path.join(hide, "matplotlib"), exist_ok=True)
    with open(os.path.join(hide, "matplotlib", "__init__.py"), "w") as f:
        f.write("raise ImportError('hidden by tests/client/e2e.py')\n")
    spec = load_job("mlp-small.json")
    spec["name"] = "client-e2e-notebook"
    job_path = os.path.join(work, "notebook-job.json")
    with open(job_path, "w") as f:
        json.dump(spec, f)
    env = dict(os.environ, PUNCH_URL=d.url, PUNCH_SECRET=secret, PYTHONPATH=hide)
    nb_dir = os.path.join(work, "notebook")
    os.makedirs(nb_dir)
    r = subprocess.run(["/usr/bin/python3", src, job_path], capture_output=True, text=True,
                       env=env, cwd=nb_dir, timeout=240)
    check(r.returncode == 0, "notebook_example.py exit %d:\n%s\n%s" % (
        r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    out = r.stdout
    m = re.search(r"submitted job ([0-9a-f]{12})", out)
    check(m, "notebook output: %s" % out)
    check("matplotlib is not installed" in out, "the notebook tried to plot: %s" % out)
    units = spec["model"]["layers"][1]["units"]
    check(re.search(r"1\.dense\.weight\s+\(784, %d\)" % units, out), "weights shapes: %s" % out)
    hist = d.req("GET", "/api/v1/jobs/%s/history" % m.group(1), secret=secret).json()
    check("accuracy %.4f" % hist["test"]["accuracy"] in out, "test accuracy printed: %s" % out)
    check(os.listdir(nb_dir) == [], "without matplotlib nothing is written: %s"
          % os.listdir(nb_dir))
    # Its own-data part: upload, fine-tune from the job, predict.
    check("records, sha256 matches" in out, "upload: %s" % out)
    m = re.search(r"fine-tuned job ([0-9a-f]{12}): loss ([0-9.]+) -> ([0-9.]+)", out)
    check(m and float(m.group(3)) < float(m.group(2)), "fine-tune: %s" % out)
    m = re.search(r"predicted 256 new images: accuracy ([0-9.]+)", out)
    check(m and float(m.group(1)) > 0.5, "predictions: %s" % out)
    # Its text part: a char LM on a repeated sentence continues it.
    m = re.search(r"continues 'the quick ' with '([^']*)'", out)
    check(m and m.group(1).startswith("brown"), "generated text: %s" % out)
    print("notebook_example.py: ok")


_t0 = [time.monotonic()]


def phase(what):
    """Progress in the test log (durations are reported, never asserted)."""
    now = time.monotonic()
    print("%-40s %5.1f s" % (what, now - _t0[0]), flush=True)
    _t0[0] = now


def cases():
    punchtest.require_engine()
    punchtest.require(os.access(PUNCH, os.X_OK), "no punch at %s" % PUNCH)
    for name in ("t10k-images-idx3-ubyte.gz", "train-images-idx3-ubyte.gz"):
        punchtest.require_dataset(os.path.join("fashion-mnist", name))
    work = tempfile.mkdtemp(prefix="punch-e2e-")
    try:
        with_work(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def with_work(work):
    home = os.path.join(work, "home")
    os.makedirs(home)
    anon = Punch(home)
    punchtest.case("help", check_help, anon)
    keys = punchtest.case("keygen", two_keys, anon)
    punchtest.require(keys, "no secrets to start punchcardd with")
    (secret, entry), (other, other_entry) = keys
    with Daemon(["--datasets", DATASETS, "--max-running", "1", "--kill-grace", "3"],
                entries=[entry, other_entry]) as d:
        punch = Punch(home, url=d.url, secret=secret)
        phase("daemon up")
        punchtest.case("error paths", error_paths, d, punch, secret, work)
        phase("error paths")
        jid = punchtest.case("submit, wait, state, list, logs, fetch", job_flow, d, punch, work)
        phase("submit, wait, state, list, logs, fetch")
        if jid:
            punchtest.case("another user sees none of it", stranger, d, home, other, jid, work)
        punchtest.case("restart, cancel", cancel_flow, d, punch, work)
        phase("restart, cancel")
        punchtest.case("failed job, time limit", failed_and_timeout_flow, punch, work)
        phase("failed job, time limit")
        punchtest.case("notebook", notebook, d, secret, work)
        phase("notebook")
        d.stop()
        check(secret not in d.read_log(), "punchcardd logged the secret")


def two_keys(anon):
    """Two users' secrets and secrets-file entries, from punch keygen."""
    keys = keygen(anon, "e2e"), keygen(anon, "other")
    check(keys[0][0] != keys[1][0], "keygen made the same secret twice")
    return keys


def stranger(d, home, other, jid, work):
    stranger = Punch(home, url=d.url, secret=other)
    check(json.loads(stranger.run("list", "--json").stdout) == [], "another user's list")
    stranger.run("state", jid, want=5)
    stranger.run("fetch", jid, "-o", os.path.join(work, "stolen"), want=5)


if __name__ == "__main__":
    punchtest.main(cases)
