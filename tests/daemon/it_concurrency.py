"""it_concurrency.py — 200 concurrent submits from four users against a real
punchcardd (queue held): every accepted job is stored exactly once, the
per-user queue limit holds exactly, the rest get 429, and the queue order is
the policy's (equal priority: round-robin between users, FIFO within one)."""
import json
import os
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import requests  # noqa: E402
from punchd import QUICK_JOB, SECRETS, Daemon, check  # noqa: E402

USERS = ["alice", "bob", "carol", "dave"]
PER_USER = 50
LIMIT = 30


def main():
    d = Daemon(["--hold", "--slots", "2", "--max-queued", str(LIMIT), "--http-threads", "4"])
    # Two more users for this test.
    with open(d.secrets_path) as f:
        entries = json.load(f)
    for u in ("carol", "dave"):
        SECRETS[u] = u + "-secret-cdef"
        entries.append({"secret": SECRETS[u], "identity": u})
    with open(d.secrets_path, "w") as f:
        json.dump(entries, f)
    try:
        d.start()
        run(d)
        d.stop()
    finally:
        d.cleanup()
    print("ok")


def submit(d, user, i):
    job = dict(QUICK_JOB, name="%s-%02d" % (user, i))
    r = requests.post(d.url + "/api/v1/jobs", data=json.dumps(job), timeout=60,
                      headers={"Authorization": "Bearer " + SECRETS[user]})
    return user, i, r.status_code, (r.json() if r.status_code == 201 else None)


def run(d):
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

    # The store, read directly: each accepted job exactly once, owned by its submitter.
    db = sqlite3.connect(os.path.join(d.data_dir, "punchcard.db"))
    rows = db.execute("SELECT id, owner, state FROM jobs").fetchall()
    check(len(rows) == len(all_ids), "%d rows for %d accepted jobs" % (len(rows), len(all_ids)))
    owner_of = {i: u for u, ids in accepted.items() for i in ids}
    for jid, owner, state in rows:
        check(owner_of.get(jid) == owner and state == "queued", "row %s %s %s" % (jid, owner, state))
    dup = db.execute("SELECT job_id, COUNT(*) FROM events GROUP BY job_id HAVING COUNT(*) != 1")
    check(dup.fetchall() == [], "each job has exactly one (queued) event")
    db.close()

    # Queue order: positions 1..120, and every block of four holds each user once,
    # in FIFO order per user.
    jobs = requests.get(d.url + "/api/v1/jobs", timeout=60,
                        headers={"Authorization": "Bearer " + SECRETS["root"]}).json()["jobs"]
    jobs.sort(key=lambda j: j["queue_position"])
    check([j["queue_position"] for j in jobs] == list(range(1, len(all_ids) + 1)), "positions")
    for k in range(LIMIT):
        block = jobs[4 * k:4 * k + 4]
        check(sorted(j["owner"] for j in block) == sorted(USERS),
              "block %d is not one job per user: %s" % (k, [j["owner"] for j in block]))
    for u in USERS:
        mine = [j for j in jobs if j["owner"] == u]
        subs = [j["submitted_at"] for j in mine]
        check(subs == sorted(subs), "%s's jobs not FIFO" % u)


if __name__ == "__main__":
    main()
