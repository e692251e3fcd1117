"""it_startup.py — punchcardd refuses to start, with a message naming the
problem, on a bad or missing secrets file, an unusable data dir, a data dir
another punchcardd holds, a port in use and a bad flag; --help works;
SIGHUP reloads the secrets (a broken file keeps the old ones); no secret
ever appears in the log."""
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from punchd import SECRETS, Daemon, check  # noqa: E402


def refused(d, want, code=None):
    rc = d.start(expect_ok=False)
    log = d.read_log()
    check(rc != 0 and (code is None or rc == code), "exit code %s for %r:\n%s" % (rc, want, log))
    check(want in log, "message lacks %r:\n%s" % (want, log))


def main():
    cleanup = []
    try:
        d = Daemon(["--hold"])
        cleanup.append(d)
        with open(d.secrets_path, "w") as f:
            f.write('[{"secret": "s3cr3t-in-file", "identity": "x"')
        refused(d, d.secrets_path)
        check("s3cr3t-in-file" not in d.read_log(), "secret in the log")

        d = Daemon(["--hold", "--secrets", "/nonexistent/secrets.json"])
        cleanup.append(d)
        refused(d, "/nonexistent/secrets.json")

        d = Daemon(["--hold"], data_dir="/etc/hostname/data")
        cleanup.append(d)
        refused(d, "/etc/hostname/data")

        d = Daemon(["--hold", "--no-such-flag"])
        cleanup.append(d)
        refused(d, "--no-such-flag", code=2)

        d = Daemon(["--hold", "--slots", "many"])
        cleanup.append(d)
        refused(d, "slots", code=2)

        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        d = Daemon(["--hold"], port=busy.getsockname()[1])
        cleanup.append(d)
        refused(d, "in use")
        busy.close()

        # One data dir, one daemon.
        a = Daemon(["--hold"])
        cleanup.append(a)
        a.start()
        b = Daemon(["--hold"], data_dir=a.data_dir)
        cleanup.append(b)
        refused(b, "in use by another punchcardd")

        # SIGHUP: new secrets take effect, old ones stop; a broken file changes nothing.
        check(a.req("GET", "/api/v1/jobs", "alice").status_code == 200, "alice before")
        with open(a.secrets_path, "w") as f:
            json.dump([{"secret": "carol-new-secret", "identity": "carol"}], f)
        a.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while a.req("GET", "/api/v1/jobs", "alice").status_code != 401:
            check(time.monotonic() < deadline, "SIGHUP did not reload")
            time.sleep(0.05)
        check(a.req("GET", "/api/v1/jobs", secret="carol-new-secret").status_code == 200, "carol")
        with open(a.secrets_path, "w") as f:
            f.write("[{")
        a.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "keeping the old secrets" not in a.read_log():
            check(time.monotonic() < deadline, "no message about the broken secrets")
            time.sleep(0.05)
        check(a.req("GET", "/api/v1/jobs", secret="carol-new-secret").status_code == 200,
              "broken reload dropped the old secrets")
        a.submit("alice")
        a.stop()
        log = a.read_log()
        for s in list(SECRETS.values()) + ["carol-new-secret"]:
            check(s not in log, "a secret is in the log")
    finally:
        for d in cleanup:
            d.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
