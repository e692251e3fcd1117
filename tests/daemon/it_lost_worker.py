"""it_lost_worker.py — an asynchronous job through a real punchcardd loses
a worker and still succeeds (issue 34): the daemon launches a DOWNPOUR job
with `mpirun --enable-recovery` (the launcher adds it for the parameter-
server trainers), the engine's test hook (PUNCH_TEST_DIE_RANK/STEP, given
through --engine-env) SIGKILLs worker rank 2 at its 10th step, the server
trains on with the worker left, and the job ends `succeeded` with every
epoch in its history and the lost worker named there. The engine-level
check of the same (both trainer families, the server's loss failing the
job) is dist_async_lost_worker; this one is the user's view."""
import punchtest
from punchtest import FINAL_STATES, Daemon, check

JOB = punchtest.job_like(
    punchtest.synthetic_job("lost-worker", 32, [(32, "relu"), (4, "softmax")], 2000, 200, 2,
                            num_classes=4),
    distributed={"trainer": "downpour", "workers": 3, "communication_window": 4},
    resources={"threads_per_worker": 1})


def cases():
    punchtest.require_engine()
    # The watchdog bound (4 s) lets the server notice the dead worker in
    # seconds rather than the default's minutes.
    d = Daemon(["--slots", "4", "--engine-env",
                "PUNCH_TEST_DIE_RANK=2 PUNCH_TEST_DIE_STEP=10 PUNCH_WATCHDOG_S=4"])
    with d:
        punchtest.case("a DOWNPOUR job that loses a worker succeeds", lost_worker, d)


def lost_worker(d):
    jid = d.submit_id("alice", JOB)
    end = d.wait_state("alice", jid, FINAL_STATES, timeout=90)
    check(end["state"] == "succeeded", lambda: "the job %s: %s\n%s" % (
        jid, end, d.train_log(jid)[-3000:]))
    h = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    lost = [x.get("rank") for x in h.get("lost_workers") or []]
    check(lost == [2], lambda: "lost_workers %r, want rank 2; history keys %s\n%s" % (
        h.get("lost_workers"), sorted(h), d.train_log(jid)[-3000:]))
    check(len(h.get("loss", [])) == 2, "epochs in history: %s" % h.get("loss"))
    print("  worker rank 2 killed: job succeeded, lost_workers %s, loss %s" % (
        h.get("lost_workers"), h.get("loss")))


if __name__ == "__main__":
    punchtest.main(cases)
