"""it_memory.py — a job's memory is estimated at submit and bounded at run
time. The issue's model (31 dense 20000x20000 layers: 49.6 GB of weights,
four times that with gradients and Adam's state) is refused with 400 naming
the estimate and the limit, while a normal job runs; where this host has a
writable memory cgroup, a job that goes past its ceiling (a stand-in engine
that fills 1 GiB under --host-memory-mb 300) is killed by the kernel and
fails saying so, and its cgroup is removed."""
import os
import re

import punchtest
from punchtest import (FINAL_STATES, QUICK_JOB, STAND_IN_ENGINE, Daemon, check, expect_error,
                       job_like, touch)

HUGE = job_like(QUICK_JOB, name="huge",
                model={"input": [20000],
                       "layers": [{"type": "dense", "units": 20000} for _ in range(31)]},
                data={"format": "synthetic", "synthetic_train": 100, "synthetic_test": 10,
                      "num_classes": 20000})

# Fills 1 GiB (written, so resident) and holds it for a moment.
GREEDY = """#!/bin/sh
exec python3 -c 'import time; b = b"x" * (1 << 30); time.sleep(2)'
"""


def cases():
    punchtest.require_engine()
    with Daemon() as d:
        punchtest.case("a model that can never fit is refused; a normal job runs", refused, d)
    with Daemon(["--host-memory-mb", "300"]) as d:
        d.engine_script("greedy.sh", GREEDY)
        d.restart()
        punchtest.case("a job past its memory ceiling is killed", ceiling, d)
    # Each quick job is estimated at about 64 MiB: 100 MiB holds one of them.
    with Daemon(["--host-memory-mb", "100", "--slots", "4", "--max-running", "0"]) as d:
        d.engine_script("stand-in.sh", STAND_IN_ENGINE)
        d.restart()
        punchtest.case("memory is charged like slots", charged, d)


def refused(d):
    r = d.submit("alice", HUGE)
    body = expect_error(r, 400, "the issue's model")
    check(body["field"] == "model", "field %r" % body["field"])
    check(re.search(r"needs an estimated [0-9.]+ GiB", body["error"]) and
          "parameters 46.2 GiB" in body["error"] and "host_memory_mb" in body["error"],
          "error %r" % body["error"])
    jid = d.submit_id("alice", QUICK_JOB)
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    check(j["state"] == "succeeded", "normal job: %s\n%s" % (j, d.train_log(jid)))
    check("memory ceiling" in d.train_log(jid), "train.log says nothing of a memory ceiling:\n"
          + d.train_log(jid))


def ceiling(d):
    jid = d.submit_id("alice", QUICK_JOB)
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    log = d.train_log(jid)
    m = re.search(r"memory ceiling 300.0 MiB \(cgroup v\d\)", log)
    if not m:
        punchtest.skip("no writable memory cgroup here:\n" + log[-600:])
    check(j["state"] == "failed", "greedy job: %s\n%s" % (j, log))
    check("went past its memory ceiling of 300.0 MiB" in (j.get("error") or ""),
          "error %r; train.log:\n%s" % (j.get("error"), log))
    # The user's log names no server path (issue 31 #15); the cgroup, named
    # for the job, is gone.
    check("/sys/fs/cgroup" not in log, "train.log shows a cgroup path:\n" + log[-600:])
    left = [os.path.join(top, n) for top, dirs, _ in os.walk("/sys/fs/cgroup")
            for n in dirs if n in (jid, "job-" + jid)]
    check(not left, "the job's cgroup is left: %s" % left)


def charged(d):
    """Two one-rank jobs, four free slots, memory for one: the second waits."""
    a = d.submit_id("alice", QUICK_JOB)
    b = d.submit_id("alice", QUICK_JOB)
    d.wait_state("alice", a, ("running",), timeout=60)
    j = d.job("alice", b)
    check(j["state"] == "queued" and j["waiting_for"] == "resources", "second job: %s" % j)
    touch(os.path.join(d.run_dir(a), "release"))
    d.wait_state("alice", b, ("running",), timeout=60)
    touch(os.path.join(d.run_dir(b), "release"))
    for jid in (a, b):
        j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
        check(j["state"] == "succeeded", "%s: %s" % (jid, j))


if __name__ == "__main__":
    punchtest.main(cases)
