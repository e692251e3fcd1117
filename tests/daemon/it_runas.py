"""it_runas.py — jobs not as root. Started as root without run_as,
punchcardd refuses to start (saying why) unless --allow-root-jobs; with
--run-as nobody a real job trains as nobody: its run directory and what the
engine wrote there belong to nobody; a data dir under a directory nobody
cannot pass is refused at start, naming it. Root only (skipped otherwise)."""
import os
import pwd

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, wait_for


def cases():
    if os.geteuid() != 0:
        punchtest.skip("needs root (to start punchcardd as root)")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        punchtest.skip("no account named nobody")
    punchtest.require_engine()
    punchtest.case("as root without run_as it refuses to start", refuses)
    for program in (punchtest.engine_path(), os.environ["PUNCHCARDD"]):
        if not can_execute(nobody, program):
            punchtest.skip("nobody cannot execute %s (a build tree under a private home, "
                           "e.g. /root): a job as nobody cannot start" % program)
    punchtest.case("a data dir nobody cannot reach is refused", unreachable)
    d = Daemon(["--run-as", "nobody"])
    # The job (as nobody) must be able to reach its run directory.
    os.chmod(d.tmp, 0o711)
    with d:
        punchtest.case("a job runs as nobody", runs_as, d, nobody)


def can_execute(user, path):
    """Whether `user` may execute `path` (every directory above it included)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os._exit(0 if os.access(path, os.X_OK) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def refuses():
    d = Daemon(root_jobs=False)
    try:
        rc = d.start_refused()
        check(rc != 0, "started as root without run_as or --allow-root-jobs")
        check("--allow-root-jobs" in d.read_log() and "run_as" in d.read_log(),
              "the refusal does not say what to do:\n" + d.read_log())
        check(d.read_log().count("would run every job as root") == 1,
              "the refusal is not said once:\n" + d.read_log())
    finally:
        d.cleanup()


def unreachable():
    """A directory above the data dir closed to run_as: refused at start,
    naming it, not jobs failing on "./job.json: Permission denied"."""
    d = Daemon(["--run-as", "nobody"])
    try:
        os.chmod(d.tmp, 0o700)
        rc = d.start_refused()
        log = d.read_log()
        check(rc != 0, "started with a data dir nobody cannot reach")
        check("cannot reach the run directories" in log and "%s is closed" % d.tmp in log,
              "the refusal does not name the closed directory:\n" + log[-2000:])
    finally:
        d.cleanup()


def runs_as(d, nobody):
    jid = d.submit_id("alice", QUICK_JOB)
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    check(j["state"] == "succeeded", "job as nobody: %s\n%s" % (j, d.train_log(jid)))
    run = d.run_dir(jid)
    for name in ("", "weights.safetensors", "progress.jsonl"):
        path = os.path.join(run, name)
        wait_for(lambda: os.path.exists(path), "%s to exist" % path, timeout=10)
        check(os.stat(path).st_uid == nobody.pw_uid,
              "%s belongs to uid %d" % (name or "the run directory", os.stat(path).st_uid))
    check("jobs run as nobody" in d.read_log(), "the log does not say who jobs run as")


if __name__ == "__main__":
    punchtest.main(cases)
