"""it_restart.py — punchcardd can be stopped (SIGTERM) or killed (-9) while
jobs run and queue, and loses nothing: after a restart queued jobs are still
queued, a running job is re-adopted (same supervisor), a job that ended
while the daemon was down gets its true final state from its run directory,
and every job's results download. Also: jobs held in the queue across a
restart start in the policy's order (fair share between users)."""
import os

import punchtest
from punchtest import (FINAL_STATES, LONG_JOB, MEDIUM_JOB, Daemon, check, job_processes,
                       pid_alive, wait_for)


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "1"]) as d:
        jobs = punchtest.case("SIGTERM leaves jobs running and queued", sigterm, d)
        if jobs:
            punchtest.case("kill -9 leaves them too; the re-adopted job is controlled",
                           kill9, d, *jobs)
        punchtest.case("a job that ends while the daemon is down", ended_while_down, d)
        punchtest.case("held jobs start in policy order after a restart", held_order, d)


def sigterm(d):
    """A long job runs, two quick ones queue; a restart finds them so.
    Returns (a, b, c, the supervisor's pid)."""
    a = d.submit_id("alice", LONG_JOB)
    d.wait_state("alice", a, ("running",), timeout=60)
    b = d.submit_id("bob")
    c = d.submit_id("alice")
    sup = d.supervisor(a)["supervisor_pid"]
    d.stop()
    check(pid_alive(sup), "SIGTERM of the daemon killed the job's supervisor")
    d.start()
    ja = d.job("alice", a)
    punchtest.require(ja["state"] == "running", "after SIGTERM+restart: %s" % ja)
    check(d.job("bob", b)["state"] == "queued" and d.job("alice", c)["state"] == "queued",
          "queued jobs after restart")
    return a, b, c, sup


def kill9(d, a, b, c, sup):
    started = d.job("alice", a)["started_at"]
    d.kill9()
    check(pid_alive(sup), "kill -9 of the daemon killed the job's supervisor")
    d.start()
    ja = d.job("alice", a)
    check(ja["state"] == "running" and ja["started_at"] == started, "re-adopted: %s" % ja)
    check(d.supervisor(a)["supervisor_pid"] == sup, "a second supervisor was started")
    check(d.job("bob", b)["state"] == "queued", "b after kill -9")
    # The re-adopted job is still controlled: cancel it; the queue moves on.
    check(d.req("DELETE", "/api/v1/jobs/" + a, "alice").status_code == 200, "cancel a")
    check(d.wait_state("alice", a, FINAL_STATES, timeout=60)["state"] == "cancelled",
          "a cancelled")
    for user, jid in (("bob", b), ("alice", c)):
        j = d.wait_state(user, jid, FINAL_STATES, timeout=120)
        check(j["state"] == "succeeded", "%s after restart: %s\n%s" % (jid, j, d.train_log(jid)))
        r = d.req("GET", "/api/v1/jobs/%s/weights" % jid, user)
        check(r.status_code == 200 and len(r.content) > 8, "weights of %s" % jid)
    check(job_processes(d.run_dir(a)) == [], "processes of the cancelled job remain")


def ended_while_down(d):
    """It gets its true final state, and its result, from the run directory."""
    e = d.submit_id("bob", MEDIUM_JOB)
    j = d.wait_state("bob", e, ("running",) + FINAL_STATES, timeout=60, poll=0.02)
    punchtest.require(j["state"] == "running", "the medium job was never seen running: %s" % j)
    d.kill9()
    exit_json = os.path.join(d.run_dir(e), "exit.json")
    wait_for(lambda: os.path.exists(exit_json), "the job to end while the daemon is down",
             timeout=120, interval=0.1)
    d.start()
    j = d.wait_state("bob", e, FINAL_STATES, timeout=30)
    check(j["state"] == "succeeded" and j["exit_code"] == 0, "ended while down: %s" % j)
    check(j["result"] is not None, "result recovered from progress.jsonl: %s" % j)
    check(d.req("GET", "/api/v1/jobs/%s/history" % e, "bob").status_code == 200, "history")


def held_order(d):
    """Alice submitted three before bob's two; they alternate."""
    d.restart(["--slots", "1", "--hold"])
    users = ("alice", "alice", "alice", "bob", "bob")
    order = [d.submit_id(u) for u in users]
    d.restart(["--slots", "1"])
    jobs = [d.wait_state(u, i, FINAL_STATES, timeout=120) for u, i in zip(users, order)]
    check(all(j["state"] == "succeeded" for j in jobs), [j["state"] for j in jobs])
    run_order = [j["owner"] for j in sorted(jobs, key=lambda j: j["started_at"])]
    check(run_order == ["alice", "bob", "alice", "bob", "alice"], "run order %s" % run_order)


if __name__ == "__main__":
    punchtest.main(cases)
