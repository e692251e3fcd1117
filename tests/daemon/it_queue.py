"""it_queue.py — what a queued job's queue_position and waiting_for say,
against a real punchcardd with a stand-in engine whose ranks run until told
to end: a job of a user at the per-user running limit waits ("running_limit")
while a later job of another user is ahead of it in run order (fair share)
and waits for slots ("resources"); once slots free up the other user's job
starts first; a held queue says "hold"; a job that is not queued has none."""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from punchd import QUICK_JOB, Daemon, check, stand_in_engine, wait_file  # noqa: E402

FINAL = ("succeeded", "failed", "cancelled", "timeout")


def job(name, workers=1):
    j = copy.deepcopy(QUICK_JOB)
    j["name"] = name
    if workers > 1:
        j["distributed"] = {"trainer": "allreduce", "workers": workers}
    return j


def release(d, jid):
    open(os.path.join(d.run_dir(jid), "release"), "w").close()


def check_limit_and_resources():
    d = Daemon(["--slots", "2", "--max-running", "1"])
    d.args += ["--engine", stand_in_engine(d.tmp)]
    try:
        d.start()
        a1 = d.submit("alice", job("a1")).json()["id"]
        wait_file(os.path.join(d.run_dir(a1), "gpus.0"))
        a2 = d.submit("alice", job("a2")).json()["id"]
        b1 = d.submit("bob", job("b1", workers=2)).json()["id"]
        j_a2, j_b1 = d.job("alice", a2), d.job("bob", b1)
        # Fair share puts bob's first job before alice's second; alice's
        # waits for her running job whatever its place, bob's for slots.
        check(j_b1["queue_position"] == 1 and j_b1["waiting_for"] == "resources", j_b1)
        check(j_a2["queue_position"] == 2 and j_a2["waiting_for"] == "running_limit", j_a2)
        check(d.job("alice", a1)["waiting_for"] is None, "a running job waits for nothing")
        release(d, a1)
        d.wait_state("alice", a1, FINAL, timeout=30)
        d.wait_state("bob", b1, ("running",), timeout=30)
        j_a2 = d.job("alice", a2)
        check(j_a2["state"] == "queued" and j_a2["queue_position"] == 1, j_a2)
        check(j_a2["waiting_for"] == "resources", j_a2)
        release(d, b1)
        d.wait_state("alice", a2, ("running",), timeout=30)
        release(d, a2)
        d.wait_state("alice", a2, FINAL, timeout=30)
        d.stop()
    finally:
        d.cleanup()


def check_hold():
    d = Daemon(["--slots", "2", "--hold"])
    try:
        d.start()
        r = d.submit("alice", job("held"))
        check(r.status_code == 201, r.text)
        j = d.job("alice", r.json()["id"])
        check(j["state"] == "queued" and j["waiting_for"] == "hold", j)
        d.stop()
    finally:
        d.cleanup()


def main():
    check_limit_and_resources()
    check_hold()
    print("ok")


if __name__ == "__main__":
    main()
