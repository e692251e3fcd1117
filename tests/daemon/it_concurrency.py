"""it_concurrency.py — 200 concurrent submits from four users against a real
punchcardd (queue held): every accepted job is stored exactly once, the
per-user queue limit holds exactly, the rest get 429, and the queue order is
the policy's (equal priority: round-robin between users, FIFO within one)."""
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import punchtest
from punchtest import QUICK_JOB, Daemon, check, http, job_like

USERS = ["alice", "bob", "carol", "dave"]
PER_USER = 50
LIMIT = 30


def cases():
    d = Daemon(["--hold", "--slots", "2", "--max-queued", str(LIMIT), "--http-threads", "4"])
    for u in ("carol", "dave"):
        d.add_user(u, u + "-secret-cdef")
    with d:
        accepted = punchtest.case("200 concurrent submits", submit_all, d)
        punchtest.case("the store holds each job once", stored_once, d, accepted)
        punchtest.case("queue order", queue_order, d, accepted)


def submit(d, user, i):
    """One submit on its own connection (a Session is not shared by threads)."""
    r = http("POST", d.url + "/api/v1/jobs", d.secrets[user],
             body=job_like(QUICK_JOB, name="%s-%02d" % (user, i)), timeout=60)
    return user, i, r.status_code, (r.json() if r.status_code == 201 else None)


def submit_all(d):
    """Exactly LIMIT accepted per user, the rest 429, no id twice."""
    work = [(u, i) for i in range(PER_USER) for u in USERS]
    with ThreadPoolExecutor(max_workers=40) as pool:
        results = list(pool.map(lambda a: submit(d, *a), work))
    codes = {}
    accepted = {}
    for user, i, code, body in results:
        codes[code] = codes.get(code, 0) + 1
        if code == 201:
            accepted.setdefault(user, []).append(body["id"])
    check(set(codes) <= {201, 429}, "unexpected statuses: %s" % codes)
    for u in USERS:
        check(len(accepted.get(u, [])) == LIMIT, "%s: %d accepted, want exactly %d" % (
            u, len(accepted.get(u, [])), LIMIT))
    all_ids = [i for ids in accepted.values() for i in ids]
    check(len(set(all_ids)) == len(all_ids), "duplicate ids handed out")
    return accepted


def stored_once(d, accepted):
    """The store, read directly: each accepted job exactly once, owned by
    its submitter, with one (queued) event."""
    all_ids = [i for ids in accepted.values() for i in ids]
    db = sqlite3.connect(os.path.join(d.data_dir, "punchcard.db"))
    try:
        rows = db.execute("SELECT id, owner, state FROM jobs").fetchall()
        check(len(rows) == len(all_ids), "%d rows for %d accepted jobs" % (len(rows), len(all_ids)))
        owner_of = {i: u for u, ids in accepted.items() for i in ids}
        for jid, owner, state in rows:
            check(owner_of.get(jid) == owner and state == "queued",
                  "row %s %s %s" % (jid, owner, state))
        dup = db.execute("SELECT job_id, COUNT(*) FROM events GROUP BY job_id HAVING COUNT(*) != 1")
        check(dup.fetchall() == [], "each job has exactly one (queued) event")
    finally:
        db.close()


def queue_order(d, accepted):
    """Positions 1..120, and every block of four holds each user once, in
    FIFO order per user."""
    total = sum(len(ids) for ids in accepted.values())
    jobs = d.req("GET", "/api/v1/jobs?limit=1000", "root", timeout=60).json()["jobs"]
    jobs.sort(key=lambda j: j["queue_position"])
    check([j["queue_position"] for j in jobs] == list(range(1, total + 1)), "positions")
    for k in range(LIMIT):
        block = jobs[4 * k:4 * k + 4]
        check(sorted(j["owner"] for j in block) == sorted(USERS),
              "block %d is not one job per user: %s" % (k, [j["owner"] for j in block]))
    for u in USERS:
        subs = [j["submitted_at"] for j in jobs if j["owner"] == u]
        check(subs == sorted(subs), "%s's jobs not FIFO" % u)


if __name__ == "__main__":
    punchtest.main(cases)
