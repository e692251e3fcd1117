"""it_processes.py — cancel and time limits end the whole MPI job: after a
cancelled and a timed-out two-rank job, no process of their sessions (mpirun,
ranks) nor their supervisors is left in the process table."""
import os

import punchtest
from punchtest import (FINAL_STATES, LONG_JOB, Daemon, check, job_like, job_processes,
                       session_processes, wait_for)

LONG2 = job_like(LONG_JOB, distributed={"trainer": "allreduce", "workers": 2})


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "4", "--max-running", "1", "--kill-grace", "5"]) as d:
        punchtest.case("cancel ends a running two-rank job", cancel, d)
        punchtest.case("a time limit ends it the same way", time_limit, d)


def wait_session(d, jid):
    """The running job's mpirun session, once its ranks are up."""
    sid = d.supervisor(jid, timeout=60)["sid"]
    wait_for(lambda: len(session_processes(sid)) >= 3,  # mpirun + 2 ranks
             lambda _: "job %s to have mpirun and 2 ranks up\n%s" % (jid, d.train_log(jid)),
             timeout=60, interval=0.1)
    return sid


def wait_gone(d, jid, sid):
    wait_for(lambda: not session_processes(sid) and not job_processes(d.run_dir(jid)),
             lambda _: "the processes of job %s to end: %s" % (jid, job_processes(d.run_dir(jid))),
             timeout=30, interval=0.1)


def cancel(d):
    jid = d.submit_id("alice", LONG2)
    d.wait_state("alice", jid, ("running",), timeout=60)
    sid = wait_session(d, jid)
    r = d.req("DELETE", "/api/v1/jobs/" + jid, "alice")
    check(r.status_code == 200 and r.json()["cancel_requested"], r.text)
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    check(j["state"] == "cancelled", "cancel: %s" % j)
    wait_gone(d, jid, sid)
    check(os.path.exists(os.path.join(d.run_dir(jid), "exit.json")), "no exit.json")


def time_limit(d):
    """Ends as "timeout" with the reason."""
    # Long enough for mpirun to bring both ranks up on a loaded machine, where
    # starting them can take seconds: the test must see them before the limit
    # (8 s ran out first on a fresh machine with builds running beside).
    limit = 20
    jid = d.submit_id("bob", job_like(LONG2, resources={"time_limit_s": limit}))
    d.wait_state("bob", jid, ("running",), timeout=60)
    sid = wait_session(d, jid)
    j = d.wait_state("bob", jid, FINAL_STATES, timeout=60)
    check(j["state"] == "timeout" and "time limit" in (j["error"] or ""), "time limit: %s" % j)
    check(j["finished_at"] - j["started_at"] >= limit, j)
    wait_gone(d, jid, sid)


if __name__ == "__main__":
    punchtest.main(cases)
