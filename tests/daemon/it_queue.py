"""it_queue.py — what a queued job's queue_position and waiting_for say,
against a real punchcardd with a stand-in engine whose ranks run until told
to end: a job of a user at the per-user running limit waits ("running_limit")
while a later job of another user is ahead of it in run order (fair share)
and waits for slots ("resources"); once slots free up the other user's job
starts first; a held queue says "hold"; a job that is not queued has none."""
import os

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, STAND_IN_ENGINE, Daemon, check, job_like, wait_file


def cases():
    punchtest.case("running limit and resources", limit_and_resources)
    punchtest.case("a held queue", hold)


def job(name, workers=1):
    j = job_like(QUICK_JOB, name=name)
    if workers > 1:
        j["distributed"] = {"trainer": "allreduce", "workers": workers}
    return j


def limit_and_resources():
    d = Daemon(["--slots", "2", "--max-running", "1"])
    d.engine_script("stand-in-engine", STAND_IN_ENGINE)
    with d:
        a1 = d.submit_id("alice", job("a1"))
        wait_file(os.path.join(d.run_dir(a1), "gpus.0"))
        a2 = d.submit_id("alice", job("a2"))
        b1 = d.submit_id("bob", job("b1", workers=2))
        j_a2, j_b1 = d.job("alice", a2), d.job("bob", b1)
        # Fair share puts bob's first job before alice's second; alice's
        # waits for her running job whatever its place, bob's for slots.
        check(j_b1["queue_position"] == 1 and j_b1["waiting_for"] == "resources", j_b1)
        check(j_a2["queue_position"] == 2 and j_a2["waiting_for"] == "running_limit", j_a2)
        check(d.job("alice", a1)["waiting_for"] is None, "a running job waits for nothing")
        d.release(a1)
        d.wait_state("alice", a1, FINAL_STATES, timeout=30)
        d.wait_state("bob", b1, ("running",), timeout=30)
        j_a2 = d.job("alice", a2)
        check(j_a2["state"] == "queued" and j_a2["queue_position"] == 1, j_a2)
        check(j_a2["waiting_for"] == "resources", j_a2)
        d.release(b1)
        d.wait_state("alice", a2, ("running",), timeout=30)
        d.release(a2)
        d.wait_state("alice", a2, FINAL_STATES, timeout=30)


def hold():
    with Daemon(["--slots", "2", "--hold"]) as d:
        j = d.job("alice", d.submit_id("alice", job("held")))
        check(j["state"] == "queued" and j["waiting_for"] == "hold", j)


if __name__ == "__main__":
    punchtest.main(cases)
