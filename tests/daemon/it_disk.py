"""it_disk.py — disk limits: a job whose run directory grows past
--job-output-quota-mb is stopped and fails saying so; a user whose run
directories hold more than --user-quota-mb gets 507 (JSON) on submit while
another user does not; a spec padded with whitespace is stored compacted
(job.json); /healthz says degraded when the data dir's file system has less
free space than --disk-min-free-pct; below --disk-reserve-mb a job that
writes a checkpoint is stopped and fails saying so, its unfinished
checkpoint file removed, while a job that writes none runs on."""
import json
import os

import punchtest
from punchtest import (FINAL_STATES, QUICK_JOB, Daemon, check, expect_error, job_like, touch,
                       wait_for)

# A job named "fill" writes 4 MiB into its run directory; every job then
# waits for OUT/release (60 s at most).
FILLER = punchtest.stand_in_engine("""if grep -q '"name":"fill"' "$spec"; then
  head -c 4194304 /dev/urandom > "$out/filler.bin"
fi
if grep -q '"name":"ckpt"' "$spec"; then
  mkdir -p "$out/checkpoints"
  head -c 65536 /dev/zero > "$out/checkpoints/.ckpt.bin.tmp.Ab12Cd"
fi
i=0
while [ ! -e "$out/release" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
""")


def cases():
    with Daemon(["--job-output-quota-mb", "1", "--user-quota-mb", "2", "--slots", "2",
                 "--max-running", "0"]) as d:
        d.engine_script("filler.sh", FILLER)
        d.restart()
        punchtest.case("a padded spec is stored compacted", compacted, d)
        punchtest.case("a job past its output quota fails; its user is then over quota",
                       quotas, d)
        punchtest.case("healthz: ok, then degraded below the free-space threshold", healthz, d)
        punchtest.case("below the reserve a checkpoint write stops its job", reserve, d)


def compacted(d):
    text = json.dumps(job_like(QUICK_JOB, name="padded"))
    body = text[:1] + " " * 200000 + text[1:]
    r = d.submit("bob", body)
    check(r.status_code == 201, "padded submit: %d %s" % (r.status_code, r.text[:200]))
    jid = r.json()["id"]
    path = os.path.join(d.run_dir(jid), "job.json")
    wait_for(lambda: os.path.exists(path), "job.json of the padded job", timeout=30)
    check(os.path.getsize(path) < 2000, "job.json holds %d bytes" % os.path.getsize(path))
    touch(os.path.join(d.run_dir(jid), "release"))
    d.wait_state("bob", jid, FINAL_STATES, timeout=60)


def quotas(d):
    jid = d.submit_id("alice", job_like(QUICK_JOB, name="fill"))
    j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
    check(j["state"] == "failed" and "job_output_quota_mb" in (j["error"] or ""),
          "over its quota: %s" % j)
    r = d.submit("alice")
    body = expect_error(r, 507, "alice over her quota")
    check("user_quota_mb" in body["error"], body["error"])
    r = d.submit("bob")
    check(r.status_code == 201, "bob is not over quota: %d %s" % (r.status_code, r.text[:200]))
    if r.status_code == 201:
        jid = r.json()["id"]
        d.wait_state("bob", jid, ("running",), timeout=60)
        touch(os.path.join(d.run_dir(jid), "release"))
        d.wait_state("bob", jid, FINAL_STATES, timeout=60)


def healthz(d):
    st = os.statvfs(d.data_dir)
    free_pct = 100.0 * st.f_bavail / st.f_blocks
    j = d.req("GET", "/healthz").json()
    if free_pct >= 5:
        check(j["status"] == "ok", "healthz with %.1f%% free: %s" % (free_pct, j))
    d.restart(d.args + ["--disk-min-free-pct", "100"])
    r = d.req("GET", "/healthz")
    j = r.json()
    check(r.status_code == 200 and j["status"] == "degraded" and "free" in j.get("reason", ""),
          "healthz below the threshold: %d %s" % (r.status_code, j))


def reserve(d):
    # A reserve larger than any disk: every checkpoint write is below it.
    d.restart(d.args + ["--disk-reserve-mb", str(1 << 30), "--user-quota-mb", "0"])
    quiet = d.submit_id("bob", job_like(QUICK_JOB, name="quiet"))
    d.wait_state("bob", quiet, ("running",), timeout=60)
    jid = d.submit_id("bob", job_like(QUICK_JOB, name="ckpt"))
    j = d.wait_state("bob", jid, FINAL_STATES, timeout=60)
    check(j["state"] == "failed" and "below its reserve" in (j["error"] or "")
          and "leave room for others" in j["error"], "below the reserve: %s" % j)
    left = os.listdir(os.path.join(d.run_dir(jid), "checkpoints"))
    check(left == [], "unfinished checkpoint files left: %s" % left)
    check(d.job("bob", quiet)["state"] == "running", "the job that writes no checkpoint runs on")
    touch(os.path.join(d.run_dir(quiet), "release"))
    d.wait_state("bob", quiet, FINAL_STATES, timeout=60)


if __name__ == "__main__":
    punchtest.main(cases)
