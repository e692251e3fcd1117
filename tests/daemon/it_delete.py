"""it_delete.py — deleting finished jobs (issue 31 #2): DELETE on a finished
job forgets its record and events and removes its run directory, answering
200 with the bytes freed; the owner's uploads stay. Another user gets 404 as
for any job they cannot see, the admin may delete anyone's. DELETE on a
queued job still cancels it; POST .../cancel only cancels (409 once
finished), so a cancel can never delete."""
import os

import punchtest
from punchtest import FINAL_STATES, Daemon, check, expect_error


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "1"]) as d:
        punchtest.case("a finished job is deleted with its run directory", owner_deletes, d)
        punchtest.case("a queued job: DELETE cancels, POST cancel never deletes",
                       queued_then_cancel, d)
        punchtest.case("the admin deletes another user's job", admin_deletes, d)


def owner_deletes(d):
    r = d.req("PUT", "/api/v1/datasets/keep.csv", "alice", body=b"label,a\n1,0.5\n0,2\n",
              headers={"Content-Type": "application/octet-stream"})
    punchtest.require(r.status_code in (200, 201), "upload: %d %s" % (r.status_code, r.text))
    jid = d.submit_id("alice")
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=120)
    punchtest.require(j["state"] == "succeeded", "quick job: %s" % j)
    run = d.run_dir(jid)
    punchtest.require(os.path.isdir(run), "run directory %s" % run)

    expect_error(d.req("DELETE", "/api/v1/jobs/" + jid, "bob"), 404, "bob deletes alice's job")
    check(os.path.isdir(run), "bob's DELETE removed nothing")
    expect_error(d.req("POST", "/api/v1/jobs/%s/cancel" % jid, "alice"), 409,
                 "cancel a finished job")

    r = d.req("DELETE", "/api/v1/jobs/" + jid, "alice")
    check(r.status_code == 200, "delete: %d %s" % (r.status_code, r.text))
    body = r.json()
    check(body.get("id") == jid and body.get("deleted") is True, body)
    check(isinstance(body.get("bytes_freed"), (int, float)) and body["bytes_freed"] > 0, body)
    check(not os.path.exists(run), "run directory still there after DELETE")
    expect_error(d.req("GET", "/api/v1/jobs/" + jid, "alice"), 404, "deleted job")
    expect_error(d.req("GET", "/api/v1/jobs/%s/events" % jid, "alice"), 404, "deleted events")
    expect_error(d.req("DELETE", "/api/v1/jobs/" + jid, "alice"), 404, "delete twice")
    listed = d.req("GET", "/api/v1/jobs", "alice").json()["jobs"]
    check(jid not in [x["id"] for x in listed], "deleted job still listed")
    r = d.req("GET", "/api/v1/datasets/keep.csv", "alice")
    check(r.status_code == 200, "the upload went with the job: %d %s" % (r.status_code, r.text))


def queued_then_cancel(d):
    jid = d.submit_id("alice", punchtest.job_like(punchtest.QUICK_JOB, name="held"))
    r = d.req("POST", "/api/v1/jobs/%s/cancel" % jid, "alice")
    check(r.status_code == 200 and "deleted" not in r.json(), r.text)
    d.wait_state("alice", jid, FINAL_STATES, timeout=120)
    expect_error(d.req("POST", "/api/v1/jobs/%s/cancel" % jid, "alice"), 409, "cancel twice")
    check(d.job("alice", jid)["state"] == "cancelled", "a second cancel deleted the job")
    jid2 = d.submit_id("alice", punchtest.job_like(punchtest.QUICK_JOB, name="held2"))
    r = d.req("DELETE", "/api/v1/jobs/" + jid2, "alice")
    check(r.status_code == 200 and r.json().get("state") in ("cancelled", "starting", "running"),
          "DELETE of an unfinished job cancels it: %s" % r.text)
    d.wait_state("alice", jid2, FINAL_STATES, timeout=120)
    r = d.req("DELETE", "/api/v1/jobs/" + jid, "alice")
    check(r.status_code == 200 and r.json().get("deleted") is True, r.text)


def admin_deletes(d):
    jid = d.submit_id("bob", punchtest.job_like(punchtest.QUICK_JOB, name="bobs"))
    d.wait_state("bob", jid, FINAL_STATES, timeout=120)
    r = d.req("DELETE", "/api/v1/jobs/" + jid, "root")
    check(r.status_code == 200 and r.json().get("deleted") is True, r.text)
    expect_error(d.req("GET", "/api/v1/jobs/" + jid, "bob"), 404, "deleted by the admin")


if __name__ == "__main__":
    punchtest.main(cases)
