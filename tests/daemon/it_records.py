"""it_records.py — retention keeping the records (--retention-days with
--retention-keep-records): once a finished job is older than retention_days,
its run directory is removed while the job and its events stay, marked
"files_removed": true, and its downloads (weights, history, logs, files)
answer 410 Gone with a message; a recent job keeps its files. The job's age
is set in the store while the daemon is stopped (no clock is faked)."""
import os
import sqlite3

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, expect_error, job_like, wait_for

# Writes the files a download serves, then ends.
ENGINE = punchtest.stand_in_engine("""printf 'weights' > "$out/weights.safetensors"
printf '{"epochs": []}' > "$out/history.json"
echo "epoch 1" >> "$out/train.log"
""")

DOWNLOADS = ["weights", "history", "logs", "files", "files/weights.safetensors"]


def cases():
    with Daemon(["--retention-days", "1", "--retention-keep-records"]) as d:
        d.engine_script("writer.sh", ENGINE)
        d.restart()
        punchtest.case("an old job keeps its record; its files are gone (410)", kept_record, d)


def finished(d, name):
    jid = d.submit_id("alice", job_like(QUICK_JOB, name=name))
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    punchtest.require(j["state"] == "succeeded", "%s: %s\n%s" % (name, j, d.train_log(jid)))
    check(j["files_removed"] is False, "a new job says its files are removed: %s" % j)
    for what in DOWNLOADS:
        r = d.req("GET", "/api/v1/jobs/%s/%s" % (jid, what), "alice")
        check(r.status_code == 200, "%s of a finished job: %d %s" % (what, r.status_code,
                                                                     r.text[:200]))
    return jid


def kept_record(d):
    old, recent = finished(d, "old"), finished(d, "recent")
    events = d.req("GET", "/api/v1/jobs/%s/events" % old, "alice").json()
    d.stop()
    db = sqlite3.connect(os.path.join(d.data_dir, "punchcard.db"))
    with db:
        db.execute("UPDATE jobs SET finished_at = finished_at - 2 * 86400 WHERE id = ?", (old,))
    db.close()
    d.start()
    j = wait_for(lambda: (lambda j: j if j["files_removed"] else None)(d.job("alice", old)),
                 "retention to remove the old job's files", timeout=30)
    check(j["state"] == "succeeded" and j["id"] == old, "the record changed: %s" % j)
    # Retention marks files_removed before the directories go (a crash
    # between leaves the mark, never a record of files that are gone).
    wait_for(lambda: not os.path.exists(d.run_dir(old)), "the old run directory to go",
             timeout=10)
    check(d.req("GET", "/api/v1/jobs/%s/events" % old, "alice").json() == events,
          "the old job's events changed")
    for what in DOWNLOADS:
        r = d.req("GET", "/api/v1/jobs/%s/%s" % (old, what), "alice")
        body = expect_error(r, 410, what + " of an old job")
        check("removed by retention" in body["error"], "%s: %s" % (what, body))
    listed = d.req("GET", "/api/v1/jobs?owner=alice", "alice").json()
    check(any(x["id"] == old and x["files_removed"] for x in listed.get("jobs", [])),
          "the old job is not listed with files_removed: %s" % listed)
    r = d.job("alice", recent)
    check(not r["files_removed"] and os.path.isdir(d.run_dir(recent)),
          "the recent job lost its files: %s" % r)
    check(d.req("GET", "/api/v1/jobs/%s/weights" % recent, "alice").status_code == 200,
          "the recent job's weights")


if __name__ == "__main__":
    punchtest.main(cases)
