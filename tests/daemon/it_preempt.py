"""it_preempt.py — priority preemption with the local scheduler on one
machine, against a real punchcardd and punch-train: one slot, so two jobs
cannot run at once. Bob's priority-0 job, checkpointing every epoch, holds
it; Alice's priority-5 job preempts it after the grace (a small one here)
and runs at once (while Bob's job, its processes stopped for a moment,
has not yet ended on its SIGTERM, Alice's shows waiting_for "preemption");
Bob's job goes back to the queue, resumes from its
checkpoint when the slot is free, and succeeds with each epoch once in its
history. A job that opts out (resources.preemptible: false) keeps running
past the grace, the waiting job saying it waits for resources, until its
user cancels it."""
import json
import os
import signal
import time

import punchtest
from punchtest import Daemon, check, wait_for

GRACE = 2
EPOCHS = 100
# 0.1 s an epoch on a quiet core, 0.5 s on busy ones: the epochs left after
# the second must outlast the grace and the preemption on a quiet machine
# too (24 epochs once ended 3 s after the start, before the urgent job came).
LOW = punchtest.synthetic_job("low", 64, [(256, "relu"), (10, "softmax")], 60000, 100, EPOCHS)
HIGH = punchtest.job_like(punchtest.QUICK_JOB, name="urgent",
                          resources={"priority": 5})


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "1", "--preempt-grace", str(GRACE), "--kill-grace", "20"]) as d:
        punchtest.case("a higher priority preempts; the preempted job resumes", preempts, d)
        punchtest.case("resources.preemptible: false is left to finish", opted_out, d)


def running_after_epoch(d, user, jid):
    def ready():
        j = d.job(user, jid)
        epoch = (j.get("progress") or {}).get("epoch") or 0
        # "epoch" is the one in progress: past the first, it is checkpointed.
        return j if epoch >= 2 or j["state"] in punchtest.FINAL_STATES else None
    j = wait_for(ready, "a first epoch of " + jid, timeout=120)
    punchtest.require(j["state"] == "running", "the low job ended first: %s" % j["state"])
    check(os.path.exists(os.path.join(d.run_dir(jid), "checkpoints", "ckpt.bin")),
          "a checkpoint before the preemption")


def session_pids(d, jid):
    """The job's processes: those in the session of its mpirun
    (supervisor.json's sid), which this test's daemon started."""
    sid = punchtest.read_json(os.path.join(d.run_dir(jid), "supervisor.json"))["sid"]
    pids = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.getsid(int(name)) == sid:
                pids.append(int(name))
        except OSError:
            pass
    return pids


def signal_pids(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def preempts(d):
    low = d.submit_id("bob", LOW)
    running_after_epoch(d, "bob", low)
    # Stopped, Bob's ranks cannot end on the preemption's SIGTERM (it waits,
    # pending) until they are continued: the preemption stays in flight
    # (kill_grace is 20 s) and the urgent job must say it waits for it.
    frozen = session_pids(d, low)
    punchtest.require(frozen, "no process in the session of job " + low)
    submitted = time.time()
    signal_pids(frozen, signal.SIGSTOP)
    try:
        high = d.submit_id("alice", HIGH)
        last = {}

        def waits_for_preemption():
            last.update(d.job("alice", high))
            return last["waiting_for"] == "preemption" or None
        wait_for(waits_for_preemption, lambda _: "waiting_for \"preemption\": %r" % last,
                 timeout=GRACE + 15)
        check(last["state"] == "queued", last)
    finally:
        signal_pids(frozen, signal.SIGCONT)
    j = d.wait_state("alice", high, ["running", "succeeded", "failed"], timeout=GRACE + 30)
    waited = time.time() - submitted
    check(waited < GRACE + 15, "the urgent job started %.1f s after submit" % waited)
    end = d.wait_state("alice", high, punchtest.FINAL_STATES, timeout=60)
    check(end["state"] == "succeeded", "%s\n%s" % (end, d.train_log(high)))

    end = d.wait_state("bob", low, punchtest.FINAL_STATES, timeout=180)
    check(end["state"] == "succeeded", "%s\n%s" % (end, d.train_log(low)))
    events = d.req("GET", "/api/v1/jobs/%s/events" % low, "bob").json()["events"]
    details = [e["detail"] for e in events]
    check("preempted by %s (priority 5)" % high in details, events)
    check("resumed after preemption" in details, events)
    trail = [(e["from"], e["to"]) for e in events]
    check(("running", "queued") in trail and trail[-1][1] == "succeeded", trail)
    hist = d.req("GET", "/api/v1/jobs/%s/history" % low, "bob").json()
    check(len(hist["loss"]) == EPOCHS, "each epoch once in the history: %s" % hist["loss"])
    with open(os.path.join(d.run_dir(low), "progress.jsonl")) as f:
        starts = [json.loads(line) for line in f if '"start"' in line]
    check(len(starts) == 2 and starts[1].get("resumed"), "start events: %s" % starts)


def opted_out(d):
    spec = punchtest.job_like(LOW, name="keep", resources={"preemptible": False})
    spec["training"]["epochs"] = 100000  # until cancelled
    low = d.submit_id("bob", spec)
    running_after_epoch(d, "bob", low)
    high = d.submit_id("alice", HIGH)
    time.sleep(GRACE + 1.5)
    j = d.job("alice", high)
    punchtest.require(d.job("bob", low)["state"] == "running", "the job opting out ended early")
    check(j["state"] == "queued" and j["waiting_for"] == "resources", j)
    check(d.req("POST", "/api/v1/jobs/%s/cancel" % low, "bob").status_code == 200, "cancel")
    end = d.wait_state("bob", low, punchtest.FINAL_STATES, timeout=60)
    check(end["state"] == "cancelled", "%s\n%s" % (end, d.train_log(low)))
    events = d.req("GET", "/api/v1/jobs/%s/events" % low, "bob").json()["events"]
    check(not any("preempted" in (e["detail"] or "") for e in events), events)
    end = d.wait_state("alice", high, punchtest.FINAL_STATES, timeout=60)
    check(end["state"] == "succeeded", end)


if __name__ == "__main__":
    punchtest.main(cases)
