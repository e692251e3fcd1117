"""it_profile.py — `punch profile ID` against a real punchcardd and
punch-train: a tiny synthetic job run with training.profile prints a table
with a row per layer (its index and type) and the step phases, and --json
prints the run directory's profile.json byte for byte; a job run without
it exits 5 saying how to get one; an unknown id exits 5 too."""
import json
import os
import re
import shutil
import tempfile

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, job_like, synthetic_job


PROFILED = job_like(synthetic_job("profiled", 8, [(16, "relu"), (4, "softmax")], 256, 64, 1,
                                  num_classes=4), name="profiled")
PROFILED["model"]["layers"][1:1] = [{"type": "dropout", "rate": 0.2}]
PROFILED["training"]["profile"] = True


def punch(d, home, *args):
    return punchtest.run_client(args, home, {"PUNCH_URL": d.url,
                                             "PUNCH_SECRET": d.secrets["alice"]})


def finished(d, jid):
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=120)
    punchtest.require(j["state"] == "succeeded", "job %s: %s\n%s" % (jid, j, d.train_log(jid)))


def table(d, home, jid):
    r = punch(d, home, "profile", jid)
    check(r.returncode == 0, "punch profile: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    lines = r.stdout.splitlines()
    check(lines and lines[0].startswith("job %s: 8 training steps profiled" % jid), r.stdout)
    for i, layer in enumerate(PROFILED["model"]["layers"]):
        row = [ln for ln in lines if re.match(r"\s*%d\s+%s\s" % (i, layer["type"]), ln)]
        check(len(row) == 1, "no row for layer %d (%s):\n%s" % (i, layer["type"], r.stdout))
        check(len(row[0].split()) == 8, "layer row: %r" % row[0])
    for phase in ("load", "forward", "loss", "backward"):
        check(any(ln.split()[:1] == [phase] for ln in lines), "phase %s:\n%s" % (phase, r.stdout))

    r = punch(d, home, "profile", "--json", jid)
    check(r.returncode == 0, "punch profile --json: exit %d %s" % (r.returncode, r.stderr))
    with open(os.path.join(d.run_dir(jid), "profile.json")) as f:
        check(r.stdout == f.read(), "--json is not the run directory's profile.json")
    check(len(json.loads(r.stdout)["layers"]) == len(PROFILED["model"]["layers"]), r.stdout)


def not_profiled(d, home, jid):
    for extra in ((), ("--json",)):
        r = punch(d, home, "profile", *extra, jid)
        check(r.returncode == 5, "unprofiled job: exit %d %s" % (r.returncode, r.stderr))
        want = "job %s has no profile.json: submit it with training.profile: true" % jid
        check(want in r.stderr and r.stdout == "", "stderr: %r stdout: %r" % (r.stderr, r.stdout))


def unknown(d, home):
    r = punch(d, home, "profile", "j-19700101-0001")
    check(r.returncode == 5 and "no job j-19700101-0001" in r.stderr,
          "unknown id: exit %d %s" % (r.returncode, r.stderr))


def cases():
    punchtest.require_engine()
    home = tempfile.mkdtemp(prefix="punch-profile-")
    try:
        with Daemon(["--slots", "2", "--max-running", "2"]) as d:
            profiled = d.submit_id("alice", PROFILED)
            plain = d.submit_id("alice", QUICK_JOB)
            finished(d, profiled)
            finished(d, plain)
            punchtest.case("punch profile prints a table", table, d, home, profiled)
            punchtest.case("a job without a profile", not_profiled, d, home, plain)
            punchtest.case("an unknown job", unknown, d, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    punchtest.main(cases)
