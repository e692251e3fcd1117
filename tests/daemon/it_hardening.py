"""it_hardening.py — the issue's low-severity findings: a group- or
world-writable data dir is refused at startup and the store files are 0600;
control characters (C0 such as ESC, TAB, CR/LF; DEL; C1) in any string of a
spec get 400 naming the field; threads_per_worker beyond a host's cores and
time_limit_s beyond --max-time-limit-s get 400, and a job asking no limit
gets the site's; a failed job's error names its data set relative to the
dataset root, not a server path."""
import json
import os
import stat

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, expect_error, job_like


def cases():
    punchtest.case("a group- or world-writable data dir is refused", writable_data_dir)
    punchtest.require_engine()
    with Daemon(["--max-time-limit-s", "100"]) as d:
        punchtest.case("the store files are private", store_private, d)
        punchtest.case("control characters are refused at submit", control_characters, d)
        punchtest.case("site limits on threads and time", site_limits, d)
        punchtest.case("errors name no server path", relative_paths, d)


def writable_data_dir():
    d = Daemon()
    try:
        os.makedirs(d.data_dir)
        os.chmod(d.data_dir, 0o777)
        check(d.start_refused() != 0, "started with a world-writable data dir")
        check("chmod go-w" in d.read_log(), "the refusal says nothing useful:\n" + d.read_log())
    finally:
        d.cleanup()


def store_private(d):
    d.submit_id("alice")  # the WAL file exists once something is written
    for name in ("punchcard.db", "punchcard.db-wal"):
        path = os.path.join(d.data_dir, name)
        if os.path.exists(path):
            mode = stat.S_IMODE(os.stat(path).st_mode)
            check(mode == 0o600, "%s has mode %o" % (name, mode))


def control_characters(d):
    bad = [("name", "evil\x1b[2Jname"), ("name", "bell\x07"), ("name", "two\nlines"),
           ("name", "csi\u009bc"), ("name", "del\x7f")]
    for field, value in bad:
        r = d.submit("alice", job_like(QUICK_JOB, **{field: value}))
        body = expect_error(r, 400, "%s = %r" % (field, value))
        check(body["field"] == field, "%r: field %r" % (value, body["field"]))
    deep = job_like(QUICK_JOB)
    deep["training"]["lr_schedulers"] = [{"name": "model_checkpoint", "monitor": "loss\r"}]
    body = expect_error(d.submit("alice", deep), 400, "a control character deep in the spec")
    check(body["field"] in ("training.lr_schedulers[0].monitor",
                            "training.lr_schedulers[0]"), "field %r" % body["field"])
    check(d.submit("alice", job_like(QUICK_JOB, name="caf\u00e9 \u00a0ok")).status_code == 201,
          "printable UTF-8 refused")


def site_limits(d):
    cores = os.cpu_count()
    r = d.submit("alice", job_like(QUICK_JOB, resources={"threads_per_worker": cores + 1}))
    body = expect_error(r, 400, "more threads than cores")
    check(body["field"] == "resources.threads_per_worker", body)
    r = d.submit("alice", job_like(QUICK_JOB, resources={"time_limit_s": 101}))
    body = expect_error(r, 400, "a time limit over the site's")
    check(body["field"] == "resources.time_limit_s" and "max_time_limit_s" in body["error"], body)
    jid = d.submit_id("alice")
    check(d.job("alice", jid)["time_limit_s"] == 100, "a job asking no limit gets the site's")


def relative_paths(d):
    """Dataset errors name the dataset, never a server path: at submit (a
    name nothing matches) and at run time (one that matches a file's start
    but no dataset: fashion-mnist/train.x)."""
    model = {"input": [784], "layers": [{"type": "dense", "units": 10, "activation": "softmax"}]}
    spec = job_like(QUICK_JOB, model=model,
                    data={"format": "idx", "train": "nope/train", "test": "nope/t10k"})
    e = expect_error(d.submit("bob", spec), 400, "a dataset that is not there")
    check("nope/train" in e["error"], e)
    for server_path in (punchtest.DATASETS, d.data_dir, d.tmp):
        check(server_path not in e["error"], "error shows %s: %s" % (server_path, e))
    punchtest.require_dataset("fashion-mnist")
    spec = job_like(QUICK_JOB, model=model,
                    data={"format": "idx", "train": "fashion-mnist/train.x"})
    jid = d.submit_id("bob", spec)
    j = d.wait_state("bob", jid, FINAL_STATES, timeout=60)
    error = j.get("error") or ""
    check(j["state"] == "failed" and "fashion-mnist/train.x" in error, "the job's error: %s" % j)
    for server_path in (punchtest.DATASETS, d.data_dir, d.tmp):
        check(server_path not in error, "error shows %s: %s" % (server_path, error))


if __name__ == "__main__":
    punchtest.main(cases)
