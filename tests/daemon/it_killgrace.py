"""it_killgrace.py — the SIGKILL escalation: a job whose processes ignore
SIGTERM (as a rank stuck in a collective may) is still ended — SIGKILL from
punchcardd after --kill-grace, or from the supervisor's sweep of mpirun's
session once mpirun quits — on cancel and on its time limit, and leaves no
process behind.
The "engine" here is a deliberately stubborn shell script: what is tested is
punchcardd's supervision, not training (it_processes.py covers real ranks)."""
import copy
import json
import os
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from punchd import QUICK_JOB, Daemon, check, job_processes, session_processes  # noqa: E402

STUBBORN = """#!/bin/sh
# Ignore SIGTERM here and in every child (the disposition is inherited).
trap '' TERM
echo "stubborn rank up"
while :; do sleep 0.2; done
"""


def session_of(d, jid):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(d.run_dir(jid), "supervisor.json")) as f:
                sid = json.load(f)["sid"]
            # Only once the trap is set is the rank stubborn.
            if len(session_processes(sid)) >= 2 and "stubborn rank up" in d.train_log(jid):
                return sid
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    check(False, "job %s never started its processes:\n%s" % (jid, d.train_log(jid)))


def ended_cleanly(d, jid, sid, want_state):
    j = d.wait_state("alice", jid, ("cancelled", "timeout", "failed", "succeeded"), timeout=60)
    check(j["state"] == want_state, "%s: %s\n%s" % (want_state, j, d.train_log(jid)))
    deadline = time.monotonic() + 20
    while session_processes(sid) or job_processes(d.run_dir(jid)):
        check(time.monotonic() < deadline, "left behind: %s" % job_processes(d.run_dir(jid)))
        time.sleep(0.05)
    return j


def main():
    d = Daemon(["--slots", "2", "--kill-grace", "1"])
    try:
        script = os.path.join(d.tmp, "stubborn.sh")
        with open(script, "w") as f:
            f.write(STUBBORN)
        os.chmod(script, stat.S_IRWXU)
        d.args += ["--engine", script]
        d.start()

        jid = d.submit("alice").json()["id"]
        d.wait_state("alice", jid, ("running",), timeout=60)
        sid = session_of(d, jid)
        check(d.req("DELETE", "/api/v1/jobs/" + jid, "alice").status_code == 200, "cancel")
        ended_cleanly(d, jid, sid, "cancelled")
        # Processes that ignore SIGTERM were killed: by punchcardd after the
        # grace period, or by the supervisor's sweep when mpirun gave up first.
        check("SIGKILL" in d.read_log() or "stray processes" in d.train_log(jid),
              "no forced kill recorded:\n%s\n%s" % (d.read_log(), d.train_log(jid)))

        limited = copy.deepcopy(QUICK_JOB)
        # Long enough for mpirun to bring the rank up on a loaded machine
        # (the test needs to see the processes before the limit ends them).
        limited["resources"] = {"time_limit_s": 6}
        jid = d.submit("alice", limited).json()["id"]
        d.wait_state("alice", jid, ("running",), timeout=60)
        sid = session_of(d, jid)
        j = ended_cleanly(d, jid, sid, "timeout")
        check("time limit" in j["error"], j)
        d.stop()
    finally:
        d.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
