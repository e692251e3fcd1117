"""it_pages.py — GET /api/v1/jobs in pages, against a real punchcardd whose
queue is held: paging through a user's jobs while another client submits
returns every job that existed when paging began exactly once, newest
first, and no other user's; an admin's `user` and `state` filters; `since`;
the default page of 100 and its cursor; the 400s and the 403 of a bad
request; `punch list` with --all, --limit and its default page. Filters
done by the server: `state` as a comma list and `name` (a glob, or a
substring), paged by cursor, and `punch list --state S,S --name P`."""
import json
import os
import subprocess
import threading

import punchtest
from punchtest import QUICK_JOB, Daemon, build_path, check, expect_error, http, require


def cases():
    punchtest.case("pages under concurrent submits", pages)
    punchtest.case("state lists and name patterns, paged", filters)


def page_all(d, user, query, limit):
    """Every job `user` sees through pages of `limit`, in page order."""
    jobs, cursor, pages = [], None, 0
    while True:
        path = "/api/v1/jobs?limit=%d%s" % (limit, query)
        if cursor:
            path += "&after=" + cursor
        r = d.req("GET", path, user)
        require(r.status_code == 200, "%s: %d %s" % (path, r.status_code, r.text[:300]))
        body = r.json()
        require(len(body["jobs"]) <= limit, "a page longer than its limit")
        jobs += body["jobs"]
        pages += 1
        cursor = body["next"]
        if cursor is None:
            return jobs, pages


def pages():
    with Daemon(["--hold", "--max-queued", "0"]) as d:
        before = [d.submit_id("alice") for _ in range(60)]
        bobs = {d.submit_id("bob") for _ in range(12)}

        stop = threading.Event()
        during = []

        def submitter():
            # Its own connection: the main thread's session is not shared.
            while not stop.is_set() and len(during) < 40:
                r = http("POST", d.url + "/api/v1/jobs", secret=d.secrets["alice"],
                         body=QUICK_JOB)
                if r.status_code == 201:
                    during.append(r.json()["id"])

        t = threading.Thread(target=submitter)
        t.start()
        try:
            seen, n_pages = page_all(d, "alice", "", 7)
        finally:
            stop.set()
            t.join()
        ids = [j["id"] for j in seen]
        check(len(ids) == len(set(ids)), "a job repeated across pages")
        check(set(before) <= set(ids), "a job that existed before paging was skipped")
        check(not (set(ids) & bobs), "another user's job in alice's list")
        check(set(ids) <= set(before) | set(during), "a job nobody submitted")
        check(n_pages >= 9, "60 jobs in pages of 7 took %d pages" % n_pages)
        times = [j["submitted_at"] for j in seen]
        check(times == sorted(times, reverse=True), "pages are not newest first")
        check(all(j["owner"] == "alice" and j["queue_position"] for j in seen),
              "a job without its owner or queue position")

        # An admin: one user's jobs, one state.
        got, _ = page_all(d, "root", "&user=bob&state=queued", 5)
        check({j["id"] for j in got} == bobs, "user=bob&state=queued: %d jobs" % len(got))
        got, _ = page_all(d, "root", "&state=running", 5)
        check(got == [], "no job runs in a held queue")
        everyone, _ = page_all(d, "root", "", 1000)
        check(len(everyone) == 60 + 12 + len(during), "the admin sees %d jobs" % len(everyone))
        # A user may name themself.
        mine, _ = page_all(d, "bob", "&user=bob", 50)
        check({j["id"] for j in mine} == bobs, "bob's own jobs by user=bob")

        # since: the jobs submitted at or after a time.
        # (Midway between two submissions: the API rounds times to 15 digits.)
        mid = len(seen) // 2
        pivot = (seen[mid]["submitted_at"] + seen[mid + 1]["submitted_at"]) / 2
        got, _ = page_all(d, "alice", "&since=%r" % pivot, 4)
        now, _ = page_all(d, "alice", "", 1000)
        want = [j["id"] for j in now if j["submitted_at"] >= pivot]
        check([j["id"] for j in got] == want, "since=%r: %d jobs, want %d" % (
            pivot, len(got), len(want)))

        # The default page: the newest 100, then a cursor.
        while len(seen) < 101:
            seen.append({"id": d.submit_id("alice")})
        r = d.req("GET", "/api/v1/jobs", "alice")
        body = r.json()
        check(len(body["jobs"]) == 100 and isinstance(body["next"], str),
              "the default page: %d jobs, next %r" % (len(body["jobs"]), body.get("next")))

        for query, field in (("limit=0", "limit"), ("limit=1001", "limit"),
                             ("limit=ten", "limit"), ("after=zz", "after"),
                             ("after=p", "after"), ("after=" + before[0], "after"),
                             ("since=yesterday", "since"), ("state=sleeping", "state")):
            body = expect_error(d.req("GET", "/api/v1/jobs?" + query, "alice"), 400, query)
            check(body["field"] == field, "%s: field %r" % (query, body["field"]))
        expect_error(d.req("GET", "/api/v1/jobs?user=bob", "alice"), 403, "alice asks for bob's")

        # punch list pages on demand (when the client is built).
        punch = build_path("client", "punch")
        if os.access(punch, os.X_OK):
            mine, _ = page_all(d, "alice", "", 1000)

            def punch_list(*args):
                r = subprocess.run([punch, "--url", d.url, "--secret", d.secrets["alice"],
                                    "list", "--json"] + list(args),
                                   capture_output=True, text=True, timeout=60)
                require(r.returncode == 0, "punch list %s: %s" % (args, r.stderr))
                return [j["id"] for j in json.loads(r.stdout)], r.stderr

            got, _ = punch_list("--all")
            check(got == [j["id"] for j in mine], "punch list --all: %d jobs" % len(got))
            got, note = punch_list("--limit", "3")
            check(got == [j["id"] for j in mine[:3]] and not note, "punch list --limit 3")
            got, note = punch_list()
            check(len(got) == 100 and "--all" in note, "punch list: %d jobs, %r" % (len(got), note))


def filters():
    with Daemon(["--hold", "--max-queued", "0"]) as d:
        made = []  # (id, name, state), oldest first
        for i in range(24):
            name = ("lr-%02d" % i) if i % 3 else ("bs-%02d" % i)
            job_id = d.submit_id("alice", dict(QUICK_JOB, name=name))
            state = "queued"
            if i % 4 == 1:
                r = d.req("POST", "/api/v1/jobs/%s/cancel" % job_id, "alice")
                require(r.status_code in (200, 202), "cancel: %d %s" % (r.status_code, r.text))
                state = "cancelled"
            made.append((job_id, name, state))
        d.submit_id("bob", dict(QUICK_JOB, name="lr-bob"))
        newest = made[::-1]

        def want(states=None, match=None):
            return [i for i, n, s in newest
                    if (states is None or s in states) and (match is None or match(n))]

        for query, expect in (
                ("&state=queued,cancelled", want({"queued", "cancelled"})),
                ("&state=cancelled", want({"cancelled"})),
                ("&state=cancelled,running", want({"cancelled"})),
                ("&name=lr-", want(match=lambda n: "lr-" in n)),
                ("&name=*-1?", want(match=lambda n: n[-2] == "1")),
                ("&name=[!l]*", want(match=lambda n: n[0] != "l")),
                ("&name=lr-&state=cancelled", want({"cancelled"}, lambda n: "lr-" in n)),
                ("&name=nothing", [])):
            for limit in (2, 1000):
                got, n_pages = page_all(d, "alice", query, limit)
                check([j["id"] for j in got] == expect,
                      "%s in pages of %d: %d jobs, want %d" % (query, limit, len(got),
                                                                len(expect)))
        # An admin's several states: everyone's, merged newest first.
        got, _ = page_all(d, "root", "&state=queued,cancelled&name=lr-*", 3)
        check([j["name"] for j in got][0] == "lr-bob" and len(got) == len(
            want(match=lambda n: n.startswith("lr-"))) + 1, "admin, state list and name")

        body = expect_error(d.req("GET", "/api/v1/jobs?state=queued,sleeping", "alice"), 400,
                            "a bad state in a list")
        check(body["field"] == "state" and "sleeping" in body["error"],
              "the 400 names the bad state: %r" % body)
        body = expect_error(d.req("GET", "/api/v1/jobs?name=" + "x" * 129, "alice"), 400,
                            "a long pattern")
        check(body["field"] == "name", "a long pattern: %r" % body)

        punch = build_path("client", "punch")
        if os.access(punch, os.X_OK):
            r = subprocess.run([punch, "--url", d.url, "--secret", d.secrets["alice"], "list",
                                "--json", "--state", "cancelled,queued", "--name", "lr-",
                                "--limit", "3"], capture_output=True, text=True, timeout=60)
            require(r.returncode == 0, "punch list: %s" % r.stderr)
            got = [j["id"] for j in json.loads(r.stdout)]
            check(got == want(match=lambda n: "lr-" in n)[:3],
                  "punch list --state --name --limit 3: %r" % got)


if __name__ == "__main__":
    punchtest.main(cases)
