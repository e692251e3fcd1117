"""it_strangers.py — a pid recorded for a job is only trusted together with
its start time. Two running jobs lose their processes while punchcardd is
down (kill -9), and their records are made to name a live, unrelated
process (a `sleep` in its own session) with the start time of someone else,
as after the pid space wraps: one in the store (supervisor and session), one
only in supervisor.json (a supervisor the store never recorded). After a
restart both jobs fail with an error that says the pid is another process's,
and the strangers are still alive."""
import os
import sqlite3
import subprocess

import punchtest
from punchtest import (FINAL_STATES, LONG_JOB, Daemon, check, job_processes, kill_pids,
                       pid_alive, proc_stat, session_processes, wait_for, write_json)


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "2"]) as d:
        punchtest.case("a restarted daemon leaves processes that reuse a job's pids alone",
                       reused_pids, d)


def start_time(pid):
    return int(proc_stat(pid)[19])


def kill_job(d, jid):
    """Kill the job's supervisor first (so no exit.json is written), then the
    rest of its processes, and wait until none is left."""
    sup = d.supervisor(jid)
    kill_pids([sup["supervisor_pid"]])
    wait_for(lambda: not pid_alive(sup["supervisor_pid"]), "the supervisor to die", timeout=30)
    for _ in range(200):
        left = session_processes(sup["sid"]) + [p for p, _ in job_processes(d.run_dir(jid))]
        if not left:
            break
        kill_pids(left)
        wait_for(lambda: not any(pid_alive(p) for p in left), "the job's processes to die",
                 timeout=30)
    exit_json = os.path.join(d.run_dir(jid), "exit.json")
    check(not os.path.exists(exit_json), "exit.json written by a SIGKILLed supervisor")


def reused_pids(d):
    in_store = d.submit_id("alice", LONG_JOB)
    in_file = d.submit_id("bob", LONG_JOB)
    for user, jid in (("alice", in_store), ("bob", in_file)):
        d.wait_state(user, jid, ("running",), timeout=60)
        d.supervisor(jid)
    d.kill9()
    kill_job(d, in_store)
    kill_job(d, in_file)
    strangers = [subprocess.Popen(["sleep", "600"], start_new_session=True) for _ in range(2)]
    try:
        a, b = (s.pid for s in strangers)
        wrong_a, wrong_b = start_time(a) - 7, start_time(b) - 7
        db = sqlite3.connect(os.path.join(d.data_dir, "punchcard.db"))
        with db:
            db.execute("UPDATE jobs SET supervisor_pid = ?, supervisor_start = ?, sid = ? "
                       "WHERE id = ?", (a, wrong_a, a, in_store))
            db.execute("UPDATE jobs SET supervisor_pid = NULL, supervisor_start = NULL, "
                       "sid = NULL, state = 'starting' WHERE id = ?", (in_file,))
        db.close()
        write_json(os.path.join(d.run_dir(in_store), "supervisor.json"),
                   {"supervisor_pid": a, "supervisor_start": wrong_a, "sid": a,
                    "sid_start": wrong_a})
        write_json(os.path.join(d.run_dir(in_file), "supervisor.json"),
                   {"supervisor_pid": b, "supervisor_start": wrong_b, "sid": b,
                    "sid_start": wrong_b})
        d.start()
        for user, jid, s in (("alice", in_store, strangers[0]), ("bob", in_file, strangers[1])):
            j = d.wait_state(user, jid, FINAL_STATES, timeout=30)
            check(s.poll() is None and pid_alive(s.pid),
                  "the stranger %d was killed (exit %s)" % (s.pid, s.returncode))
            check(j["state"] == "failed", "job %s: %s" % (jid, j))
            check("pid %d now belongs to another process" % s.pid in (j.get("error") or ""),
                  "job %s's error: %r" % (jid, j.get("error")))
    finally:
        for s in strangers:
            s.kill()
            s.wait()


if __name__ == "__main__":
    punchtest.main(cases)
