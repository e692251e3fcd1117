"""it_busy.py — `punch predict` and `punch generate` against a busy server:
a tiny fake punchcardd answers the first request 503 (or 429) with
Retry-After and the next one 200, and punch waits, says so once on stderr,
asks again and succeeds; a refusal without Retry-After (or with an HTTP
date) is final after one request. Retry-After is 0 here, so nothing waits
on the clock: the checks are on the requests the server saw, in order."""
import http.server
import json
import os
import shutil
import tempfile
import threading

import punchtest
from punchtest import check

NPY = b"\x93NUMPY fake output"


class Fake(http.server.BaseHTTPRequestHandler):
    """Answers POSTs from the script in server.replies, one per request."""

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.server.seen.append(self.path)
        status, headers, body = self.server.replies.pop(0)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def busy(status, retry_after=None):
    h = {"Content-Type": "application/json"}
    if retry_after is not None:
        h["Retry-After"] = retry_after
    return (status, h, json.dumps({"error": "the prediction pool is busy"}).encode())


def punch(srv, home, *args):
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    return punchtest.run_client(args, home, {"PUNCH_URL": url, "PUNCH_SECRET": "s3cret"})


def predict_waits(srv, home):
    srv.replies = [busy(503, "0"), (200, {}, NPY)]
    srv.seen = []
    out = os.path.join(home, "out.npy")
    r = punch(srv, home, "predict", "j1", os.path.join(home, "in.npy"), "-o", out)
    check(r.returncode == 0, "predict: exit %d\n%s" % (r.returncode, r.stderr))
    check(srv.seen == ["/api/v1/jobs/j1/predict"] * 2, "requests: %r" % srv.seen)
    check(r.stderr.count("server busy (predict_queue full): retrying in 0 s\n") == 1, r.stderr)
    with open(out, "rb") as f:
        check(f.read() == NPY, "the output is not the second reply's body")


def generate_waits(srv, home):
    srv.replies = [busy(429, "0"), busy(503, " 0 "),
                   (200, {"Content-Type": "application/json"},
                    json.dumps({"text": " world", "tokens": [1]}).encode())]
    srv.seen = []
    r = punch(srv, home, "generate", "j1", "hello")
    check(r.returncode == 0 and r.stdout == "hello world\n",
          "generate: exit %d %r\n%s" % (r.returncode, r.stdout, r.stderr))
    check(len(srv.seen) == 3, "requests: %r" % srv.seen)
    check(r.stderr.index("(predict_per_user reached)") < r.stderr.index("(predict_queue full)"),
          r.stderr)


def no_retry_after(srv, home):
    for reply in (busy(503), busy(429, "Fri, 27 Nov 2026 10:00:00 GMT")):
        srv.replies = [reply, (200, {}, NPY)]
        srv.seen = []
        r = punch(srv, home, "predict", "j1", os.path.join(home, "in.npy"),
                  "-o", os.path.join(home, "no.npy"))
        check(r.returncode == 6 and "busy" in r.stderr and "retrying" not in r.stderr,
              "exit %d\n%s" % (r.returncode, r.stderr))
        check(len(srv.seen) == 1, "requests: %r" % srv.seen)
        check(not os.path.exists(os.path.join(home, "no.npy")), "a failed predict wrote")


def cases():
    home = tempfile.mkdtemp(prefix="punch-busy-")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        with open(os.path.join(home, "in.npy"), "wb") as f:
            f.write(b"\x93NUMPY fake input")
        punchtest.case("predict waits out a 503 with Retry-After", predict_waits, srv, home)
        punchtest.case("generate waits out 429 then 503", generate_waits, srv, home)
        punchtest.case("no Retry-After: no retry", no_retry_after, srv, home)
    finally:
        srv.shutdown()
        srv.server_close()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    punchtest.main(cases)
