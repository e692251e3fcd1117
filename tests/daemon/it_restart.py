"""it_restart.py — punchcardd can be stopped (SIGTERM) or killed (-9) while
jobs run and queue, and loses nothing: after a restart queued jobs are still
queued, a running job is re-adopted (same supervisor), a job that ended
while the daemon was down gets its true final state from its run directory,
and every job's results download. Also: jobs held in the queue across a
restart start in the policy's order (fair share between users)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from punchd import (LONG_JOB, MEDIUM_JOB, Daemon, check, job_processes,  # noqa: E402
                    require_engine)

FINAL = ("succeeded", "failed", "cancelled", "timeout")


def supervisor_pid(d, jid):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(d.run_dir(jid), "supervisor.json")) as f:
                return json.load(f)["supervisor_pid"]
        except (OSError, ValueError):
            time.sleep(0.05)
    check(False, "no supervisor.json for " + jid)


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def restart(d, args=None):
    nd = Daemon(args if args is not None else d.args, data_dir=d.data_dir, port=d.port)
    nd.secrets_path = d.secrets_path  # same users
    nd.tmp_owner = d
    return nd.start()


def main():
    require_engine()
    d = Daemon(["--slots", "1"])
    daemons = [d]
    try:
        d.start()
        # 1. A long job runs, two quick ones queue; SIGTERM leaves the job running.
        a = d.submit("alice", LONG_JOB).json()["id"]
        d.wait_state("alice", a, ("running",), timeout=60)
        b = d.submit("bob").json()["id"]
        c = d.submit("alice").json()["id"]
        sup = supervisor_pid(d, a)
        d.stop()
        check(pid_alive(sup), "SIGTERM of the daemon killed the job's supervisor")
        d = restart(d)
        daemons.append(d)
        ja = d.job("alice", a)
        check(ja["state"] == "running", "after SIGTERM+restart: %s" % ja)
        check(d.job("bob", b)["state"] == "queued" and d.job("alice", c)["state"] == "queued",
              "queued jobs after restart")

        # 2. kill -9 with the job running and two queued: the same.
        started = ja["started_at"]
        d.kill9()
        check(pid_alive(sup), "kill -9 of the daemon killed the job's supervisor")
        d = restart(d)
        daemons.append(d)
        ja = d.job("alice", a)
        check(ja["state"] == "running" and ja["started_at"] == started, "re-adopted: %s" % ja)
        check(supervisor_pid(d, a) == sup, "a second supervisor was started")
        check(d.job("bob", b)["state"] == "queued", "b after kill -9")
        # The re-adopted job is still controlled: cancel it; the queue moves on.
        check(d.req("DELETE", "/api/v1/jobs/" + a, "alice").status_code == 200, "cancel a")
        check(d.wait_state("alice", a, FINAL, timeout=60)["state"] == "cancelled", "a cancelled")
        for user, jid in (("bob", b), ("alice", c)):
            j = d.wait_state(user, jid, FINAL, timeout=120)
            check(j["state"] == "succeeded", "%s after restart: %s\n%s" % (jid, j, d.train_log(jid)))
            r = d.req("GET", "/api/v1/jobs/%s/weights" % jid, user)
            check(r.status_code == 200 and len(r.content) > 8, "weights of %s" % jid)
        check(job_processes(d.run_dir(a)) == [], "processes of the cancelled job remain")

        # 3. A job that ends while the daemon is dead gets its true final state.
        e = d.submit("bob", MEDIUM_JOB).json()["id"]
        j = d.wait_state("bob", e, ("running",) + FINAL, timeout=60, poll=0.02)
        check(j["state"] == "running", "the medium job was never seen running: %s" % j)
        d.kill9()
        exit_json = os.path.join(d.run_dir(e), "exit.json")
        deadline = time.monotonic() + 120
        while not os.path.exists(exit_json) and time.monotonic() < deadline:
            time.sleep(0.1)
        check(os.path.exists(exit_json), "job never ended while the daemon was down")
        d = restart(d)
        daemons.append(d)
        j = d.wait_state("bob", e, FINAL, timeout=30)
        check(j["state"] == "succeeded" and j["exit_code"] == 0, "ended while down: %s" % j)
        check(j["result"] is not None, "result recovered from progress.jsonl: %s" % j)
        check(d.req("GET", "/api/v1/jobs/%s/history" % e, "bob").status_code == 200, "history")

        # 4. Jobs held in the queue start, after a restart, in policy order:
        #    alice submitted three before bob's two; they alternate.
        d.stop()
        d = restart(d, ["--slots", "1", "--hold"])
        daemons.append(d)
        order = [d.submit(u).json()["id"] for u in ("alice", "alice", "alice", "bob", "bob")]
        d.stop()
        d = restart(d, ["--slots", "1"])
        daemons.append(d)
        jobs = [d.wait_state(u, i, FINAL, timeout=120)
                for u, i in zip(("alice",) * 3 + ("bob",) * 2, order)]
        check(all(j["state"] == "succeeded" for j in jobs), [j["state"] for j in jobs])
        run_order = [j["owner"] for j in sorted(jobs, key=lambda j: j["started_at"])]
        check(run_order == ["alice", "bob", "alice", "bob", "alice"], "run order %s" % run_order)
        d.stop()
    finally:
        for x in daemons:
            x.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
