"""it_httplimits.py — the HTTP server's limits seen by a client, against a
real punchcardd: a body over --max-body is drained so the client reads its
413 (and the connection then closes), a client that asks for 100-continue
gets the 413 without sending its body, a 401 names the Bearer scheme."""
import json
import socket

import punchtest
from punchtest import SECRETS, Daemon, check, expect_error

MAX_BODY = 65536


def read_reply(s):
    """Everything until the server closes: (bytes, how it ended)."""
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return out, "open"
        except ConnectionResetError:
            return out, "reset"
        if not chunk:
            return out, "closed"
        out += chunk


def status_and_json(out):
    head, _, body = out.partition(b"\r\n\r\n")
    line = head.split(b"\r\n", 1)[0].split()
    status = int(line[1]) if len(line) > 1 and line[1].isdigit() else None
    try:
        return status, head, json.loads(body)
    except ValueError:
        return status, head, None


def oversized_body(d):
    """4 MiB declared and sent in full: the client finishes sending and reads
    the 413 as JSON; the connection ends after it."""
    size = 4 << 20
    s = socket.create_connection(("127.0.0.1", d.port), timeout=20)
    try:
        s.sendall(b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % (SECRETS["alice"].encode(), size))
        try:
            s.sendall(b" " * size)
        except (BrokenPipeError, ConnectionResetError) as e:
            check(False, "sending the body: %s (the server hung up before reading it)" % e)
        out, end = read_reply(s)
    finally:
        s.close()
    status, head, err = status_and_json(out)
    check(status == 413 and err and "limit" in err.get("error", ""),
          "reply %r (%s)" % (out[:300], end))
    check(end == "closed" and b"connection: close" in head.lower(),
          "the connection %s after the 413: %r" % (end, head))
    # requests sends the body the same way.
    expect_error(d.req("POST", "/api/v1/jobs", "alice", data=b" " * (2 << 20)), 413, "requests 2 MiB")


def expect_continue(d):
    """Expect: 100-continue over the cap: 413 at once, never 100."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=20)
    try:
        s.sendall(b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n"
                  % (SECRETS["alice"].encode(), 1 << 30))
        out, end = read_reply(s)
    finally:
        s.close()
    status, _, err = status_and_json(out)
    check(status == 413 and err is not None, "reply %r (%s)" % (out[:200], end))


def unauthorized(d):
    r = d.req("GET", "/api/v1/jobs")
    expect_error(r, 401, "no secret")
    check(r.headers.get("WWW-Authenticate", "").startswith("Bearer"),
          "401 without WWW-Authenticate: Bearer: %s" % dict(r.headers))
    r = d.req("GET", "/api/v1/jobs", secret="wrong-secret-xxxxxxxxxxxx")
    check(r.status_code == 401 and r.headers.get("WWW-Authenticate", "").startswith("Bearer"),
          "wrong secret: %d %s" % (r.status_code, dict(r.headers)))


def cases():
    with Daemon(["--hold", "--max-body", str(MAX_BODY)]) as d:
        punchtest.case("body over --max-body", oversized_body, d)
        punchtest.case("Expect: 100-continue", expect_continue, d)
        punchtest.case("401 names Bearer", unauthorized, d)
        check(d.req("GET", "/healthz").status_code == 200, "daemon down")


if __name__ == "__main__":
    punchtest.main(cases)
