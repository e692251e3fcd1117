"""it_framing.py — request framing per RFC 9112 against a real punchcardd,
over raw sockets: differing duplicate Content-Length (a smuggled second
request), Content-Length with Transfer-Encoding, whitespace before a header's
colon, a missing or duplicated Host in HTTP/1.1, a transfer coding other than
chunked, a control character in the path (%00 included) or the method. Each gets exactly one 400 with a JSON error, and the connection is
closed after it (nothing after the ambiguous request is parsed); what RFC
9112 allows still works."""
import json
import re
import socket

import punchtest
from punchtest import SECRETS, Daemon, check

BODY = b'{"name":"x"}'
STATUS_LINE = re.compile(rb"(?:^|\r\n)HTTP/1\.[01] [0-9]{3} ")


def exchange(d, payload, timeout=10):
    """Send payload, then read until the server closes: (bytes, closed).
    closed is False when the server kept the connection open for `timeout`."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=timeout)
    out = b""
    try:
        s.sendall(payload)
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return out, False
            except ConnectionResetError:
                return out, True
            if not chunk:
                return out, True
            out += chunk
    finally:
        s.close()


def expect_one_400(d, what, payload):
    out, closed = exchange(d, payload)
    statuses = len(STATUS_LINE.findall(out))
    check(statuses == 1, "%s: %d status lines in %r" % (what, statuses, out[:400]))
    head, _, body = out.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 400 "), "%s: %r" % (what, head[:80]))
    check(b"\r\nconnection: close" in head.lower(), "%s: no Connection: close in %r" % (what, head))
    try:
        err = json.loads(body)
        check(isinstance(err.get("error"), str) and err["error"], "%s: body %r" % (what, body))
    except ValueError:
        check(False, "%s: not JSON: %r" % (what, body[:200]))
    check(closed, "%s: the connection stayed open" % what)


def ambiguous(d):
    post = b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n" % \
        SECRETS["alice"].encode()
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    cases = [
        ("differing Content-Lengths",
         post + b"Content-Length: 12\r\nContent-Length: 50\r\n\r\n" + BODY + smuggled),
        ("Content-Length with Transfer-Encoding",
         post + b"Content-Length: 12\r\nTransfer-Encoding: chunked\r\n\r\nc\r\n" + BODY +
         b"\r\n0\r\n\r\n" + smuggled),
        ("whitespace before a colon", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Foo : bar\r\n\r\n"),
        ("Content-Length with whitespace before the colon",
         post + b"Content-Length : 12\r\n\r\n" + BODY + smuggled),
        ("no Host in HTTP/1.1", b"GET /healthz HTTP/1.1\r\n\r\n"),
        ("two Hosts", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ("gzip transfer coding", post + b"Transfer-Encoding: gzip\r\n\r\n" + BODY),
        ("gzip, chunked", post + b"Transfer-Encoding: gzip, chunked\r\n\r\nc\r\n" + BODY +
         b"\r\n0\r\n\r\n"),
        ("two Transfer-Encodings", post + b"Transfer-Encoding: chunked\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        # A decoded NUL once ended the path: this was /healthz, 200.
        ("%00 in the path", b"GET /healthz%00/x HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("%01 in the path", b"GET /healthz%01 HTTP/1.1\r\nHost: x\r\n\r\n"),
        # A method that is not a token was answered 405 as if it were one.
        ("a control character in the method", b"G\x01T /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ]
    for what, payload in cases:
        expect_one_400(d, what, payload)


def allowed(d):
    """Equal repeated Content-Lengths, HTTP/1.0 without Host, a chunked
    body, two pipelined requests on one connection, and an escaped
    printable character in the path all still work."""
    out, _ = exchange(d, b"GET /heal%74hz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 200 "), "escaped path: %r" % out[:80])
    out, _ = exchange(d, b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"Content-Length: 12\r\nContent-Length: 12\r\n\r\n" + BODY)
    check(out.startswith(b"HTTP/1.1 401 "), "equal Content-Lengths: %r" % out[:80])
    out, _ = exchange(d, b"GET /healthz HTTP/1.0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 200 "), "HTTP/1.0 without Host: %r" % out[:80])
    out, _ = exchange(d, b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"Transfer-Encoding: Chunked\r\n\r\nc\r\n" + BODY + b"\r\n0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 401 "), "chunked: %r" % out[:80])
    out, _ = exchange(d, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check(out.count(b"HTTP/1.1 200 ") == 2, "pipelined: %r" % out[:400])


def cases():
    with Daemon(["--hold"]) as d:
        punchtest.case("ambiguous framing", ambiguous, d)
        punchtest.case("unambiguous framing", allowed, d)
        check(d.req("GET", "/healthz").status_code == 200, "daemon down after the corpus")


if __name__ == "__main__":
    punchtest.main(cases)
