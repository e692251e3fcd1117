"""it_api.py — every endpoint and error status of a real punchcardd that
holds its queue (--hold: nothing starts, so no engine is needed): submit,
list, get, cancel, events, logs, history/weights 404s, seed endpoints,
healthz, metrics, 400/401/404/405/409/413/429."""
import os

import punchtest
from punchtest import QUICK_JOB, SECRETS, Daemon, check, expect_error, job_like


def cases():
    with Daemon(["--hold", "--slots", "4", "--max-queued", "3"]) as d:
        punchtest.case("healthz", healthz, d)
        jid, jid2 = punchtest.case("submit", submit, d) or (None, None)
        punchtest.case("read", read, d, jid)
        punchtest.case("auth", auth, d, jid)
        punchtest.case("files before a run", files_before_run, d, jid)
        punchtest.case("cancel", cancel, d, jid, jid2)
        punchtest.case("405 with Allow", methods, d, jid)
        punchtest.case("413", too_large, d)
        punchtest.case("openapi routes", openapi_routes, d, jid)
        punchtest.case("seed endpoints", seed, d)
        punchtest.case("metrics", metrics, d)


def healthz(d):
    r = d.req("GET", "/healthz")
    check(r.status_code == 200 and r.json() == {"status": "ok", "version": "0.1.0"}, r.text)


def submit(d):
    """Ids, positions, priority, the cluster's width, bad specs, the queue limit."""
    r = d.submit("alice")
    punchtest.require(r.status_code == 201, "submit: %d %s" % (r.status_code, r.text))
    body = r.json()
    jid = body["id"]
    check(len(jid) == 12 and all(c in "0123456789abcdef" for c in jid), "id format: " + jid)
    check(body["state"] == "queued" and body["queue_position"] == 1 and body["ranks"] == 1, body)
    check(r.headers["Location"] == "/api/v1/jobs/" + jid, r.headers.get("Location"))
    check(r.headers["Content-Type"].startswith("application/json"), "content type")
    # The job is in the database file before the reply (WAL included).
    check(os.path.exists(os.path.join(d.data_dir, "punchcard.db")), "no database file")

    two = job_like(QUICK_JOB, distributed={"trainer": "allreduce", "workers": 2},
                   resources={"priority": 5})
    r = d.submit("alice", two)
    punchtest.require(r.status_code == 201 and r.json()["ranks"] == 2, r.text)
    jid2 = r.json()["id"]
    check(r.json()["queue_position"] == 1, "priority 5 goes first: %s" % r.text)

    # Async trainers need a parameter-server rank: 4 workers + 1 > 4 slots.
    big = job_like(QUICK_JOB, distributed={"trainer": "adag", "workers": 4})
    e = expect_error(d.submit("alice", big), 400, "job wider than the cluster")
    check("5" in e["error"] and "4 slots" in e["error"], e)

    # Bad spec: the spec library's message and field.
    bad = job_like(QUICK_JOB, training=dict(QUICK_JOB["training"], epochs=-3))
    e = expect_error(d.submit("alice", bad), 400, "bad epochs")
    check(e["field"] == "training.epochs" and "training.epochs" in e["error"], e)
    expect_error(d.req("POST", "/api/v1/jobs", "alice", body="{nope"), 400, "bad JSON")

    # Queue limit: alice has 2 queued, the limit is 3.
    check(d.submit("alice").status_code == 201, "third job")
    e = expect_error(d.submit("alice"), 429, "queue limit")
    check("alice" in e["error"], e)
    check(d.submit("bob").status_code == 201, "bob unaffected by alice's limit")
    return jid, jid2


def read(d, jid):
    """A job object, the list and its filters, what an admin sees."""
    j = d.job("alice", jid)
    for key in ("id", "name", "owner", "state", "queue_position", "priority", "ranks", "trainer",
                "workers", "submitted_at", "started_at", "finished_at", "exit_code", "error",
                "progress", "result"):
        check(key in j, "job object lacks %s: %s" % (key, j))
    check(j["owner"] == "alice" and j["name"] == "quick" and j["state"] == "queued", j)
    check(j["queue_position"] == 2 and j["started_at"] is None and j["progress"] == {}, j)
    check(j["result"] is None and j["exit_code"] is None, j)

    r = d.req("GET", "/api/v1/jobs", "alice")
    jobs = r.json()["jobs"]
    check(r.status_code == 200 and len(jobs) == 3, r.text)
    check(all(x["owner"] == "alice" for x in jobs), "list shows other users")
    check([x["submitted_at"] for x in jobs] == sorted([x["submitted_at"] for x in jobs],
                                                      reverse=True), "newest first")
    r = d.req("GET", "/api/v1/jobs?state=queued", "alice")
    check(len(r.json()["jobs"]) == 3, r.text)
    r = d.req("GET", "/api/v1/jobs?state=running", "alice")
    check(r.json()["jobs"] == [], r.text)
    e = expect_error(d.req("GET", "/api/v1/jobs?state=sleeping", "alice"), 400, "bad state filter")
    check(e["field"] == "state", e)
    r = d.req("GET", "/api/v1/jobs", "root")
    check(len(r.json()["jobs"]) == 4, "admin sees all: %s" % r.text)
    check(d.req("GET", "/api/v1/jobs/" + jid, "root").status_code == 200, "admin reads any job")


def auth(d, jid):
    """Auth forms: bearer, ?secret=, wrong, missing."""
    check(d.req("GET", "/api/v1/jobs/%s?secret=%s" % (jid, SECRETS["alice"])).status_code == 200,
          "?secret= works")
    expect_error(d.req("GET", "/api/v1/jobs/" + jid), 401, "no secret")
    expect_error(d.req("GET", "/api/v1/jobs/" + jid, secret="wrong"), 401, "wrong secret")
    expect_error(d.req("GET", "/api/v1/jobs/" + jid, headers={"Authorization": "Basic eA=="}),
                 401, "not bearer")
    expect_error(d.req("GET", "/api/v1/jobs/" + jid, secret=SECRETS["alice"] + "x"), 401,
                 "secret with a suffix")


def files_before_run(d, jid):
    """History, weights and logs of a job that has not run."""
    expect_error(d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice"), 404, "no history yet")
    expect_error(d.req("GET", "/api/v1/jobs/%s/weights" % jid, "alice"), 404, "no weights yet")
    expect_error(d.req("GET", "/api/v1/jobs/%s/weights?format=npz" % jid, "alice"), 404, "npz")
    e = expect_error(d.req("GET", "/api/v1/jobs/%s/weights?format=h5" % jid, "alice"), 400,
                     "bad format")
    check(e["field"] == "format", e)
    r = d.req("GET", "/api/v1/jobs/%s/logs?offset=0" % jid, "alice")
    check(r.status_code == 200 and r.content == b"", "empty log: %d %r" % (r.status_code, r.content))
    check(r.headers["X-Log-Offset"] == "0" and r.headers["X-Job-State"] == "queued", r.headers)
    expect_error(d.req("GET", "/api/v1/jobs/%s/logs?offset=-1" % jid, "alice"), 400, "bad offset")
    expect_error(d.req("GET", "/api/v1/jobs/%s/logs?offset=x" % jid, "alice"), 400, "bad offset")
    expect_error(d.req("GET", "/api/v1/jobs/000000000000", "alice"), 404, "unknown id")


def cancel(d, jid, jid2):
    """Cancel, twice, the queue moving up, and the events it leaves."""
    r = d.req("DELETE", "/api/v1/jobs/" + jid2, "alice")
    check(r.status_code == 200 and r.json()["state"] == "cancelled", r.text)
    check(r.json()["finished_at"] is not None, r.text)
    expect_error(d.req("POST", "/api/v1/jobs/%s/cancel" % jid2, "alice"), 409, "cancel twice")
    check(d.job("alice", jid)["queue_position"] == 1, "position moves up after a cancel")
    ev = d.req("GET", "/api/v1/jobs/%s/events" % jid2, "alice").json()["events"]
    check([(e["from"], e["to"]) for e in ev] == [(None, "queued"), ("queued", "cancelled")], ev)
    check(len(ev) == 2 and ev[0]["at"] <= ev[1]["at"], ev)


def methods(d, jid):
    """405 with an Allow header; 404 for unknown routes."""
    r = d.req("PUT", "/api/v1/jobs", "alice")
    expect_error(r, 405, "PUT /api/v1/jobs")
    check("POST" in r.headers.get("Allow", ""), r.headers)
    r = d.req("POST", "/api/v1/jobs/" + jid, "alice")
    expect_error(r, 405, "POST job")
    check("DELETE" in r.headers.get("Allow", ""), r.headers)
    expect_error(d.req("DELETE", "/api/v1/jobs/%s/logs" % jid, "alice"), 405, "DELETE logs")
    expect_error(d.req("POST", "/healthz"), 405, "POST healthz")
    expect_error(d.req("GET", "/api/submit"), 405, "GET /api/submit")
    expect_error(d.req("GET", "/nope"), 404, "unknown route")
    expect_error(d.req("GET", "/api/v1/jobs/%s/other" % jid, "alice"), 404, "unknown sub-route")


def too_large(d):
    expect_error(d.req("POST", "/api/v1/jobs", "alice", body=b"x" * (2 << 20)), 413, "2 MiB")


def metrics(d):
    """Gauges, counters per route and code, latency histograms."""
    r = d.req("GET", "/metrics")
    check(r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain"), r.text)
    text = r.text
    check('punchcard_jobs{state="queued"}' in text, "jobs gauge")
    check('punchcard_jobs{state="cancelled"}' in text, "jobs gauge")
    check("punchcard_queue_length " in text, "queue length")
    check('punchcard_http_requests_total{route="POST /api/v1/jobs",code="201"}' in text, text)
    check('code="429"' in text and 'code="401"' in text, "error codes counted")
    check("punchcard_http_request_duration_seconds_bucket" in text, "histogram")
    check('punchcard_http_request_duration_seconds_count{route="GET /api/v1/jobs/{id}"}' in text,
          "per-route latency")
    queued = [l for l in text.splitlines() if l.startswith("punchcard_queue_length ")][0]
    listed = len(d.req("GET", "/api/v1/jobs?state=queued", "root").json()["jobs"])
    check(int(queued.split()[1]) == listed, "%s vs %d queued" % (queued, listed))


def openapi_routes(d, jid):
    """Every GET and POST of schema/openapi.yaml is routed (no 404 "no such
    route", no 405); DELETE and destroy are exercised elsewhere."""
    try:
        import yaml
    except ImportError:
        punchtest.skip("python3-yaml missing")
    with open(punchtest.source_path("schema", "openapi.yaml")) as f:
        spec = yaml.safe_load(f)
    for route, ops in spec["paths"].items():
        for method in ("get", "post"):
            if method not in ops or route == "/api/destroy":
                continue
            url = route.replace("{id}", jid)
            if route == "/api/v1/events":  # a stream that never ends: its status only
                with d.req("GET", url, "alice", stream=True) as r:
                    check(r.status_code == 200, "GET %s: %d" % (url, r.status_code))
                continue
            r = d.req(method.upper(), url, "alice", body="{}" if method == "post" else None)
            check(r.status_code != 405 and "no such route" not in r.text,
                  "%s %s: %d %s" % (method, url, r.status_code, r.text[:100]))


def seed(d):
    """The seed client's calls: POST /api/submit with the secret in the body;
    GET /api/state, /api/cancel, /api/destroy with ?secret=."""
    s = SECRETS["bob"]
    r = d.req("GET", "/api/state?secret=" + s)
    check(r.status_code == 200 and r.json()["owner"] == "bob", "bob's current job: " + r.text)
    # As the seed, one unfinished job per caller: 403 until it is cancelled.
    busy = r.json()
    if busy.get("state") == "queued":
        e = expect_error(d.req("POST", "/api/submit", body={"secret": s, "job": QUICK_JOB}),
                         403, "seed submit while bob's job is queued")
        check(busy["id"] in e["error"], e)
        check(d.req("GET", "/api/cancel?secret=" + s).status_code == 200, "cancel bob's job")
    r = d.req("POST", "/api/submit", body={"secret": s, "job": QUICK_JOB})
    check(r.status_code == 201, "seed submit {secret, job}: %s" % r.text)
    current = r.json()["id"]
    r = d.req("GET", "/api/state?secret=" + s)
    check(r.status_code == 200 and r.json()["id"] == current, "state is the newest job: " + r.text)
    expect_error(d.req("GET", "/api/destroy?secret=" + s), 400, "destroy a queued job")
    r = d.req("GET", "/api/cancel?secret=" + s)
    check(r.status_code == 200 and r.json()["state"] == "cancelled", r.text)
    r = d.req("GET", "/api/cancel?secret=" + s)
    check(r.status_code == 200 and r.json()["state"] == "cancelled",
          "cancel a cancelled job (200, as the seed): " + r.text)
    r = d.req("GET", "/api/destroy?secret=" + s)
    check(r.status_code == 200 and r.json() == {"model": None, "history": None,
                                                "architecture": None, "job_name": "quick"},
          r.text)
    check(d.req("GET", "/api/v1/jobs/" + current, "bob").status_code == 404, "destroyed = gone")
    check(not os.path.exists(d.run_dir(current)), "run dir removed")
    # The spec itself carrying "secret" is accepted too.
    spec = dict(QUICK_JOB, secret=s)
    r = d.req("POST", "/api/submit", body=spec)
    check(r.status_code == 201, "seed submit spec+secret: " + r.text)
    expect_error(d.req("POST", "/api/submit", body=QUICK_JOB), 401, "seed no secret")
    expect_error(d.req("POST", "/api/submit", body={"secret": "nope", "job": QUICK_JOB}),
                 401, "seed wrong secret")
    expect_error(d.req("POST", "/api/submit", body={"secret": s, "job": 3}), 400,
                 "seed job not an object")
    expect_error(d.req("GET", "/api/state?secret=nope"), 401, "seed state wrong secret")
    expect_error(d.req("GET", "/api/state?secret=" + SECRETS["root"]), 404, "root has no job")


if __name__ == "__main__":
    punchtest.main(cases)
