"""punchd.py — shared by the daemon integration tests: start a real punchcardd
on 127.0.0.1 with a random free port, a temporary data dir and a secrets file
(alice and bob, bob's secret stored hashed, and an admin), and talk to it.

Run by meson with PUNCHCARDD, PUNCH_BUILD_ROOT and the Open MPI variables set.
"""
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import requests

SECRETS = {"alice": "alice-secret-0123", "bob": "bob-secret-4567", "root": "admin-secret-89ab"}

QUICK_JOB = {
    "name": "quick",
    "model": {"input": [8], "layers": [{"type": "dense", "units": 4, "activation": "softmax"}]},
    "data": {"format": "synthetic", "synthetic_train": 256, "synthetic_test": 64, "num_classes": 4},
    "training": {"epochs": 2, "batch_size": 32, "seed": 1},
}

# A few seconds of training (about 3 s on 2 cores, ~3x that under ASan): long
# enough to be seen running, short enough to end while a test waits.
MEDIUM_JOB = {
    "name": "medium",
    "model": {"input": [64], "layers": [{"type": "dense", "units": 256, "activation": "relu"},
                                        {"type": "dense", "units": 10, "activation": "softmax"}]},
    "data": {"format": "synthetic", "synthetic_train": 60000, "synthetic_test": 100},
    "training": {"epochs": 10, "batch_size": 32, "seed": 1},
}

# Trains for a very long time: for cancel, time limits and restarts.
LONG_JOB = {
    "name": "long",
    "model": {"input": [64], "layers": [{"type": "dense", "units": 256, "activation": "relu"},
                                        {"type": "dense", "units": 10, "activation": "softmax"}]},
    "data": {"format": "synthetic", "synthetic_train": 60000, "synthetic_test": 100},
    "training": {"epochs": 100000, "batch_size": 32, "seed": 1},
}


# A stand-in for punch-train, for scheduling tests: each rank writes what it
# sees of CUDA_VISIBLE_DEVICES to OUT/gpus.RANK, then runs until OUT/release
# exists (at most 60 s) and exits 0.
STAND_IN = """#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  [ "$1" = "--out" ] && out="$2"
  shift
done
echo "${CUDA_VISIBLE_DEVICES-unset}" > "$out/gpus.$OMPI_COMM_WORLD_RANK"
i=0
while [ ! -e "$out/release" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
"""


def stand_in_engine(directory):
    """Write the stand-in engine into directory; return its path."""
    path = os.path.join(directory, "stand-in-engine")
    with open(path, "w") as f:
        f.write(STAND_IN)
    os.chmod(path, 0o700)
    return path


def wait_file(path, timeout=60):
    """Wait for a non-empty file; return its stripped text."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        time.sleep(0.05)
    fail("%s never appeared" % path)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def skip(msg):
    """meson treats exit code 77 as a skipped test."""
    print("SKIP: " + msg)
    sys.exit(77)


def engine_path():
    return os.path.join(os.environ.get("PUNCH_BUILD_ROOT", "build"), "engine", "punch-train")


def require_engine():
    """Skip unless the real punch-train exists and can train (takes --out)."""
    path = engine_path()
    if not os.access(path, os.X_OK):
        skip("punch-train is missing at %s (build the engine first)" % path)
    try:
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=20)
        usage = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError) as e:
        skip("punch-train --help failed: %s" % e)
    if "--out" not in usage:
        skip("%s cannot train yet (its usage has no --out)" % path)
    return path


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    """A punchcardd under test. Extra command-line flags via `args`."""

    def __init__(self, args=(), data_dir=None, port=None):
        self.tmp = tempfile.mkdtemp(prefix="punchd-")
        self.data_dir = data_dir or os.path.join(self.tmp, "data")
        self.secrets_path = os.path.join(self.tmp, "secrets.json")
        entries = [
            {"secret": SECRETS["alice"], "identity": "alice"},
            {"secret_sha256": hashlib.sha256(SECRETS["bob"].encode()).hexdigest(), "identity": "bob"},
            {"secret": SECRETS["root"], "identity": "root", "role": "admin"},
        ]
        with open(self.secrets_path, "w") as f:
            json.dump(entries, f)
        self.args = list(args)
        self.port = port or free_port()
        self.proc = None
        self.log_path = os.path.join(self.tmp, "punchcardd.log")
        self.session = requests.Session()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, expect_ok=True):
        exe = os.environ.get("PUNCHCARDD") or os.path.join(
            os.environ.get("PUNCH_BUILD_ROOT", "build"), "daemon", "punchcardd")
        cmd = [exe, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", self.data_dir,
               "--secrets", self.secrets_path, "--tick-ms", "50"] + self.args
        if not any(a.startswith("--engine") for a in self.args):
            cmd += ["--engine", engine_path()]
        # A sanitizer build of the engine: LeakSanitizer reports Open MPI's
        # own allocations at exit; the daemon itself stays leak-checked.
        cmd += ["--engine-env", "ASAN_OPTIONS=detect_leaks=0"]
        self.log = open(self.log_path, "ab")
        env = dict(os.environ)
        # MPI ranks under ASan report Open MPI's own allocations as leaks.
        env.setdefault("ASAN_OPTIONS", "")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env)
        if not expect_ok:
            return self.proc.wait(timeout=30)
        for _ in range(400):
            if self.proc.poll() is not None:
                fail("punchcardd exited with %s:\n%s" % (self.proc.returncode, self.read_log()))
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.05)
        fail("punchcardd did not answer /healthz:\n" + self.read_log())

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM and wait: the clean shutdown."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                if os.environ.get("PUNCHD_DEBUG_HANG") and shutil.which("gdb"):
                    out = subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-ex",
                                          "thread apply all bt"], capture_output=True, text=True)
                    print(out.stdout[-12000:], file=sys.stderr)
                self.proc.kill()
                fail("punchcardd ignored SIGTERM:\n" + self.read_log()[-3000:])
            check(rc == 0, "punchcardd exited %d after SIGTERM:\n%s" % (rc, self.read_log()))
        self.log.close()

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def cleanup(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- requests ---------------------------------------------------------------

    def req(self, method, path, user=None, secret=None, **kw):
        headers = kw.pop("headers", {})
        if user:
            headers["Authorization"] = "Bearer " + SECRETS[user]
        elif secret is not None:
            headers["Authorization"] = "Bearer " + secret
        return self.session.request(method, self.url + path, headers=headers, timeout=30, **kw)

    def submit(self, user, job=None, **kw):
        return self.req("POST", "/api/v1/jobs", user, data=json.dumps(job or QUICK_JOB), **kw)

    def job(self, user, job_id):
        r = self.req("GET", "/api/v1/jobs/" + job_id, user)
        check(r.status_code == 200, "GET job %s: %d %s" % (job_id, r.status_code, r.text))
        return r.json()

    def wait_state(self, user, job_id, states, timeout=60, poll=0.1):
        """Poll until the job is in one of `states`; return the job object."""
        deadline = time.monotonic() + timeout
        j = None
        while time.monotonic() < deadline:
            j = self.job(user, job_id)
            if j["state"] in states:
                return j
            time.sleep(poll)
        fail("job %s stayed %s, wanted %s\nlog:\n%s\ntrain.log:\n%s" % (
            job_id, j and j["state"], states, self.read_log()[-4000:], self.train_log(job_id)))

    def run_dir(self, job_id):
        return os.path.join(self.data_dir, "runs", job_id)

    def train_log(self, job_id):
        try:
            with open(os.path.join(self.run_dir(job_id), "train.log"), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return "(no train.log)"


def expect_error(r, status, what):
    """An error reply: the status, JSON {"error", "field"}."""
    check(r.status_code == status, "%s: want %d, got %d: %s" % (what, status, r.status_code,
                                                                 r.text[:300]))
    check(r.headers.get("Content-Type", "").startswith("application/json"),
          "%s: error is not JSON: %s" % (what, r.headers.get("Content-Type")))
    body = r.json()
    check(isinstance(body.get("error"), str) and body["error"], "%s: no error message" % what)
    check("field" in body, "%s: no field key" % what)
    return body


def session_processes(sid):
    """Live (non-zombie) processes of a session, from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append(int(name))
    return found


def job_processes(run_dir):
    """Live processes whose command line names run_dir (mpirun, ranks, supervisor)."""
    found = []
    needle = run_dir.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        state = stat[stat.rfind(")") + 2:].split()[0]
        if needle in cmd and state not in ("Z", "X"):
            found.append((int(name), cmd.replace(b"\0", b" ").decode(errors="replace")[:200]))
    return found
