"""it_startup.py — punchcardd refuses to start, with a message naming the
problem, on a bad or missing secrets file, an unusable data dir, a data dir
another punchcardd holds, a port in use and a bad flag; --help works;
SIGHUP reloads the secrets (a broken file keeps the old ones); no secret
ever appears in the log."""
import signal
import socket

import punchtest
from punchtest import SECRETS, Daemon, check, wait_for


def cases():
    punchtest.case("a broken secrets file", broken_secrets)
    punchtest.case("a missing secrets file", refused, ["--hold", "--secrets",
                                                       "/nonexistent/secrets.json"],
                   "/nonexistent/secrets.json")
    punchtest.case("an unusable data dir", refused, ["--hold"], "/etc/hostname/data",
                   data_dir="/etc/hostname/data")
    punchtest.case("an unknown flag", refused, ["--hold", "--no-such-flag"], "--no-such-flag",
                   code=2)
    punchtest.case("a bad flag value", refused, ["--hold", "--slots", "many"], "slots", code=2)
    punchtest.case("a port in use", port_in_use)
    with Daemon(["--hold"]) as a:
        punchtest.case("a data dir another punchcardd holds", refused, ["--hold"],
                       "in use by another punchcardd", data_dir=a.data_dir)
        punchtest.case("SIGHUP reloads the secrets", sighup, a)
        punchtest.case("no secret in the log", no_secret_logged, a)


def expect_refusal(d, want, code=None):
    """d refuses to start, exit code `code` (or any non-zero), saying `want`."""
    rc = d.start_refused()
    log = d.read_log()
    check(rc != 0 and (code is None or rc == code), "exit code %s for %r:\n%s" % (rc, want, log))
    check(want in log, "message lacks %r:\n%s" % (want, log))


def refused(args, want, code=None, data_dir=None, port=None):
    d = Daemon(args, data_dir=data_dir, port=port)
    try:
        expect_refusal(d, want, code)
    finally:
        d.cleanup()


def broken_secrets():
    """A truncated secrets file: named, and its secret never echoed."""
    d = Daemon(["--hold"])
    try:
        with open(d.secrets_path, "w") as f:
            f.write('[{"secret": "s3cr3t-in-file", "identity": "x"')
        expect_refusal(d, d.secrets_path)
        check("s3cr3t-in-file" not in d.read_log(), "secret in the log")
    finally:
        d.cleanup()


def port_in_use():
    busy = socket.socket()
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        refused(["--hold"], "in use", port=busy.getsockname()[1])
    finally:
        busy.close()


def sighup(a):
    """New secrets take effect, old ones stop; a broken file changes nothing."""
    check(a.req("GET", "/api/v1/jobs", "alice").status_code == 200, "alice before")
    punchtest.write_json(a.secrets_path, [{"secret": "carol-new-secret", "identity": "carol"}])
    a.signal(signal.SIGHUP)
    wait_for(lambda: a.req("GET", "/api/v1/jobs", "alice").status_code == 401,
             "SIGHUP to reload the secrets", timeout=10)
    check(a.req("GET", "/api/v1/jobs", secret="carol-new-secret").status_code == 200, "carol")
    with open(a.secrets_path, "w") as f:
        f.write("[{")
    a.signal(signal.SIGHUP)
    wait_for(lambda: "keeping the old secrets" in a.read_log(),
             "a message about the broken secrets", timeout=10)
    check(a.req("GET", "/api/v1/jobs", secret="carol-new-secret").status_code == 200,
          "broken reload dropped the old secrets")


def no_secret_logged(a):
    """After requests with every secret and a clean stop."""
    a.submit("alice")
    a.stop()
    log = a.read_log()
    for s in list(SECRETS.values()) + ["carol-new-secret"]:
        check(s not in log, "a secret is in the log")


if __name__ == "__main__":
    punchtest.main(cases)
