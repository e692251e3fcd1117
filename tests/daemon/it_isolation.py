"""it_isolation.py — users cannot see, list, cancel or read each other's jobs:
another user's job answers exactly like an unknown id (404), so its existence
does not leak, nor does a short id's prefix match; an admin sees all. Runs with --hold (no engine needed);
it_runs.py repeats the download checks on finished jobs with real files."""
import punchtest
from punchtest import SECRETS, Daemon, check, expect_error


def cases():
    with Daemon(["--hold", "--slots", "2"]) as d:
        a = d.submit_id("alice")
        b = d.submit_id("bob")
        punchtest.case("reads answer like an unknown id", reads, d, a, b)
        punchtest.case("lists", lists, d, a, b)
        punchtest.case("seed endpoints", seed, d, a, b)
        punchtest.case("short ids", short_ids, d, a, b)


def short_ids(d, a, b):
    """Issue 31 #15: the first characters of an id (4 or more) name the
    caller's job they begin; another user's job stays a 404 like any
    unknown id, so a prefix probes nothing; an admin's reach all."""
    for n in (4, 6, 11):
        j = d.req("GET", "/api/v1/jobs/" + a[:n], "alice")
        check(j.status_code == 200 and j.json()["id"] == a, "alice, %d chars: %d %s"
              % (n, j.status_code, j.text[:200]))
        expect_error(d.req("GET", "/api/v1/jobs/%s/events" % a[:n], "bob"), 404,
                     "bob, %d chars of alice's id" % n)
    check(d.req("GET", "/api/v1/jobs/%s/events" % b[:5], "bob").status_code == 200, "bob's own")
    check(d.req("GET", "/api/v1/jobs/" + a[:6], "root").json()["id"] == a, "admin")
    expect_error(d.req("GET", "/api/v1/jobs/" + a[:3], "alice"), 404, "3 characters")


def reads(d, a, b):
    unknown = "0123456789ab" if a != "0123456789ab" and b != "0123456789ab" else "ba9876543210"
    for path in ("", "/history", "/weights", "/weights?format=npz", "/logs", "/logs?offset=0",
                 "/events"):
        theirs = d.req("GET", "/api/v1/jobs/%s%s" % (a, path), "bob")
        nothing = d.req("GET", "/api/v1/jobs/%s%s" % (unknown, path), "bob")
        e1 = expect_error(theirs, 404, "bob reads alice's job" + path)
        e2 = expect_error(nothing, 404, "bob reads an unknown job" + path)
        check(e1["error"].replace(a, "ID") == e2["error"].replace(unknown, "ID"),
              "404 bodies differ: %r vs %r" % (e1, e2))
        check(set(theirs.headers) - {"Date"} == set(nothing.headers) - {"Date"},
              "404 headers differ")
    expect_error(d.req("DELETE", "/api/v1/jobs/" + a, "bob"), 404, "bob cancels alice's job")
    check(d.job("alice", a)["state"] == "queued", "alice's job survived bob's cancel")
    # ?secret= is the same identity check.
    expect_error(d.req("GET", "/api/v1/jobs/%s?secret=%s" % (a, SECRETS["bob"])), 404, "?secret=")


def lists(d, a, b):
    ids = [j["id"] for j in d.req("GET", "/api/v1/jobs", "bob").json()["jobs"]]
    check(ids == [b], "bob's list: %s" % ids)
    ids = [j["id"] for j in d.req("GET", "/api/v1/jobs", "alice").json()["jobs"]]
    check(ids == [a], "alice's list: %s" % ids)
    ids = {j["id"] for j in d.req("GET", "/api/v1/jobs", "root").json()["jobs"]}
    check(ids == {a, b}, "admin's list: %s" % ids)


def seed(d, a, b):
    """The seed endpoints act on the caller's own current job only; the
    admin may cancel anyone's job."""
    r = d.req("GET", "/api/state?secret=" + SECRETS["bob"])
    check(r.json()["id"] == b, r.text)
    r = d.req("GET", "/api/cancel?secret=" + SECRETS["bob"])
    check(r.status_code == 200 and r.json()["id"] == b, r.text)
    check(d.job("alice", a)["state"] == "queued", "bob's seed cancel touched alice's job")
    r = d.req("DELETE", "/api/v1/jobs/" + a, "root")
    check(r.status_code == 200 and r.json()["state"] == "cancelled", r.text)


if __name__ == "__main__":
    punchtest.main(cases)
