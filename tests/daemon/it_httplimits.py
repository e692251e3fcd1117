"""it_httplimits.py — the HTTP server's limits seen by a client, against a
real punchcardd: a body over --max-body, and one refused from the header
alone (a bad upload name, no secret), is drained so the client reads its
answer (and the connection then closes), a client that asks for 100-continue
gets the 413 without sending its body, a 401 names the Bearer scheme; a
client dribbling its header or body is closed at the total deadline
(--header-timeout, --body-timeout) though never idle; the per-address and
global connection caps refuse the connection over them while other clients
are still served; /metrics is public by default and admin-only with
--metrics-auth admin."""
import json
import select
import socket
import time

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


def refused_early(d):
    """Issue 31 #8: bodies refused from the header alone are read before the
    answer, so a notebook's requests.put sees the 400/401/413, not a
    BrokenPipeError: 8 MB to a bad dataset name, 3 MB without a secret,
    16 MiB to a 64 KiB --max-body (once cut off past 8 MiB over the cap).
    The body follows the header after a pause, as over a real network,
    where the server has decided before the body arrives."""
    for what, method, path, user, size, want in [
            ("8 MB to a bad dataset name", "PUT", "/api/v1/datasets/bad..name", "alice",
             8000000, 400),
            ("3 MB without a secret", "PUT", "/api/v1/datasets/fm", None, 3 << 20, 401),
            ("16 MiB over a 64 KiB cap", "POST", "/api/v1/jobs", "alice", 16 << 20, 413)]:
        auth = b"Authorization: Bearer %s\r\n" % SECRETS[user].encode() if user else b""
        s = socket.create_connection(("127.0.0.1", d.port), timeout=20)
        try:
            s.sendall(b"%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s"
                      b"Content-Length: %d\r\n\r\n" % (method.encode(), path.encode(), auth, size))
            time.sleep(0.3)
            try:
                chunk = b"x" * (1 << 20)
                for at in range(0, size, len(chunk)):
                    s.sendall(chunk[:size - at])
            except (BrokenPipeError, ConnectionResetError) as e:
                check(False, "%s: sending the body: %s (the server hung up first)" % (what, e))
                continue
            out, end = read_reply(s)
        finally:
            s.close()
        status, _, err = status_and_json(out)
        check(status == want and err and err.get("error"),
              "%s: reply %r (%s)" % (what, out[:200], end))
    check(d.req("GET", "/healthz").status_code == 200, "daemon down after the drains")


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


def dribble(d, head, data, limit_s):
    """Send head, then data one byte every 0.2 s (never idle for the 30 s
    idle timeout); return the seconds until the server ended the connection,
    or None if it still had not after limit_s."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    start = time.monotonic()
    try:
        s.sendall(head)
        for i in range(len(data)):
            if time.monotonic() - start > limit_s:
                return None
            try:
                s.sendall(data[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - start
            readable, _, _ = select.select([s], [], [], 0.2)
            if readable:
                try:
                    got = s.recv(4096)
                except ConnectionResetError:
                    got = b""
                if not got:
                    return time.monotonic() - start
        return None
    finally:
        s.close()


def slow_header(d):
    """A header dribbled without end: closed at --header-timeout (2 s)."""
    took = dribble(d, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X-Slow: " + b"a" * 1000, 20)
    check(took is not None and took >= 1.5, "a dribbled header ran %s s" % took)
    check(d.req("GET", "/healthz").status_code == 200, "daemon down")


def slow_body(d):
    """A body dribbled without end: closed at --body-timeout (2 s)."""
    head = (b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            b"Content-Length: 5000\r\n\r\n" % SECRETS["alice"].encode())
    took = dribble(d, head, b" " * 5000, 20)
    check(took is not None and took >= 1.5, "a dribbled body ran %s s" % took)


def kept_alive(d):
    """A kept-alive connection that is quick each time serves several
    requests over more than the header deadline."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    try:
        for _ in range(4):
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            got = s.recv(4096)
            check(got.startswith(b"HTTP/1.1 200 "), "kept-alive request: %r" % got[:80])
            time.sleep(0.7)
    finally:
        s.close()


def connect_from(d, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", d.port))
    return s


def served(s):
    """Whether a GET /healthz on s is answered 200 (False when the server
    closed it instead)."""
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        return s.recv(4096).startswith(b"HTTP/1.1 200 ")
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        return False


def connection_caps(d):
    """--per-ip-limit 2, --connection-limit 3 (one HTTP thread, so the
    global cap is exact): a third connection from one address is closed
    unserved while another address is served; a fourth in all waits unserved
    in the backlog until one of the others closes, and is then served.
    Addresses other than 127.0.0.1, where the start's /healthz polls may
    still count for a moment."""
    held = [connect_from(d, "127.0.0.11") for _ in range(2)]
    try:
        for s in held:
            check(served(s), "one of the first two connections was not served")
        third = connect_from(d, "127.0.0.11")
        check(not served(third), "a third connection from one address was served")
        third.close()
        other = connect_from(d, "127.0.0.12")
        held.append(other)
        check(served(other), "another address was not served beside the first one's two")
        fourth = connect_from(d, "127.0.0.13")
        held.append(fourth)
        fourth.settimeout(2)
        fourth.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            early = fourth.recv(4096)
        except socket.timeout:
            early = None
        check(early is None, "a fourth connection in all was answered: %r" % early)
        held.pop(0).close()
        fourth.settimeout(10)
        try:
            late = fourth.recv(4096)
        except socket.timeout:
            late = b"(nothing in 10 s)"
        check(late.startswith(b"HTTP/1.1 200 "), "the waiting connection, once one closed: %r"
              % late[:80])
    finally:
        for s in held:
            s.close()


def metrics_public(d):
    check(d.req("GET", "/metrics").status_code == 200, "default: /metrics needs a secret")


def metrics_admin(d):
    expect_error(d.req("GET", "/metrics"), 401, "no secret")
    expect_error(d.req("GET", "/metrics", "alice"), 403, "a user")
    r = d.req("GET", "/metrics", "root")
    check(r.status_code == 200 and "punchcard_http_requests_total" in r.text,
          "the admin: %d" % r.status_code)
    check(d.req("GET", "/healthz").status_code == 200, "/healthz stays public")


def cases():
    with Daemon(["--hold", "--max-body", str(MAX_BODY)]) as d:
        punchtest.case("body over --max-body", oversized_body, d)
        punchtest.case("Expect: 100-continue", expect_continue, d)
        punchtest.case("bodies refused early are read first", refused_early, d)
        punchtest.case("401 names Bearer", unauthorized, d)
        punchtest.case("metrics public by default", metrics_public, d)
        check(d.req("GET", "/healthz").status_code == 200, "daemon down")
    with Daemon(["--hold", "--header-timeout", "2", "--body-timeout", "2"]) as d:
        punchtest.case("header deadline", slow_header, d)
        punchtest.case("body deadline", slow_body, d)
        punchtest.case("kept alive", kept_alive, d)
    with Daemon(["--hold", "--per-ip-limit", "2", "--connection-limit", "3", "--http-threads", "1"]) as d:
        d.session.close()
        punchtest.case("connection caps", connection_caps, d)
    with Daemon(["--hold", "--metrics-auth", "admin"]) as d:
        punchtest.case("metrics for admins", metrics_admin, d)


if __name__ == "__main__":
    punchtest.main(cases)
