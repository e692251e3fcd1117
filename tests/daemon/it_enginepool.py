"""it_enginepool.py — predictions run on a pool of their own (predict_threads,
predict_queue, predict_per_user), never on the threads that serve submits:
with one HTTP thread (two writer threads) and two slow predictions in the
pool, a submit, a job's state and a cancel are answered while both are still
in progress; a third caller gets 503 with Retry-After (queue full), a second
request of the same caller 429 (its cap); a shutdown answers the running and
the waiting prediction 503. A stand-in engine trains instantly and holds
each prediction until the test releases it, so every check is about order,
not time."""
import glob
import os
import threading

import punchtest
from punchtest import QUICK_JOB, Daemon, check, expect_error, fail, job_like, require, wait_for

# Training writes weights at once; --predict marks MARKS/started.N (N the
# request's temporary directory) and waits for MARKS/release (30 s at most).
ENGINE = """#!/bin/sh
out=""; prev=""; mode=train
for a in "$@"; do
  [ "$prev" = "--out" ] && out="$a"
  [ "$a" = "--predict" ] && mode=predict
  prev="$a"
done
if [ "$mode" = train ]; then printf 'weights' > "$out/weights.safetensors"; exit 0; fi
touch "MARKS/started.$(basename "$out")"
i=0
while [ ! -e "MARKS/release" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
printf 'NPY-%s' "$(basename "$out")" > "$out/predictions.npy"
"""

BODY = b"\x93NUMPY not parsed by the stand-in"


def cases():
    with Daemon(["--http-threads", "1", "--predict-threads", "1", "--predict-queue", "1",
                 "--predict-per-user", "1"]) as d:
        marks = os.path.join(d.tmp, "marks")
        os.mkdir(marks)
        d.engine_script("engine.sh", ENGINE.replace("MARKS", marks))
        d.restart()
        jobs = {u: finished(d, u) for u in ("alice", "bob")}
        punchtest.case("slow predictions do not hold submits, state or cancel; 503 and 429 "
                       "with Retry-After", busy_pool, d, jobs, marks)
        punchtest.case("a shutdown answers running and waiting predictions 503", shutdown, d,
                       jobs, marks)


def finished(d, user):
    jid = d.submit_id(user, job_like(QUICK_JOB, name="pool-" + user))
    j = d.wait_state(user, jid, punchtest.FINAL_STATES)
    require(j["state"] == "succeeded", "%s's job: %s" % (user, j))
    return jid


class Predict(threading.Thread):
    """A prediction request on a thread of its own; .r is its response."""

    def __init__(self, d, user, jid):
        super().__init__(daemon=True)
        self.d, self.user, self.jid, self.r, self.err = d, user, jid, None, None

    def run(self):
        try:
            self.r = punchtest.http("POST", "%s/api/v1/jobs/%s/predict" % (self.d.url, self.jid),
                                    secret=self.d.secrets[self.user], body=BODY, timeout=60)
        except Exception as e:  # reported by the case
            self.err = e


def gauge(d, what):
    """punchcard_predict_running or _waiting from /metrics."""
    for line in d.req("GET", "/metrics", timeout=10).text.splitlines():
        if line.startswith("punchcard_predict_%s " % what):
            return int(line.split()[1])
    fail("/metrics has no punchcard_predict_%s" % what)


def started(marks):
    return sorted(glob.glob(os.path.join(marks, "started.*")), key=os.path.getmtime)


def running_and_waiting(d, marks, first, second):
    """Two predictions, (user, job) each: the first running in the pool's
    one thread, the second waiting in its queue (seen in /metrics)."""
    a = Predict(d, *first)
    a.start()
    wait_for(lambda: len(started(marks)) == 1, "%s's prediction to start" % first[0], timeout=20)
    b = Predict(d, *second)
    b.start()
    wait_for(lambda: gauge(d, "waiting") == 1, "%s's prediction to wait" % second[0], timeout=10)
    check(gauge(d, "running") == 1, "/metrics: %d predictions running" % gauge(d, "running"))
    return a, b


def busy_pool(d, jobs, marks):
    # root (an admin) may predict with alice's job: it waits in the queue.
    alice, root = running_and_waiting(d, marks, ("alice", jobs["alice"]),
                                      ("root", jobs["alice"]))
    try:
        # Both writer threads would be held by the two predictions without
        # the pool; these are answered while both are still in progress.
        r = d.submit("bob", job_like(QUICK_JOB, name="while-predicting"), timeout=10)
        check(r.status_code == 201, "submit during predictions: %d %s" % (r.status_code, r.text))
        new = r.json().get("id", "")
        r = d.req("GET", "/api/v1/jobs/" + jobs["alice"], "alice", timeout=10)
        check(r.status_code == 200, "state during predictions: %d" % r.status_code)
        r = d.req("POST", "/api/v1/jobs/%s/cancel" % new, "bob", timeout=10)
        check(r.status_code in (200, 409), "cancel during predictions: %d %s" % (
            r.status_code, r.text))
        # The queue's one place is root's: bob is refused, alice at her cap.
        r = d.req("POST", "/api/v1/jobs/%s/predict" % jobs["bob"], "bob", body=BODY, timeout=10)
        e = expect_error(r, 503, "a prediction with the queue full")
        check("predict_queue" in e["error"], "503 does not name predict_queue: %s" % e)
        check(int(r.headers.get("Retry-After", "0")) >= 1,
              "503 without Retry-After: %s" % dict(r.headers))
        r = d.req("POST", "/api/v1/jobs/%s/predict" % jobs["alice"], "alice", body=BODY,
                  timeout=10)
        e = expect_error(r, 429, "alice's second prediction")
        check("predict_per_user" in e["error"], "429 does not name predict_per_user: %s" % e)
        check(int(r.headers.get("Retry-After", "0")) >= 1,
              "429 without Retry-After: %s" % dict(r.headers))
        check(alice.is_alive() and root.is_alive() and len(started(marks)) == 1,
              "a prediction ended or root's started before the release")
    finally:
        punchtest.touch(os.path.join(marks, "release"))
    for t in (alice, root):
        t.join(60)
        require(t.r is not None, "%s's prediction: %s" % (t.user, t.err))
        check(t.r.status_code == 200 and t.r.content.startswith(b"NPY-predict-"),
              "%s's prediction: %d %r" % (t.user, t.r.status_code, t.r.content[:200]))
    # Answered in the pool's order, each from its own temporary directory,
    # which is gone afterwards.
    names = [os.path.basename(m)[len("started."):] for m in started(marks)]
    check(len(names) == 2 and alice.r.content == b"NPY-" + names[0].encode() and
          root.r.content == b"NPY-" + names[1].encode(), "order: %s" % names)
    check(not glob.glob(os.path.join(d.data_dir, "tmp", "predict-*")),
          "temporary directories left: %s" % os.listdir(os.path.join(d.data_dir, "tmp")))
    os.unlink(os.path.join(marks, "release"))
    for m in started(marks):
        os.unlink(m)


def shutdown(d, jobs, marks):
    running, waiting = running_and_waiting(d, marks, ("alice", jobs["alice"]),
                                           ("bob", jobs["bob"]))
    d.stop()  # checks the exit status: 0
    for t in (running, waiting):
        t.join(30)
        require(t.r is not None, "%s's prediction: %s" % (t.user, t.err))
        e = expect_error(t.r, 503, "%s's prediction at shutdown" % t.user)
        check("shutting down" in e["error"] and t.r.headers.get("Retry-After"),
              "%s: %s %s" % (t.user, e, dict(t.r.headers)))
    check(len(started(marks)) == 1, "the waiting prediction ran: %s" % started(marks))


if __name__ == "__main__":
    punchtest.main(cases)
