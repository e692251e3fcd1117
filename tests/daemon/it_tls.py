"""it_tls.py — punchcardd over HTTPS with a throwaway CA made at test time
(openssl): served with --tls-cert/--tls-key to a client that trusts the CA,
refused by one that trusts another CA (requests and curl), not served in
clear text (a plain request gets only a 400 saying to use https://); mutual TLS (--tls-client-ca) refuses a client without a
certificate and serves one with; bad TLS settings stop the start with a
message; a client that never completes its handshake is closed at the
header deadline; idle connections delay no other, and a plain request sent
after a pause still gets the hint; a daemon listening beyond loopback without TLS warns."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import punchtest
from punchtest import Daemon, check, expect_error, requests


def tls_daemon(tls, extra=()):
    d = Daemon(["--hold", "--tls-cert", tls["cert"], "--tls-key", tls["key"]] + list(extra))
    d.scheme = "https"
    d.verify = tls["ca"]
    return d


def served(d, other):
    r = d.req("GET", "/api/v1/jobs", "alice")
    check(r.status_code == 200 and r.json()["jobs"] == [], "GET jobs over https: %d" % r.status_code)
    try:
        requests.get(d.url + "/healthz", verify=other["ca"], timeout=10)
        check(False, "a client trusting another CA was served")
    except requests.exceptions.SSLError:
        pass
    curl = shutil.which("curl")
    if curl:
        out = subprocess.run([curl, "-sS", "--cacert", other["ca"], d.url + "/healthz"],
                             capture_output=True, text=True, timeout=30)
        check(out.returncode == 60, "curl with the wrong CA: exit %d %s" % (out.returncode, out.stderr))
        out = subprocess.run([curl, "-sS", "--cacert", d.verify, d.url + "/healthz"],
                             capture_output=True, text=True, timeout=30)
        check(out.returncode == 0 and '"ok"' in out.stdout, "curl with the CA: %s" % out.stderr)
    # HTTP spoken to the HTTPS port is served nothing but a hint to use
    # https (issue 31 #15; curl said "Empty reply from server").
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    try:
        s.sendall(b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x\r\n\r\n")
        got = read_reply(s)
        check(got.startswith(b"HTTP/1.1 400 ") and b"use https://" in got
              and b"jobs" not in got, "plain HTTP on the TLS port: %r" % got[:200])
    finally:
        s.close()
    if curl:
        out = subprocess.run([curl, "-sS", d.url.replace("https:", "http:") + "/healthz"],
                             capture_output=True, text=True, timeout=30)
        check("use https://" in out.stdout, "curl over http: %r %r" % (out.stdout, out.stderr))


def read_reply(s):
    """What comes on socket s until the server closes it (or resets it, or
    the socket's timeout passes)."""
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    return got


def plain_request(d, s):
    """Send a plain request on socket s; the reply, or what came."""
    s.sendall(b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
    return read_reply(s)


def idle_connections(d):
    """Connections that send nothing hold no thread (the plain-HTTP check
    waits for no bytes): with 50 idle ones open, a request is served; a
    plain request sent after a pause still gets the hint."""
    idle = [socket.create_connection(("127.0.0.1", d.port), timeout=10) for _ in range(50)]
    try:
        # Well past the 10 ms the check once waited for the first bytes,
        # inside the 2 s header deadline.
        time.sleep(0.3)
        got = plain_request(d, idle[0])
        check(got.startswith(b"HTTP/1.1 400 ") and b"use https://" in got,
              "a plain request after a pause: %r" % got[:200])
        t0 = time.monotonic()
        for _ in range(5):
            r = d.req("GET", "/api/v1/jobs", "alice")
            check(r.status_code == 200, "GET jobs beside 49 idle connections: %d" % r.status_code)
        check(time.monotonic() - t0 < 5, "5 requests beside 49 idle connections took %.1f s" % (
            time.monotonic() - t0))
    finally:
        for s in idle:
            s.close()


def stalled_handshake(d):
    """Half a TLS ClientHello, then nothing more (the idle timeout is 30 s):
    the 2 s header deadline ends it."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=20)
    try:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        try:
            got = s.recv(4096)
        except ConnectionResetError:
            got = b""
        except socket.timeout:
            got = None
        check(got is not None, "a stalled handshake still open after 20 s")
    finally:
        s.close()


def mutual(d, tls, other):
    url = d.url + "/api/v1/jobs"
    auth = {"Authorization": "Bearer " + d.secrets["alice"]}
    for what, cert in (("no client certificate", None),
                       ("a client certificate of another CA",
                        (other["client_cert"], other["client_key"]))):
        try:
            r = requests.get(url, headers=auth, verify=tls["ca"], timeout=10, cert=cert)
            expect_error(r, 403, what)
        except requests.exceptions.SSLError:
            pass  # refused in the handshake: as good
    r = requests.get(url, headers=auth, verify=tls["ca"], timeout=10,
                     cert=(tls["client_cert"], tls["client_key"]))
    check(r.status_code == 200, "with a client certificate: %d %s" % (r.status_code, r.text))


def refused_start(args, what, words):
    d = Daemon(args)
    try:
        rc = d.start_refused()
        log = d.read_log()
        check(rc != 0, "%s: started" % what)
        check(all(w in log for w in words), "%s: log lacks %s:\n%s" % (what, words, log[-2000:]))
    finally:
        d.cleanup()


def bad_settings(tls, other):
    refused_start(["--tls-cert", tls["cert"]], "cert without key", ["tls_key"])
    refused_start(["--tls-cert", tls["cert"], "--tls-key", "/nonexistent/key.pem"],
                  "missing key file", ["tls_key", "/nonexistent/key.pem"])
    refused_start(["--tls-cert", tls["cert"], "--tls-key", other["key"]],
                  "a key of another certificate",
                  ["tls_key %s is not the key of tls_cert %s" % (other["key"], tls["cert"])])
    refused_start(["--tls-client-ca", tls["ca"]], "client CA alone", ["tls_client_ca"])


def clear_text_warning():
    with Daemon(["--hold"]) as d:
        check("without TLS" not in d.read_log(), "warned on loopback:\n" + d.read_log())
        # The start line follows the first /healthz answer by a moment.
        punchtest.wait_for(lambda: "listening on http://127.0.0.1:" in d.read_log(),
                           "the start line", timeout=10)
    # The later --listen wins; /healthz still reaches it on 127.0.0.1.
    port = punchtest.free_port()
    with Daemon(["--hold", "--listen", "0.0.0.0:%d" % port], port=port) as d:
        check("beyond loopback without TLS" in d.read_log(),
              "no warning listening on 0.0.0.0:\n" + d.read_log())


def cases():
    tmp = tempfile.mkdtemp(prefix="punch-tls-")
    try:
        for sub in ("site", "other"):
            os.mkdir(os.path.join(tmp, sub))
        tls = punchtest.make_tls(os.path.join(tmp, "site"), client=True)
        other = punchtest.make_tls(os.path.join(tmp, "other"), client=True)
        with tls_daemon(tls, ["--header-timeout", "2"]) as d:
            punchtest.case("https", served, d, other)
            punchtest.case("the start line says https", lambda: punchtest.wait_for(
                lambda: "listening on https://" in d.read_log(), "the https start line",
                timeout=10))
            punchtest.case("idle connections", idle_connections, d)
            punchtest.case("stalled handshake", stalled_handshake, d)
        d = tls_daemon(tls, ["--tls-client-ca", tls["ca"]])
        d.cert = (tls["client_cert"], tls["client_key"])
        with d:
            punchtest.case("mutual TLS", mutual, d, tls, other)
        punchtest.case("bad TLS settings", bad_settings, tls, other)
        punchtest.case("clear-text warning", clear_text_warning)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    punchtest.main(cases)
