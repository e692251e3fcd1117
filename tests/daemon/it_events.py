"""it_events.py — GET /api/v1/events (server-sent events) against a real
punchcardd with a stand-in engine: each user's stream carries every state
change of that user's jobs, in order, and their progress, and nothing of
another user's; the admin's carries everyone's; a reconnect with Last-Event-ID is replayed what
it missed; no secret, no stream; and 1,000 idle streams leave /healthz, a
submit and a job's events still go through, and SIGTERM ends them all and
exits 0 (the daemon's RSS with them is printed)."""
import http.client
import json
import os
import socket
import threading
import time

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, STAND_IN_ENGINE, Daemon, check, job_like

STREAMS = 1000


class Stream:
    """A text/event-stream read on a thread: .events is the list of
    (id, event, data) parsed so far; .hello is set once the first arrives."""

    def __init__(self, d, user, last_event_id=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
        headers = {"Authorization": "Bearer " + d.secrets[user]}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.conn.request("GET", "/api/v1/events", headers=headers)
        self.resp = self.conn.getresponse()
        self.events = []
        self.lock = threading.Lock()
        self.hello = threading.Event()
        if self.resp.status == 200:
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()
            self.hello.wait(20)

    def _read(self):
        fields = {}
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line == "":
                    if "event" in fields:
                        with self.lock:
                            self.events.append((fields.get("id"), fields["event"],
                                                json.loads(fields.get("data", "null"))))
                        self.hello.set()
                    fields = {}
                elif not line.startswith(":"):
                    k, _, v = line.partition(": ")
                    fields[k] = v
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass  # closed by close() (http.client drops its file: AttributeError)

    def states(self):
        with self.lock:
            return [(e[2]["job"], e[2]["from"], e[2]["to"]) for e in self.events if e[1] == "state"]

    def progress(self, jid):
        with self.lock:
            return [e[2] for e in self.events if e[1] == "progress" and e[2]["job"] == jid]

    def state_ids(self):
        with self.lock:
            return [int(e[0]) for e in self.events if e[1] == "state"]

    def close(self):
        # shutdown first: it wakes the reader thread's recv, which would
        # otherwise hold the response's buffer (and close) until the next
        # keepalive.
        if self.conn.sock:
            try:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conn.close()


def cases():
    d = Daemon(["--slots", "4", "--max-running", "4", "--connection-limit", str(STREAMS + 64),
                "--per-ip-limit", "0"])
    d.engine_script("stand-in-engine", STAND_IN_ENGINE)
    with d:
        punchtest.case("a stream needs a secret", needs_secret, d)
        punchtest.case("each sees its own jobs' state changes, in order", own_jobs, d)
        punchtest.case("1,000 idle streams block nothing", many_streams, d)


def needs_secret(d):
    r = d.req("GET", "/api/v1/events")
    check(r.status_code == 401, "no secret: %d %s" % (r.status_code, r.text))
    r = d.req("GET", "/api/v1/events", "alice", headers={"Last-Event-ID": "x"})
    check(r.status_code == 400 and r.json().get("field") == "Last-Event-ID", r.text)


def expected(jobs, final):
    """Every transition of each job, in order: queued, starting, running, final."""
    out = []
    for jid in jobs:
        out += [(jid, None, "queued"), (jid, "queued", "starting"),
                (jid, "starting", "running"), (jid, "running", final[jid])]
    return out


def per_job(states, jid):
    return [s for s in states if s[0] == jid]


def own_jobs(d):
    alice, bob, root = Stream(d, "alice"), Stream(d, "bob"), Stream(d, "root")
    for s in (alice, bob, root):
        punchtest.require(s.resp.status == 200 and s.hello.is_set(), "stream opened")
        check(s.resp.getheader("Content-Type") == "text/event-stream", s.resp.getheaders())
    a1 = d.submit_id("alice", job_like(QUICK_JOB, name="a1"))
    b1 = d.submit_id("bob", job_like(QUICK_JOB, name="b1"))
    a2 = d.submit_id("alice", job_like(QUICK_JOB, name="a2"))
    for jid, user in ((a1, "alice"), (b1, "bob"), (a2, "alice")):
        punchtest.wait_file(os.path.join(d.run_dir(jid), "gpus.0"))
    punchtest.wait_for(lambda: {(a1, "starting", "running"), (a2, "starting", "running")} <=
                       set(alice.states()), lambda _: "a1 and a2 running on alice's stream: %s"
                       % alice.states(), timeout=20)
    mid = alice.state_ids()
    # The stand-in writes no progress; a line written for it is streamed.
    with open(os.path.join(d.run_dir(a1), "progress.jsonl"), "a") as f:
        f.write(json.dumps({"event": "epoch", "time": time.time(), "epoch": 1, "epochs": 2,
                            "loss": 0.5}) + "\n")
    for s in (alice, root):
        punchtest.wait_for(lambda: any(e["progress"].get("loss") == 0.5 for e in s.progress(a1)),
                           lambda _: "a1's progress (got %s)" % s.progress(a1), timeout=20)
    d.release(a1)
    d.release(b1)
    check(d.req("DELETE", "/api/v1/jobs/" + a2, "alice").status_code == 200, "cancel a2")
    final = {}
    for jid, user in ((a1, "alice"), (b1, "bob"), (a2, "alice")):
        final[jid] = d.wait_state(user, jid, FINAL_STATES, timeout=60)["state"]
    check(final[a2] == "cancelled", final)
    want_a, want_b = expected([a1, a2], final), expected([b1], final)
    punchtest.wait_for(lambda: len(alice.states()) >= len(want_a) and
                       len(bob.states()) >= len(want_b) and
                       len(root.states()) >= len(want_a) + len(want_b),
                       lambda _: "every state change on the streams: alice %s bob %s root %s"
                       % (alice.states(), bob.states(), root.states()), timeout=20)
    time.sleep(0.6)  # two producer periods: anything extra would have come
    for jid in (a1, a2):
        check(per_job(alice.states(), jid) == per_job(want_a, jid),
              "alice's %s: %s" % (jid, per_job(alice.states(), jid)))
        check(per_job(root.states(), jid) == per_job(want_a, jid), "root's view of " + jid)
    check(bob.states() == want_b, "bob's stream: %s" % bob.states())
    check(not any(s[0] == b1 for s in alice.states()), "alice sees none of bob's")
    check(not bob.progress(a1), "bob sees none of alice's progress")
    check(per_job(root.states(), b1) == want_b, "root sees bob's")
    ids = alice.state_ids()
    check(ids == sorted(ids) and len(set(ids)) == len(ids), "ids ascend: %s" % ids)
    with alice.lock:
        check(all(e[2]["owner"] == "alice" for e in alice.events if e[1] == "progress"),
              "progress only of alice's jobs")

    # Reconnect from the event seen before the releases: the rest is replayed.
    resumed = Stream(d, "alice", last_event_id=mid[-1])
    punchtest.wait_for(lambda: len(resumed.states()) >= len(ids) - len(mid),
                       lambda _: "the replay: %s" % resumed.states(), timeout=10)
    check(resumed.state_ids() == ids[len(mid):], "replayed %s, want %s" % (
        resumed.state_ids(), ids[len(mid):]))
    for s in (alice, bob, root, resumed):
        s.close()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def raw_stream(d, secret):
    """An SSE request on a bare socket, read up to its hello."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(("GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
               % secret).encode())
    got = b""
    while b"event: hello" not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    return s, got


def many_streams(d):
    rss0 = rss_kib(d.proc.pid)
    socks = []
    try:
        for i in range(STREAMS):
            s, got = raw_stream(d, d.secrets["alice" if i % 2 else "bob"])
            punchtest.require(b" 200 " in got.split(b"\r\n")[0] and b"event: hello" in got,
                              "stream %d: %r" % (i, got[:200]))
            socks.append(s)
        rss1 = rss_kib(d.proc.pid)
        r = d.req("GET", "/healthz")
        check(r.status_code == 200, "healthz with %d streams open: %d" % (STREAMS, r.status_code))
        jid = d.submit_id("alice", job_like(QUICK_JOB, name="under-load"))
        punchtest.wait_file(os.path.join(d.run_dir(jid), "gpus.0"))
        d.release(jid)
        d.wait_state("alice", jid, FINAL_STATES, timeout=60)
        # Every stream of alice's hears of the job; bob's hear nothing of it.
        for i, s in enumerate(socks):
            s.settimeout(10)
            buf = b""
            while jid.encode() not in buf and i % 2:
                buf += s.recv(65536)
            if not i % 2:
                s.setblocking(False)
                try:
                    buf = s.recv(65536)
                except BlockingIOError:
                    buf = b""
                check(jid.encode() not in buf, "bob's stream %d saw alice's job" % i)
        print("%d streams: punchcardd RSS %d KiB -> %d KiB (%.1f KiB per stream)" % (
            STREAMS, rss0, rss1, (rss1 - rss0) / STREAMS), flush=True)
        # SIGTERM with every stream open: each is ended (its last chunk, or
        # closed), and the daemon exits 0 (libmicrohttpd aborts on a
        # connection left suspended).
        d.stop()
        ended = 0
        for s in socks:
            s.settimeout(10)
            try:
                while s.recv(65536):
                    pass
                ended += 1
            except ConnectionResetError:
                ended += 1
        check(ended == STREAMS, "%d of %d streams ended at the shutdown" % (ended, STREAMS))
    finally:
        for s in socks:
            s.close()


if __name__ == "__main__":
    punchtest.main(cases)
