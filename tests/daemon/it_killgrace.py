"""it_killgrace.py — the SIGKILL escalation: a job whose processes ignore
SIGTERM (as a rank stuck in a collective may) is still ended — SIGKILL from
punchcardd after --kill-grace, or from the supervisor's sweep of mpirun's
session once mpirun quits — on cancel and on its time limit, and leaves no
process behind.
The "engine" here is a deliberately stubborn shell script: what is tested is
punchcardd's supervision, not training (it_processes.py covers real ranks)."""
import punchtest
from punchtest import (FINAL_STATES, QUICK_JOB, Daemon, check, job_like, job_processes,
                       session_processes, wait_for)

STUBBORN = """#!/bin/sh
# Ignore SIGTERM here and in every child (the disposition is inherited).
trap '' TERM
echo "stubborn rank up"
while :; do sleep 0.2; done
"""


def cases():
    d = Daemon(["--slots", "2", "--kill-grace", "1"])
    d.engine_script("stubborn.sh", STUBBORN)
    with d:
        punchtest.case("cancel", cancel, d)
        punchtest.case("time limit", time_limit, d)


def session_of(d, jid):
    """The job's mpirun session, once the stubborn rank has set its trap."""
    sid = d.supervisor(jid)["sid"]
    wait_for(lambda: len(session_processes(sid)) >= 2 and "stubborn rank up" in d.train_log(jid),
             lambda _: "job %s to start its processes:\n%s" % (jid, d.train_log(jid)), timeout=30)
    return sid


def ended_cleanly(d, jid, sid, want_state):
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    check(j["state"] == want_state, "%s: %s\n%s" % (want_state, j, d.train_log(jid)))
    wait_for(lambda: not session_processes(sid) and not job_processes(d.run_dir(jid)),
             lambda _: "job %s to leave nothing behind: %s" % (jid, job_processes(d.run_dir(jid))),
             timeout=20)
    return j


def cancel(d):
    jid = d.submit_id("alice")
    d.wait_state("alice", jid, ("running",), timeout=60)
    sid = session_of(d, jid)
    check(d.req("DELETE", "/api/v1/jobs/" + jid, "alice").status_code == 200, "cancel")
    ended_cleanly(d, jid, sid, "cancelled")
    # Processes that ignore SIGTERM were killed: by punchcardd after the
    # grace period, or by the supervisor's sweep when mpirun gave up first.
    check("SIGKILL" in d.read_log() or "stray processes" in d.train_log(jid),
          "no forced kill recorded:\n%s\n%s" % (d.read_log(), d.train_log(jid)))


def time_limit(d):
    # Long enough for mpirun to bring the rank up on a loaded machine (the
    # test needs to see the processes before the limit ends them): 6 s was
    # seen to run out before the rank was up with a build running beside.
    jid = d.submit_id("alice", job_like(QUICK_JOB, resources={"time_limit_s": 15}))
    d.wait_state("alice", jid, ("running",), timeout=60)
    sid = session_of(d, jid)
    j = ended_cleanly(d, jid, sid, "timeout")
    check("time limit" in (j["error"] or ""), j)


if __name__ == "__main__":
    punchtest.main(cases)
