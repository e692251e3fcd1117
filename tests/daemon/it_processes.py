"""it_processes.py — cancel and time limits end the whole MPI job: after a
cancelled and a timed-out two-rank job, no process of their sessions (mpirun,
ranks) nor their supervisors is left in the process table."""
import copy
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from punchd import (LONG_JOB, Daemon, check, job_processes, require_engine,  # noqa: E402
                    session_processes)


def main():
    require_engine()
    d = Daemon(["--slots", "4", "--max-running", "1", "--kill-grace", "5"])
    try:
        d.start()
        run(d)
        d.stop()
    finally:
        d.cleanup()
    print("ok")


def wait_session(d, jid):
    """The running job's mpirun session, once its ranks are up."""
    path = os.path.join(d.run_dir(jid), "supervisor.json")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                sid = json.load(f)["sid"]
            if len(session_processes(sid)) >= 3:  # mpirun + 2 ranks
                return sid
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    fail_msg = "job %s never had mpirun and 2 ranks up\n%s" % (jid, d.train_log(jid))
    check(False, fail_msg)


def wait_gone(d, jid, sid):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = session_processes(sid) + [p for p, _ in job_processes(d.run_dir(jid))]
        if not left:
            return
        time.sleep(0.1)
    check(False, "processes left after job %s: %s" % (jid, job_processes(d.run_dir(jid))))


def run(d):
    long2 = copy.deepcopy(LONG_JOB)
    long2["distributed"] = {"trainer": "allreduce", "workers": 2}

    # Cancel a running two-rank job.
    jid = d.submit("alice", long2).json()["id"]
    d.wait_state("alice", jid, ("running",), timeout=60)
    sid = wait_session(d, jid)
    r = d.req("DELETE", "/api/v1/jobs/" + jid, "alice")
    check(r.status_code == 200 and r.json()["cancel_requested"], r.text)
    j = d.wait_state("alice", jid, ("cancelled", "failed", "succeeded"), timeout=60)
    check(j["state"] == "cancelled", "cancel: %s" % j)
    wait_gone(d, jid, sid)
    check(os.path.exists(os.path.join(d.run_dir(jid), "exit.json")), "no exit.json")

    # A time limit ends it the same way, as "timeout" with the reason.
    limited = copy.deepcopy(long2)
    # Long enough for mpirun to bring both ranks up on a loaded machine, where
    # starting them can take seconds: the test must see them before the limit.
    limited["resources"] = {"time_limit_s": 8}
    jid = d.submit("bob", limited).json()["id"]
    d.wait_state("bob", jid, ("running",), timeout=60)
    sid = wait_session(d, jid)
    j = d.wait_state("bob", jid, ("timeout", "failed", "succeeded", "cancelled"), timeout=60)
    check(j["state"] == "timeout" and "time limit" in (j["error"] or ""), "time limit: %s" % j)
    check(j["finished_at"] - j["started_at"] >= 8, j)
    wait_gone(d, jid, sid)


if __name__ == "__main__":
    main()
