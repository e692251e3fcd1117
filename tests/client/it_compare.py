"""it_compare.py — comparing runs against a real punchcardd and punch-train:
`punch list --state/--name` keeps only the matching rows (one state, a
comma list of states, a glob, a substring; an unknown state exits 2; the
server filters), `punch list --wide` shows each job's key hyperparameters
and final metrics, and
`punch compare A B` of two quick jobs that differ in their learning rate
prints that path with both values, not the fields they share, then both
jobs' state and final metrics."""
import shutil
import tempfile

import punchtest
from punchtest import FINAL_STATES, LONG_JOB, QUICK_JOB, Daemon, check, job_like

LR_PATH = "training.optimizer.learning_rate"


def lr_job(name, lr):
    job = job_like(QUICK_JOB, name=name)
    job["training"]["optimizer"] = {"name": "sgd", "learning_rate": lr}
    return job


def punch(d, home, *args):
    return punchtest.run_client(args, home, {"PUNCH_URL": d.url,
                                             "PUNCH_SECRET": d.secrets["alice"]})


def listed(d, home, *args):
    """The job ids in the rows of `punch list ARGS`."""
    r = punch(d, home, "list", *args)
    check(r.returncode == 0, "punch list %s: exit %d %s" % (args, r.returncode, r.stderr))
    return {ln.split()[0] for ln in r.stdout.splitlines()[1:] if ln.strip()} - {"no"}


def filters(d, home, a, b, long_id):
    check(listed(d, home) == {a, b, long_id}, "unfiltered list")
    got = listed(d, home, "--state", "cancelled")
    check(got == {long_id}, "--state cancelled: %s" % got)
    got = listed(d, home, "-s", "succeeded,cancelled", "--name", "lr-*")
    check(got == {a, b}, "--state succeeded,cancelled --name 'lr-*': %s" % got)
    got = listed(d, home, "--state", "running", "--state", "cancelled", "--name", "ong")
    check(got == {long_id}, "--state running --state cancelled --name ong: %s" % got)
    got = listed(d, home, "--name", "lr-b")
    check(got == {b}, "--name lr-b: %s" % got)
    check(listed(d, home, "--name", "nothing*") == set(), "--name nothing*")
    r = punch(d, home, "list", "--state", "succeeded,sleeping")
    check(r.returncode == 2 and 'unknown state "sleeping"' in r.stderr,
          "unknown state: exit %d %s" % (r.returncode, r.stderr))


def wide(d, home, a, b):
    """`punch list --wide`: the key hyperparameters (kept by the server at
    submit), EPOCH and the final metrics as columns, each job's value the
    last entry of its history (no request per job)."""
    r = punch(d, home, "list", "--wide", "--state", "succeeded")
    check(r.returncode == 0, "punch list --wide: exit %d %s" % (r.returncode, r.stderr))
    lines = r.stdout.splitlines()
    head = lines[0].split()
    check("EPOCH" in head and "LOSS" in head and "ACCURACY" in head, "header: %s" % lines[0])
    rows = {ln.split()[0]: ln for ln in lines[1:]}

    def cell(jid, name):
        col = lines[0].index(" %s " % name) + 1
        return (rows.get(jid, "")[col:].split() or ["-"])[0]
    for jid, lr in ((a, "0.01"), (b, "0.1")):
        got = [cell(jid, h) for h in ("OPT", "LR", "EPOCHS", "TRAINER", "RANKS")]
        check(got == ["sgd", lr, "2", "single", "1"],
              "hyperparameters of %s: %s in\n%s" % (jid, got, r.stdout))
    for jid in (a, b):
        h = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
        want = h["accuracy"][-1]
        # Columns are padded to the header: the cell starts under its name.
        col = lines[0].index(" ACCURACY ") + 1
        acc = (rows.get(jid, "")[col:].split() or ["-"])[0]
        check(" %d/%d " % (len(h["loss"]), len(h["loss"])) in rows.get(jid, "")
              and acc != "-" and abs(float(acc) - want) < 1e-3,
              "row of %s: %r, want accuracy %.4f" % (jid, rows.get(jid), want))


def compare(d, home, a, b):
    r = punch(d, home, "compare", a, b)
    check(r.returncode == 0, "punch compare: exit %d %s" % (r.returncode, r.stderr))
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines() if ln.strip()}
    check(rows.get("FIELD") == [a, b] and rows.get("RESULT") == [a, b], r.stdout)
    check(rows.get(LR_PATH) == ["0.01", "0.1"], "%s row:\n%s" % (LR_PATH, r.stdout))
    check(rows.get("name") == ["lr-a", "lr-b"], "name row:\n%s" % r.stdout)
    for same in ("training.epochs", "training.batch_size", "training.optimizer.name",
                 "model.layers[0].units"):
        check(same not in rows, "equal field %s shown:\n%s" % (same, r.stdout))
    check(rows.get("state") == ["succeeded", "succeeded"], r.stdout)
    check(rows.get("epochs") == ["2", "2"], r.stdout)
    for metric in ("loss", "accuracy", "test_accuracy"):
        vals = rows.get(metric, [])
        check(len(vals) == 2 and all(0 <= float(v) < 100 for v in vals),
              "%s row:\n%s" % (metric, r.stdout))
    r = punch(d, home, "compare", a[:6], b)  # a short prefix, as other commands take
    check(r.returncode == 0 and r.stdout.splitlines()[0].split()[1:] == [a, b],
          "compare by prefix: exit %d %s%s" % (r.returncode, r.stdout, r.stderr))
    for bad in ((a,), (a,) * 9):
        r = punch(d, home, "compare", *bad)
        check(r.returncode == 2 and "expected 2 to 8 job ids" in r.stderr,
              "compare %d ids: exit %d %s" % (len(bad), r.returncode, r.stderr))
    r = punch(d, home, "compare", a, "j-19700101-0001")
    check(r.returncode == 5, "unknown job: exit %d %s" % (r.returncode, r.stderr))


def cases():
    punchtest.require_engine()
    home = tempfile.mkdtemp(prefix="punch-compare-")
    try:
        with Daemon(["--slots", "2", "--max-running", "2"]) as d:
            a = d.submit_id("alice", lr_job("lr-a", 0.01))
            b = d.submit_id("alice", lr_job("lr-b", 0.1))
            long_id = d.submit_id("alice", LONG_JOB)
            r = d.req("POST", "/api/v1/jobs/%s/cancel" % long_id, "alice")
            punchtest.require(r.status_code in (200, 202), "cancel: %d %s" % (r.status_code, r.text))
            for jid in (a, b):
                j = d.wait_state("alice", jid, FINAL_STATES, timeout=120)
                punchtest.require(j["state"] == "succeeded", "job %s: %s" % (jid, j))
            d.wait_state("alice", long_id, FINAL_STATES, timeout=60)
            punchtest.case("list --state and --name filter the rows", filters, d, home, a, b,
                           long_id)
            punchtest.case("list --wide shows the final metrics", wide, d, home, a, b)
            punchtest.case("compare shows the differing fields and final metrics", compare, d,
                           home, a, b)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    punchtest.main(cases)
