"""punchtest.py — what every Python integration test shares: case-by-case
reporting, a real punchcardd under test, HTTP helpers, the /proc views of
job processes, punch-train under mpirun, and independent readers of the
files the engine writes (safetensors, npz, IDX, JSON).

Imported as `import punchtest`: tests/meson.build puts tests/pylib on
PYTHONPATH. Debian's /usr/bin/python3 with its stdlib, python3-numpy and
python3-requests; a script whose dependency is missing skips (exit 77).

Reporting. A script is a list of named cases run by `main`:

    def cases():
        with punchtest.Daemon(["--hold"]) as d:
            punchtest.case("submit", submit, d)
            punchtest.case("cancel", cancel, d)

    if __name__ == "__main__":
        punchtest.main(cases)

`check` records a failed condition and goes on, so one run reports every
failing check; `require` and `fail` also end the current case (for what the
rest of a case cannot do without); `skip` ends the case as skipped, or the
whole script where no case runs. `main` exits 1 if anything failed, 77
(meson's "skipped") if nothing ran but skips, else 0. An exception inside
a case fails that case with its traceback; the next case still runs.
"""
import copy
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

try:
    import numpy as np
except ImportError:
    np = None
try:
    import requests
except ImportError:
    requests = None

SKIP_EXIT = 77
DATASETS = "/usr/share/datasets"

# ---- reporting -------------------------------------------------------------


class Failed(Exception):
    """Ends the current case; its message is already recorded."""


class Skipped(Exception):
    """Ends the current case (or, outside one, the script) as skipped."""


_state = {"case": None, "failures": [], "passed": 0, "failed": 0, "skipped": 0}


def _where():
    return "%s: " % _state["case"] if _state["case"] else ""


def check(cond, msg):
    """Record a failure unless cond holds, and go on. Returns bool(cond).
    msg may be a callable, called only on failure (for costly detail)."""
    if cond:
        return True
    text = msg() if callable(msg) else str(msg)
    _state["failures"].append(_where() + text)
    print("FAIL: %s%s" % (_where(), text), file=sys.stderr, flush=True)
    return False


def require(cond, msg):
    """check(cond, msg), ending the current case when it fails."""
    if not check(cond, msg):
        raise Failed()
    return cond


def fail(msg):
    """Record a failure and end the current case."""
    check(False, msg)
    raise Failed()


def skip(msg):
    """End the current case as skipped (the whole script outside a case)."""
    raise Skipped(msg)


def case(name, fn, *args, **kwargs):
    """Run fn(*args, **kwargs) as the case `name`; return its value, or None
    if it failed before returning or skipped."""
    before = len(_state["failures"])
    _state["case"] = name
    result = None
    t0 = time.monotonic()
    try:
        result = fn(*args, **kwargs)
    except Failed:
        pass
    except Skipped as e:
        print("SKIP: %s: %s" % (name, e), flush=True)
        _state["skipped"] += 1
        _state["case"] = None
        return None
    except Exception as e:  # a broken case must not hide the cases after it
        check(False, "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
    finally:
        _state["case"] = None
    if len(_state["failures"]) > before:
        _state["failed"] += 1
        print("FAIL: case %s (%d failed checks)" % (name, len(_state["failures"]) - before),
              file=sys.stderr, flush=True)
    else:
        _state["passed"] += 1
        print("ok: %s (%.1f s)" % (name, time.monotonic() - t0), flush=True)
    return result


def main(cases):
    """Run cases() (which calls case() for each), then exit with the verdict: 1 if any
    check failed, 77 if nothing ran but skips, else 0. A failure or skip
    outside any case (e.g. a daemon that would not start) counts too."""
    # meson's timeout sends SIGTERM first: unwind, so every `with Daemon` and
    # `finally` cleans up what it started before the SIGKILL that follows.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    try:
        cases()
    except Failed:
        pass
    except Skipped as e:
        print("SKIP: %s" % e, flush=True)
        _state["skipped"] += 1
    except Exception as e:
        check(False, "outside any case: %s: %s\n%s" % (type(e).__name__, e,
                                                        traceback.format_exc()))
    failures = _state["failures"]
    print("%d passed, %d failed, %d skipped; %d failed checks" % (
        _state["passed"], _state["failed"], _state["skipped"], len(failures)), flush=True)
    for f in failures:
        print("  FAIL: " + f.splitlines()[0], file=sys.stderr, flush=True)
    if failures:
        sys.exit(1)
    if _state["skipped"] and not _state["passed"]:
        sys.exit(SKIP_EXIT)
    sys.exit(0)


def wait_for(get, what, timeout=60, interval=0.05):
    """Poll get() until it returns a truthy value, and return that value.
    After `timeout` seconds, fail the case: "timed out waiting for WHAT"
    (what may be a callable taking the last value, for detail)."""
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if value:
            return value
        if time.monotonic() >= deadline:
            fail("timed out after %g s waiting for %s" % (
                timeout, what(value) if callable(what) else "%s (last: %r)" % (what, value)))
        time.sleep(interval)


def require_numpy():
    """numpy, or skip."""
    if np is None:
        skip("%s has no numpy (apt-get install python3-numpy)" % sys.executable)
    return np


# ---- paths and files -------------------------------------------------------

def source_path(*parts):
    return os.path.join(os.environ.get("PUNCH_SOURCE_ROOT", "."), *parts)


def build_path(*parts):
    return os.path.join(os.environ.get("PUNCH_BUILD_ROOT", "build"), *parts)


def engine_path():
    return build_path("engine", "punch-train")


def require_engine():
    """The path of a punch-train that can train (its usage names --out), or skip."""
    path = engine_path()
    if not os.access(path, os.X_OK):
        skip("punch-train is missing at %s (build the engine first)" % path)
    try:
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        skip("punch-train --help failed: %s" % e)
    if "--out" not in out.stdout + out.stderr:
        skip("%s cannot train yet (its usage has no --out)" % path)
    return path


def require_dataset(name, datasets=DATASETS):
    """Skip unless DATASETS/name (a file or directory) exists."""
    if not os.path.exists(os.path.join(datasets, name)):
        skip("%s is not in %s (apt-get install the dataset package)" % (name, datasets))


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def read_json(path):
    with open(path) as f:
        return json.load(f)


def write_script(path, text):
    """An executable shell script (mode 700); returns its path."""
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o700)
    return path


def wait_file(path, timeout=60):
    """Wait for a non-empty file; return its stripped text."""
    def text():
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return ""
    return wait_for(text, "%s to be written" % path, timeout)


def touch(path):
    open(path, "w").close()


# ---- tensor files, read independently of the engine ------------------------

def safetensors_header(blob):
    """Parse a safetensors file's bytes: (header dict, offset of the data)."""
    require(len(blob) >= 8, "safetensors: %d bytes, no length" % len(blob))
    (n,) = struct.unpack("<Q", blob[:8])
    require(8 + n <= len(blob), "safetensors: header of %d bytes past the end" % n)
    return json.loads(blob[8:8 + n]), 8 + n


def safetensors_tensors(blob):
    """The F32 tensors of a safetensors file's bytes, by name (numpy arrays)."""
    header, base = safetensors_header(blob)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        require(t["dtype"] == "F32", "safetensors %s: dtype %s" % (name, t["dtype"]))
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(blob[base + a:base + b], dtype="<f4").reshape(t["shape"])
    return out


def load_safetensors(path):
    """The tensors of a safetensors file, by name."""
    with open(path, "rb") as f:
        return safetensors_tensors(f.read())


def load_npz(path):
    """The arrays of an .npz file, by name (copies: the file is closed)."""
    with np.load(path) as z:
        return {k: z[k].copy() for k in z.files}


def read_idx(path):
    """A gzipped IDX file (MNIST's format) as a numpy array of its dims."""
    import gzip
    with gzip.open(path, "rb") as f:
        blob = f.read()
    ndim = blob[3]
    dims = struct.unpack(">" + "I" * ndim, blob[4:4 + 4 * ndim])
    return np.frombuffer(blob, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist(part, lo=0, hi=None, datasets=DATASETS):
    """Samples [lo, hi) of Fashion-MNIST's `part` ("train", "t10k"): raw
    uint8 images (n, 784) and labels (n,)."""
    base = os.path.join(datasets, "fashion-mnist", part)
    x = read_idx(base + "-images-idx3-ubyte.gz")
    y = read_idx(base + "-labels-idx1-ubyte.gz")
    return x.reshape(len(x), -1)[lo:hi], y[lo:hi]


# ---- punch-train under mpirun ----------------------------------------------

# Sanitizer builds: Open MPI's own allocations look like leaks at exit.
MPI_ENV = {"ASAN_OPTIONS": "detect_leaks=0"}


def mpirun_cmd(ranks, env_names=()):
    """mpirun for `ranks` ranks on this machine, passing env_names on."""
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
    for k in env_names:
        cmd += ["-x", k]
    return cmd


def train(engine, spec_path, out, ranks=None, env=None, resume=False, datasets=DATASETS,
          timeout=120, expect_ok=True):
    """Run punch-train on a job file (under mpirun unless ranks is None)
    with MPI_ENV and env added to the environment; return the finished
    process. Fails the case on a non-zero exit when expect_ok."""
    env_all = dict(MPI_ENV, **(env or {}))
    cmd = [] if ranks is None else mpirun_cmd(ranks, env_all)
    cmd += [engine, spec_path, "--out", out, "--datasets", datasets]
    if resume:
        cmd.append("--resume")
    p = subprocess.run(cmd, env={**os.environ, **env_all}, capture_output=True, text=True,
                       timeout=timeout)
    if expect_ok and p.returncode != 0:
        fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    if p.returncode == 0:
        check_runlog(out)
    return p


def check_runlog(out):
    """Every run a test makes checks its progress.jsonl against
    schema/rundir.md (runlog_schema.py): so every trainer's lines are
    checked wherever a test runs it, at the cost of reading one file."""
    if not os.path.exists(os.path.join(out, "history.json")):
        return
    import runlog_schema
    problems = runlog_schema.check_run(out)
    check(not problems, "%s/progress.jsonl against schema/rundir.md:\n  %s"
          % (out, "\n  ".join(problems[:20])))


# ---- processes, from /proc -------------------------------------------------

def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name (state first,
    then ppid, pgrp, session...), or None if there is no such process."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def pid_alive(pid):
    """A process that exists and is not a zombie."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _pids():
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def session_processes(sid):
    """Live (non-zombie) processes of a session."""
    found = []
    for pid in _pids():
        fields = proc_stat(pid)
        if fields and int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append(pid)
    return found


def job_processes(path):
    """Live processes whose command line names path (a run or data dir):
    [(pid, command line)]."""
    found = []
    needle = path.encode()
    for pid in _pids():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if needle in cmd and pid_alive(pid):
            found.append((pid, cmd.replace(b"\0", b" ").decode(errors="replace")[:200]))
    return found


def wait_ended(p, what, pids=(), timeout=60):
    """Process p's exit code and the seconds until it exited. After
    `timeout` s (a bound against hanging the suite, not a timing check) it
    and `pids` are killed and the case fails with `what`."""
    t0 = time.monotonic()
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        kill_pids(pids)
        fail(what)
    return rc, time.monotonic() - t0


def kill_pids(pids):
    """SIGKILL each pid, ignoring those already gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- HTTP ------------------------------------------------------------------

def run_client(args, home, env_extra=None, timeout=60):
    """Run the punch client (PUNCH, else the build's) with args, HOME=home,
    none of the caller's PUNCH_* settings but the source and build roots,
    no XDG_CONFIG_HOME nor proxy, then env_extra; the CompletedProcess."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PUNCH_") or k in ("PUNCH_SOURCE_ROOT", "PUNCH_BUILD_ROOT")}
    for name in ("XDG_CONFIG_HOME", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                 "all_proxy", "ALL_PROXY"):
        env.pop(name, None)
    env["HOME"] = home
    env.update(env_extra or {})
    exe = os.environ.get("PUNCH") or build_path("client", "punch")
    return subprocess.run([exe] + list(args), capture_output=True, text=True, env=env,
                          timeout=timeout)


def bearer(secret):
    """The Authorization header for a secret."""
    return {"Authorization": "Bearer " + secret}


def http(method, url, secret=None, body=None, headers=None, session=None, timeout=30, **kw):
    """One HTTP request. secret: sent as a bearer token. body: bytes or str
    as they are, anything else as JSON text."""
    h = dict(headers or {})
    if secret is not None:
        h.update(bearer(secret))
    if body is not None:
        kw["data"] = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return (session or requests).request(method, url, headers=h, timeout=timeout, **kw)


def expect_error(r, status, what):
    """Check an error reply: the status and a JSON {"error", "field"} body.
    Returns the body, with "error" "" and "field" None where it lacks them."""
    check(r.status_code == status, "%s: want %d, got %d: %s" % (what, status, r.status_code,
                                                                 r.text[:300]))
    body = {}
    if check(r.headers.get("Content-Type", "").startswith("application/json"),
             "%s: error is not JSON: %s" % (what, r.headers.get("Content-Type"))):
        try:
            body = r.json()
        except ValueError:
            body = None
        if check(isinstance(body, dict), "%s: error body %r" % (what, r.text[:300])):
            check(isinstance(body.get("error"), str) and body["error"],
                  "%s: no error message" % what)
            check("field" in body, "%s: no field key" % what)
        else:
            body = {}
    return {"error": "", "field": None, **body}


# ---- jobs --------------------------------------------------------------------

FINAL_STATES = ("succeeded", "failed", "cancelled", "timeout")


def synthetic_job(name, inputs, layers, n_train, n_test, epochs, **data):
    """A job on synthetic data (nothing to download): dense layers given as
    (units, activation) pairs."""
    return {"name": name,
            "model": {"input": [inputs],
                      "layers": [{"type": "dense", "units": u, "activation": a}
                                 for u, a in layers]},
            "data": dict({"format": "synthetic", "synthetic_train": n_train,
                          "synthetic_test": n_test}, **data),
            "training": {"epochs": epochs, "batch_size": 32, "seed": 1}}


# Two epochs of a 4-class softmax: done in well under a second.
QUICK_JOB = synthetic_job("quick", 8, [(4, "softmax")], 256, 64, 2, num_classes=4)
_WIDE = [(256, "relu"), (10, "softmax")]
# A few seconds of training (about 3 s on 2 cores, ~3x that under ASan):
# long enough to be seen running, short enough to end while a test waits.
MEDIUM_JOB = synthetic_job("medium", 64, _WIDE, 60000, 100, 10)
# Trains for a very long time: for cancel, time limits and restarts.
LONG_JOB = synthetic_job("long", 64, _WIDE, 60000, 100, 100000)


def char_lm_job(name, vocab, train, embedding, units, max_length, training):
    """A character language model of the uploaded text `train` (a dataset
    reference, "@name"): an embedding, an LSTM returning every step, a
    softmax over the vocabulary; `training` as given."""
    return {"name": name,
            "model": {"input": {"tokens": vocab}, "layers": [
                {"type": "embedding", "output_dim": embedding},
                {"type": "lstm", "units": units, "return_sequences": True},
                {"type": "dense", "units": vocab, "activation": "softmax"}]},
            "data": {"format": "text", "train": train, "tokenizer": "char",
                     "num_classes": vocab, "max_length": max_length},
            "training": training}


def job_like(base, **changes):
    """A deep copy of a job with top-level keys replaced."""
    job = copy.deepcopy(base)
    job.update(changes)
    return job


def stand_in_engine(body):
    """A shell script standing in for punch-train: $spec is the job file it
    was given, $out its run directory (--out), then body runs."""
    return """#!/bin/sh
spec="$1"
out=""
while [ $# -gt 0 ]; do
  [ "$1" = "--out" ] && out="$2"
  shift
done
""" + body


# A stand-in for punch-train, for scheduling tests: each rank writes what it
# sees of CUDA_VISIBLE_DEVICES to OUT/gpus.RANK, then runs until OUT/release
# exists (at most 60 s) and exits 0.
STAND_IN_ENGINE = stand_in_engine("""echo "${CUDA_VISIBLE_DEVICES-unset}" > "$out/gpus.$OMPI_COMM_WORLD_RANK"
i=0
while [ ! -e "$out/release" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
""")


# ---- a punchcardd under test ---------------------------------------------------

# The users of a Daemon's secrets file: bob's secret is stored hashed, root
# is an admin.
SECRETS = {"alice": "alice-secret-0123", "bob": "bob-secret-4567", "root": "admin-secret-89ab"}


def default_secrets_entries():
    return [
        {"secret": SECRETS["alice"], "identity": "alice"},
        {"secret_sha256": hashlib.sha256(SECRETS["bob"].encode()).hexdigest(), "identity": "bob"},
        {"secret": SECRETS["root"], "identity": "root", "role": "admin"},
    ]


def make_tls(directory, client=False):
    """A throwaway CA and a server certificate it signs for 127.0.0.1 and
    localhost (and, with client, a client certificate), made with openssl in
    directory. A dict of PEM paths: ca, cert, key (and client_cert,
    client_key); skips when openssl is missing."""
    openssl = shutil.which("openssl")
    if not openssl:
        skip("openssl is not installed (apt-get install openssl)")
    p = {name: os.path.join(directory, name + ".pem") for name in
         ("ca", "ca_key", "cert", "key", "client_cert", "client_key")}

    def run(*args):
        subprocess.run([openssl] + list(args), check=True, capture_output=True)

    def sign(cert, key, subject, ext):
        csr = cert + ".csr"
        extfile = cert + ".ext"
        with open(extfile, "w") as f:
            f.write(ext + "\n")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", subject)
        run("x509", "-req", "-in", csr, "-CA", p["ca"], "-CAkey", p["ca_key"],
            "-CAcreateserial", "-days", "2", "-out", cert, "-extfile", extfile)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", p["ca_key"], "-out", p["ca"], "-days", "2", "-subj", "/CN=punchtest CA")
    sign(p["cert"], p["key"], "/CN=localhost",
         "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    if client:
        sign(p["client_cert"], p["client_key"], "/CN=alice",
             "extendedKeyUsage=clientAuth")
    return p


class Daemon:
    """A punchcardd on 127.0.0.1 at a free port, with a temporary directory
    for its data dir (unless given), secrets file and log. As a context
    manager it starts on entry; on exit it is stopped with SIGTERM (a check:
    it must exit 0) when the block ended normally, killed otherwise, and in
    both cases the processes of its jobs are killed (jobs outlive punchcardd
    by design) and the directory removed. It can be stopped, killed and
    started again (same data dir, port, secrets; the log goes on).

    args: extra flags (it always gets --listen, --data-dir, --secrets,
    --tick-ms 50, and --engine with the build's punch-train unless args or
    engine_script name another; as root also --allow-root-jobs, unless args
    name --run-as or root_jobs is False). entries: the secrets file
    (default: SECRETS' alice, bob hashed, root the admin)."""

    def __init__(self, args=(), data_dir=None, port=None, entries=None, root_jobs=True):
        if requests is None:
            skip("%s has no requests (apt-get install python3-requests)" % sys.executable)
        self.tmp = tempfile.mkdtemp(prefix="punchd-")
        self.data_dir = data_dir or os.path.join(self.tmp, "data")
        self.secrets_path = os.path.join(self.tmp, "secrets.json")
        if entries is None:
            self.entries, self.secrets = default_secrets_entries(), dict(SECRETS)
        else:  # the users req() can name: those whose secret is given in clear
            self.entries = list(entries)
            self.secrets = {e["identity"]: e["secret"] for e in entries if "secret" in e}
        write_json(self.secrets_path, self.entries)
        self.args = list(args)
        self.root_jobs = root_jobs
        self.port = port or free_port()
        self.proc = None
        self.down = True  # not running, and meant not to be
        self.log = None
        self.log_path = os.path.join(self.tmp, "punchcardd.log")
        self.session = requests.Session()
        # With --tls-cert: "https" and the CA file requests verifies with
        # (passed to each request: the environment's CA bundle would
        # override a session's); cert: a client (cert, key) for mutual TLS.
        self.scheme = "http"
        self.verify = True
        self.cert = None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                check(self.down or self.alive(), lambda: "punchcardd died during the test "
                      "(exit %s):\n%s" % (self.proc.returncode, self.read_log()[-4000:]))
                self.stop()
        finally:
            self.cleanup()
        return False

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (self.scheme, self.port)

    def add_user(self, identity, secret, role=None):
        """Add a user to the secrets file (before start, or then SIGHUP)."""
        entry = {"secret": secret, "identity": identity}
        if role:
            entry["role"] = role
        self.entries.append(entry)
        self.secrets[identity] = secret
        write_json(self.secrets_path, self.entries)

    def engine_script(self, name, text):
        """Use a shell script written into the temporary directory as the engine."""
        self.args += ["--engine", write_script(os.path.join(self.tmp, name), text)]

    def _spawn(self):
        exe = os.environ.get("PUNCHCARDD") or build_path("daemon", "punchcardd")
        cmd = [exe, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", self.data_dir,
               "--secrets", self.secrets_path, "--tick-ms", "50"] + self.args
        if not any(a.startswith("--engine") for a in self.args):
            cmd += ["--engine", engine_path()]
        # As root, jobs run as root only when allowed (a test that wants
        # them run as another account passes --run-as).
        if os.geteuid() == 0 and self.root_jobs and "--run-as" not in self.args:
            cmd += ["--allow-root-jobs"]
        # A sanitizer build of the engine: LeakSanitizer reports Open MPI's
        # own allocations at exit; the daemon itself stays leak-checked.
        # Added to a test's own --engine-env (a second flag would replace it).
        asan = "ASAN_OPTIONS=detect_leaks=0"
        if "--engine-env" in cmd[:-1]:
            i = cmd.index("--engine-env") + 1
            cmd[i] += " " + asan
        else:
            cmd += ["--engine-env", asan]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        self.down = False

    def start(self):
        """Start it and wait until /healthz answers; returns self. Fails the
        case (with the log) if it exits or does not answer in 20 s."""
        self._spawn()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail("punchcardd exited with %s:\n%s" % (self.proc.returncode, self.read_log()))
            try:
                if requests.get(self.url + "/healthz", timeout=1, verify=self.verify,
                                cert=self.cert).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.05)
        fail("punchcardd did not answer /healthz:\n" + self.read_log())

    def start_refused(self, timeout=30):
        """Start it expecting it to refuse to run: its exit code."""
        self._spawn()
        self.down = True
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.log.close()

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        """SIGTERM and wait: the clean shutdown, checked to exit 0. One that
        hangs is killed after 30 s (with PUNCHTEST_DEBUG_HANG set and gdb
        installed, its threads' stacks are printed first)."""
        self.down = True
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                if os.environ.get("PUNCHTEST_DEBUG_HANG") and shutil.which("gdb"):
                    out = subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-ex",
                                          "thread apply all bt"], capture_output=True, text=True)
                    print(out.stdout[-12000:], file=sys.stderr)
                self.proc.kill()
                self.proc.wait()
                fail("punchcardd ignored SIGTERM:\n" + self.read_log()[-3000:])
            finally:
                self.log.close()
            check(rc == 0, lambda: "punchcardd exited %d after SIGTERM:\n%s" % (
                rc, self.read_log()[-4000:]))

    def kill9(self):
        self.down = True
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def restart(self, args=None):
        """Stop it (SIGTERM) if it runs, and start it again, with new flags
        if given; returns self."""
        self.stop()
        if args is not None:
            self.args = list(args)
        return self.start()

    def cleanup(self):
        """Kill it and every process of its jobs, by pid; remove its
        temporary directory."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        if self.log:
            self.log.close()
        # Only the daemon that made the data dir owns its jobs (another one
        # may have been pointed at it, to be refused).
        runs = os.path.join(self.data_dir, "runs", "")
        for _ in range(100 if self.data_dir.startswith(self.tmp) else 0):
            left = job_processes(runs)
            if not left:
                break
            kill_pids(pid for pid, _ in left)
            time.sleep(0.05)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- requests ---------------------------------------------------------------

    def req(self, method, path, user=None, secret=None, body=None, **kw):
        """A request as `user` (a name in self.secrets) or with `secret`."""
        if user:
            secret = self.secrets[user]
        kw.setdefault("verify", self.verify)
        kw.setdefault("cert", self.cert)
        return http(method, self.url + path, secret=secret, body=body, session=self.session,
                    **kw)

    def submit(self, user, job=None, **kw):
        return self.req("POST", "/api/v1/jobs", user, body=job or QUICK_JOB, **kw)

    def submit_id(self, user, job=None):
        """Submit and return the new job's id; the case ends unless 201."""
        r = self.submit(user, job)
        require(r.status_code == 201, "submit as %s: %d %s" % (user, r.status_code, r.text[:300]))
        return r.json()["id"]

    def job(self, user, job_id):
        r = self.req("GET", "/api/v1/jobs/" + job_id, user)
        require(r.status_code == 200, "GET job %s: %d %s" % (job_id, r.status_code, r.text))
        return r.json()

    def wait_state(self, user, job_id, states, timeout=60, poll=0.1):
        """Poll until the job is in one of `states`; return the job object."""
        def reached():
            j = self.job(user, job_id)
            last[0] = j
            return j if j["state"] in states else None
        last = [None]
        return wait_for(reached, lambda _: "job %s to be %s: it stayed %s\nlog:\n%s\ntrain.log:\n%s"
                        % (job_id, "/".join(states), last[0] and last[0]["state"],
                           self.read_log()[-4000:], self.train_log(job_id)),
                        timeout, poll)

    def run_dir(self, job_id):
        return os.path.join(self.data_dir, "runs", job_id)

    def punch(self, user, *args, timeout=60):
        """Run the punch client as user against this daemon (no PUNCH_*
        setting of the caller's, a HOME of its own); the CompletedProcess."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PUNCH_")}
        env.update(PUNCH_URL=self.url, PUNCH_SECRET=self.secrets[user], HOME=self.tmp)
        exe = os.environ.get("PUNCH") or build_path("client", "punch")
        return subprocess.run([exe] + list(args), capture_output=True, text=True, env=env,
                              timeout=timeout)

    def train_log(self, job_id):
        try:
            with open(os.path.join(self.run_dir(job_id), "train.log"), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return "(no train.log)"

    def supervisor(self, job_id, timeout=30):
        """The job's supervisor.json, once written."""
        path = os.path.join(self.run_dir(job_id), "supervisor.json")

        def read():
            try:
                return read_json(path)
            except (OSError, ValueError):
                return None
        return wait_for(read, "supervisor.json of job " + job_id, timeout)

    def release(self, job_id):
        """Let a job of the stand-in engine end."""
        touch(os.path.join(self.run_dir(job_id), "release"))
