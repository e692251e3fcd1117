"""it_tls.py — punch against punchcardd over HTTPS, with a throwaway CA made
at test time (openssl): --cacert and PUNCH_CACERT make it work; without them
the system's CAs do not know the server and punch says what to pass; a
secret is never sent over plain http:// to another machine unless
--insecure (refused before any connection); client/notebook_example.py
trains over https with PUNCH_CACERT."""
import json
import os
import shutil
import subprocess
import tempfile

import punchtest
from punchtest import Daemon, check


def punch(args, env_extra=None, home=None):
    return punchtest.run_client(args, home, env_extra)


def over_https(d, tls, home):
    secret = d.secrets["alice"]
    base = ["--url", d.url, "list", "--json"]
    r = punch(["--cacert", tls["ca"]] + base, {"PUNCH_SECRET": secret}, home)
    check(r.returncode == 0,
          "--cacert: exit %d %s %s" % (r.returncode, r.stdout, r.stderr))
    r = punch(base, {"PUNCH_SECRET": secret, "PUNCH_CACERT": tls["ca"]}, home)
    check(r.returncode == 0, "PUNCH_CACERT: exit %d %s" % (r.returncode, r.stderr))
    r = punch(base, {"PUNCH_SECRET": secret}, home)
    check(r.returncode == 3 and "certificate is not trusted" in r.stderr and "--cacert" in r.stderr,
          "no CA: exit %d %s" % (r.returncode, r.stderr))
    r = punch(["--cacert", os.path.join(home, "missing.pem")] + base,
              {"PUNCH_SECRET": secret}, home)
    check(r.returncode != 0 and "missing.pem" in r.stderr,
          "a missing CA file: exit %d %s" % (r.returncode, r.stderr))


def notebook(d, tls, home):
    """The notebook example, over https, trusting the CA through PUNCH_CACERT
    (the environment's REQUESTS_CA_BUNDLE, if any, must not win)."""
    punchtest.require_engine()
    punchtest.require_dataset("fashion-mnist")
    with open(punchtest.source_path("tests", "client", "jobs", "mlp-small.json")) as f:
        spec = json.load(f)
    spec["name"] = "client-tls-notebook"
    spec["training"]["epochs"] = 1
    job_path = os.path.join(home, "notebook-job.json")
    with open(job_path, "w") as f:
        json.dump(spec, f)
    hide = os.path.join(home, "no-matplotlib")
    os.makedirs(os.path.join(hide, "matplotlib"), exist_ok=True)
    with open(os.path.join(hide, "matplotlib", "__init__.py"), "w") as f:
        f.write("raise ImportError('hidden by tests/client/it_tls.py')\n")
    env = dict(os.environ, PUNCH_URL=d.url, PUNCH_SECRET=d.secrets["alice"],
               PUNCH_CACERT=tls["ca"], PYTHONPATH=hide,
               REQUESTS_CA_BUNDLE="/nonexistent/bundle.pem")
    r = subprocess.run(["/usr/bin/python3", punchtest.source_path("client", "notebook_example.py"),
                        job_path], capture_output=True, text=True, env=env, cwd=home, timeout=240)
    check(r.returncode == 0, "notebook_example.py over https: exit %d\n%s\n%s"
          % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))


def clear_text(home):
    url = "http://10.255.255.1:9"  # never reached: refused before connecting
    r = punch(["--url", url, "list"], {"PUNCH_SECRET": "s3cret"}, home)
    check(r.returncode == 2 and "clear text" in r.stderr and "--insecure" in r.stderr,
          "plain http to another host: exit %d %s" % (r.returncode, r.stderr))
    # With --insecure it connects: through a proxy on a closed local port,
    # so nothing leaves this machine.
    closed = "http://127.0.0.1:%d" % punchtest.free_port()
    r = punch(["--url", url, "--insecure", "list"],
              {"PUNCH_SECRET": "s3cret", "http_proxy": closed, "HTTP_PROXY": closed,
               "no_proxy": "", "NO_PROXY": ""}, home)
    check(r.returncode == 3 and "clear text" not in r.stderr,
          "with --insecure it tries to connect: exit %d %s" % (r.returncode, r.stderr))


def cases():
    tmp = tempfile.mkdtemp(prefix="punch-ctls-")
    try:
        tls = punchtest.make_tls(tmp)
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        d = Daemon(["--tls-cert", tls["cert"], "--tls-key", tls["key"]])
        d.scheme, d.verify = "https", tls["ca"]
        with d:
            punchtest.case("punch over https", over_https, d, tls, home)
            punchtest.case("notebook over https", notebook, d, tls, home)
        punchtest.case("no secret in clear text", clear_text, home)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    punchtest.main(cases)
