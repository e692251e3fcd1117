"""it_badreq.py — a corpus of bad requests against a real punchcardd:
malformed and truncated JSON, wrong types, huge bodies (declared and
chunked), unknown routes and methods, path-traversal dataset names and URLs,
missing and wrong secrets, raw garbage on the socket. Each gets the right
4xx as JSON, and the daemon stays up (this test also runs in the sanitizer
build, where any memory error aborts the daemon)."""
import json
import os
import socket
import subprocess

import punchtest
from punchtest import QUICK_JOB, SECRETS, Daemon, check, expect_error, job_like


def cases():
    with Daemon(["--hold", "--slots", "4", "--max-body", "65536", "--max-queued", "1000"]) as d:
        punchtest.case("malformed JSON", malformed_json, d)
        punchtest.case("wrong types", wrong_types, d)
        punchtest.case("dataset traversal", dataset_traversal, d)
        punchtest.case("URL traversal", url_traversal, d)
        punchtest.case("methods", methods, d)
        punchtest.case("secrets", bad_secrets, d)
        punchtest.case("huge bodies", huge_bodies, d)
        punchtest.case("garbage", garbage, d)
        punchtest.case("long spec errors are not cut", long_errors, d)
        punchtest.case("a site dataset that is not there is refused", missing_site_data, d)
        jid = punchtest.case("query strings", query_strings, d)
        punchtest.case("only the valid submit created a job", nothing_created, d, jid)


# A preset name no one has: the error lists every preset, longer than the
# 300-odd characters messages used to be cut at (issue 31 #4).
UNKNOWN_PRESET = job_like(QUICK_JOB, model={"preset": "no-such-net", "input": [8]})


def long_errors(d):
    """The API's 400 and punch-train --validate give the whole list; its
    last name is the last preset's (transformer_classifier)."""
    e = expect_error(d.submit("alice", UNKNOWN_PRESET), 400, "unknown preset")
    msg = e["error"]
    check(len(msg) > 400 and msg.endswith("transformer_classifier"), "cut: %r" % msg[-80:])
    check("resnet34_imagenet, resnet50_imagenet" in msg, "a middle of the list: %r" % msg)
    engine = punchtest.engine_path()
    if not os.access(engine, os.X_OK):
        return
    path = os.path.join(d.tmp, "unknown-preset.json")
    punchtest.write_json(path, UNKNOWN_PRESET)
    r = subprocess.run([engine, "--validate", path], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and r.stderr.rstrip().endswith("transformer_classifier"),
          "punch-train --validate: %d %r" % (r.returncode, r.stderr[-80:]))


def missing_site_data(d):
    """A typo in an admin dataset's name is a 400 at submit, as for uploads
    (issue 31 #6), naming the field and the name but no server path."""
    idx = {"input": [784], "layers": [{"type": "dense", "units": 10, "activation": "softmax"}]}
    for data, field in (({"format": "idx", "train": "fashion-mnist/trian"}, "data.train"),
                        ({"format": "idx", "train": "no-such-set/train"}, "data.train"),
                        ({"format": "csv", "train": "nothing-here.csv"}, "data.train")):
        e = expect_error(d.submit("alice", job_like(QUICK_JOB, model=idx, data=data)), 400,
                         "missing %s" % data["train"])
        check(e["field"] == field and data["train"] in e["error"], e)
        check(punchtest.DATASETS not in e["error"], "a server path in %r" % e["error"])
    if not os.path.isdir(os.path.join(punchtest.DATASETS, "fashion-mnist")):
        return
    data = {"format": "idx", "train": "fashion-mnist/train", "test": "fashion-mnist/t10k"}
    r = d.submit("alice", job_like(QUICK_JOB, model=idx, data=data))
    check(r.status_code == 201, "an installed dataset: %d %s" % (r.status_code, r.text))
    if r.status_code == 201:  # cancelled, then deleted: the corpus's count stays exact
        for _ in range(2):
            d.req("DELETE", "/api/v1/jobs/" + r.json()["id"], "alice")
    typo = dict(data, test="fashion-mnist/t10")
    e = expect_error(d.submit("alice", job_like(QUICK_JOB, model=idx, data=typo)), 400, "t10")
    check(e["field"] == "data.test", e)


def alive(d, what):
    r = d.req("GET", "/healthz")
    check(r.status_code == 200, "after %s: /healthz %d" % (what, r.status_code))


def post(d, body, user="alice", path="/api/v1/jobs"):
    return d.req("POST", path, user, body=body)


def spec_with(path, value):
    """QUICK_JOB with the field at dotted `path` set to value (None deletes)."""
    job = job_like(QUICK_JOB)
    node = job
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    if value is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value
    return job


def raw(d, payload, read=True):
    """Send bytes on a fresh connection; return what came back within 2 s
    (maybe b""; a half-closed connection may stay open until its timeout)."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=2)
    try:
        s.sendall(payload)
        if not read:
            return b""
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
        return out
    except OSError:  # reset or not connected: the server hung up first
        return b""
    finally:
        s.close()


def status_of(reply):
    line = reply.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) >= 2 and line[1].isdigit() else None


def malformed_json(d):
    """Truncated at every prefix class of a valid spec, and malformed."""
    text = json.dumps(QUICK_JOB)
    for cut in sorted({1, 2, 5, len(text) // 3, len(text) // 2, len(text) - 1}):
        expect_error(post(d, text[:cut]), 400, "truncated at %d" % cut)
    for body in ("", " ", "{", "}", "[]", "null", "42", "\"job\"", "{\"model\": }", "{'a': 1}",
                 "{\"a\": 1,}", "\x00\x01\x02", "{\"model\": \"mlp\"} trailing",
                 "[" * 5000 + "]" * 5000, "{\"a\":" * 3000):
        expect_error(post(d, body), 400, "malformed %r" % body[:20])
    expect_error(post(d, b"{\"name\": \"\xff\xfe\"}"), 400, "invalid UTF-8")
    alive(d, "malformed JSON")


def wrong_types(d):
    """Wrong types and values: 400 naming the field."""
    cases = [
        ("training.epochs", "five", "training.epochs"),
        ("training.epochs", 0, "training.epochs"),
        ("training.batch_size", [], "training.batch_size"),
        ("model", 3, "model"),
        ("model", "no-such-preset", "model"),
        ("data.format", "pickle", "data.format"),
        ("distributed.workers", -1, "distributed.workers"),
        ("distributed.trainer", "horovod", "distributed.trainer"),
        ("resources.time_limit_s", "1h", "resources.time_limit_s"),
        ("name", {"x": 1}, "name"),
    ]
    for path, value, field in cases:
        e = expect_error(post(d, spec_with(path, value)), 400, "%s=%r" % (path, value))
        check(e["field"] and e["field"].startswith(field.split(".")[0]),
              "%s=%r: field %r" % (path, value, e["field"]))
    alive(d, "wrong types")


def dataset_traversal(d):
    """Path traversal and absolute dataset names never reach a path."""
    for name in ("../../etc/passwd", "/etc/passwd", "fashion-mnist/../../../etc/shadow",
                 ".hidden/train", "a//b", "a\\..\\b", "fashion-mnist/./train"):
        job = {"name": "trav", "model": "mlp",
               "data": {"format": "idx", "train": name, "test": "fashion-mnist/t10k"}}
        e = expect_error(post(d, job), 400, "dataset %r" % name)
        check(e["field"] == "data.train", "dataset %r: field %r" % (name, e["field"]))
    alive(d, "dataset traversal")


def url_traversal(d):
    """Path traversal and junk in URLs."""
    for path in ("/api/v1/jobs/../../etc/passwd", "/api/v1/jobs/%2e%2e%2f%2e%2e%2fetc",
                 "/api/v1/jobs/ABCDEF012345", "/api/v1/jobs/0123456789abc",
                 "/api/v1/jobs/0123456789a", "/api/v1/jobs//history", "/../../etc/passwd",
                 "/api/v1/jobs/0123456789ab/../../x", "/api/v1/jobs/0123456789ab/weights/x",
                 "/api/v1/jobs/" + "a" * 5000):
        r = d.req("GET", path, "alice")
        check(r.status_code in (400, 404, 414, 431), "GET %s: %d" % (path[:60], r.status_code))
    alive(d, "URL traversal")


def methods(d):
    for method in ("PUT", "PATCH", "OPTIONS"):
        expect_error(d.req(method, "/api/v1/jobs", "alice"), 405, method)
    r = raw(d, b"BREW /api/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
    check(status_of(r) in (400, 405, 501), "BREW: %r" % r[:80])


def bad_secrets(d):
    """Missing, wrong, malformed headers, a secret in the wrong place."""
    text = json.dumps(QUICK_JOB)
    for headers in ({}, {"Authorization": ""}, {"Authorization": "Bearer"},
                    {"Authorization": "Bearer "}, {"Authorization": "bearer wrong"},
                    {"Authorization": "Token " + SECRETS["alice"]},
                    {"Authorization": "Bearer " + SECRETS["alice"][:-1]},
                    {"Authorization": "Bearer " + "x" * 8000}):
        r = d.req("POST", "/api/v1/jobs", body=text, headers=dict(headers))
        check(r.status_code in (401, 431), "auth %r: %d" % (str(headers)[:40], r.status_code))
        if r.status_code == 401:
            expect_error(r, 401, "auth")
    # A secret without "Bearer" is told what the header lacks (issue 31 #15).
    e = expect_error(d.req("POST", "/api/v1/jobs", body=text,
                           headers={"Authorization": SECRETS["alice"]}), 401, "no Bearer")
    check("Bearer" in e["error"] and "missing secret" not in e["error"], e)
    # The secret in a v1 body is not accepted (only the seed endpoints read it).
    expect_error(d.req("POST", "/api/v1/jobs", body=job_like(QUICK_JOB, secret=SECRETS["alice"])),
                 401, "secret in a v1 body")
    alive(d, "secrets")


def chunks(total, size=16384):
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        sent += n
        yield b" " * n


def huge_bodies(d):
    """A declared length over the cap is answered before the body is read."""
    expect_error(post(d, b"{" + b" " * 70000 + b"}"), 413, "declared 70 kB")
    expect_error(post(d, b"{" + b" " * 70000 + b"}", path="/api/submit"), 413, "seed 70 kB")
    # Chunked bodies have no length: the running total is capped.
    r = d.req("POST", "/api/v1/jobs", "alice", data=chunks(200000))
    expect_error(r, 413, "chunked 200 kB")
    # A chunked stream far past the cap is cut off; the daemon stays up.
    head = ("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" % SECRETS["alice"]).encode()
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b"z" * (1 << 20))
    s = socket.create_connection(("127.0.0.1", d.port), timeout=20)
    try:
        s.sendall(head)
        for _ in range(32):
            s.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        s.close()
    alive(d, "32 MiB chunked upload")


def garbage(d):
    """A lying Content-Length, then the connection closes; not HTTP at all."""
    raw(d, b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a\":", read=False)
    for junk in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),
                 b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"\r\n\r\n\r\n",
                 b"GET /healthz HTTP/1.1\r\n" + b"X-A: b\r\n" * 5000 + b"\r\n",
                 b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                 b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        raw(d, junk)
    alive(d, "garbage")


def query_strings(d):
    """Junk in ?state= and ?offset=, repeated and huge parameters."""
    jid = d.submit_id("alice")
    expect_error(d.req("GET", "/api/v1/jobs?state=QUEUED", "alice"), 400, "state case")
    expect_error(d.req("GET", "/api/v1/jobs?state=%ff%fe", "alice"), 400, "state bytes")
    expect_error(d.req("GET", "/api/v1/jobs/%s/logs?offset=99999999999999999999999" % jid, "alice"),
                 400, "offset overflow")
    r = d.req("GET", "/api/v1/jobs/%s/logs?offset=1000000" % jid, "alice")
    check(r.status_code == 200 and r.content == b"", "offset past the end: %d" % r.status_code)
    r = d.req("GET", "/api/v1/jobs?" + "&".join("a%d=%d" % (i, i) for i in range(500)), "alice")
    check(r.status_code in (200, 414, 431), "many query args: %d" % r.status_code)
    return jid


def nothing_created(d, jid):
    """Nothing above created a job but the one valid submit (jid); the
    daemon is still up."""
    jobs = d.req("GET", "/api/v1/jobs", "root").json()["jobs"]
    check([j["id"] for j in jobs] == [jid], "bad requests created jobs: %s" % jobs)
    alive(d, "the corpus")
    check(d.alive(), "daemon died:\n" + d.read_log())


if __name__ == "__main__":
    punchtest.main(cases)
