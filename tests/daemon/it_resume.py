"""it_resume.py — POST /api/v1/jobs/ID/resume against a real punchcardd and
punch-train: a job cancelled mid-training goes back to the queue under the
same id, continues from the checkpoint its SIGTERM wrote, and ends with
exactly the weights (byte for byte) of the same job run without a break
(the single trainer is deterministic for a seed and thread count, and its
checkpoint holds the position inside the epoch). Only the owner may resume,
and only a failed, cancelled or timed-out job; the events record it; punch
resume does the same from the command line."""
import json
import os
import subprocess

import punchtest
from punchtest import MEDIUM_JOB, Daemon, check, expect_error, wait_for

JOB = punchtest.job_like(MEDIUM_JOB, name="resumable")
# Steps of about 2 s (two 2048-wide layers, batch 2048, on one thread) and
# a 34 MB checkpoint: longer than the 1 s Open MPI gave a rank between a
# cancel's SIGTERM and SIGKILL, which once lost the step and the checkpoint.
SLOW = punchtest.synthetic_job("slow-steps", 2048, [(2048, "relu"), (2048, "relu"),
                                                   (10, "softmax")], 6144, 64, 1)
SLOW["training"].update(batch_size=2048, optimizer={"name": "sgd"})


def cases():
    punchtest.require_engine()
    with Daemon(["--slots", "2", "--max-running", "2"]) as d:
        punchtest.case("resume after cancel = uninterrupted", same_weights, d)
        punchtest.case("cancel mid-step: the step ends, its checkpoint is whole", slow_step, d)


def weights(d, jid):
    with open(os.path.join(d.run_dir(jid), "weights.npz"), "rb") as f:
        return f.read()


def same_weights(d):
    straight = d.submit_id("alice", JOB)
    broken = d.submit_id("alice", JOB)
    expect_error(d.req("POST", "/api/v1/jobs/%s/resume" % broken, "alice"), 409,
                 "resume a queued or running job")

    def epochs_done():
        j = d.job("alice", broken)
        epoch = (j.get("progress") or {}).get("epoch") or 0
        return j if epoch >= 2 or j["state"] in punchtest.FINAL_STATES else None
    j = wait_for(epochs_done, "two epochs of the job to cancel", timeout=120)
    check(j["state"] == "running", "cancelled while running: %s" % j["state"])
    check(d.req("DELETE", "/api/v1/jobs/" + broken, "alice").status_code == 200, "cancel")
    end = d.wait_state("alice", broken, punchtest.FINAL_STATES, timeout=60)
    punchtest.require(end["state"] == "cancelled", "the job ended %s before the cancel"
                      % end["state"])
    check(os.path.exists(os.path.join(d.run_dir(broken), "checkpoints", "ckpt.bin")),
          "a checkpoint to resume from")

    expect_error(d.req("POST", "/api/v1/jobs/%s/resume" % broken, "bob"), 404, "bob resumes")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUNCH_")}
    env.update(PUNCH_URL=d.url, PUNCH_SECRET=d.secrets["alice"], HOME=d.tmp)
    exe = os.environ.get("PUNCH") or punchtest.build_path("client", "punch")
    p = subprocess.run([exe, "resume", broken], capture_output=True, text=True, env=env,
                       timeout=60)
    check(p.returncode == 0 and broken in p.stdout, "punch resume: %d %s %s"
          % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([exe, "resume", broken], capture_output=True, text=True, env=env,
                       timeout=60)
    check(p.returncode != 0 and "only a failed, cancelled or timed-out job" in p.stderr,
          "resume twice: %d %s" % (p.returncode, p.stderr))

    for jid in (straight, broken):
        end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=180)
        check(end["state"] == "succeeded", "%s: %s\n%s" % (jid, end, d.train_log(jid)))
    check(weights(d, straight) == weights(d, broken),
          "resumed weights differ from the uninterrupted run's")
    hist = d.req("GET", "/api/v1/jobs/%s/history" % broken, "alice").json()
    check(len(hist["loss"]) == JOB["training"]["epochs"],
          "history of the resumed job: %s" % hist)
    events = d.req("GET", "/api/v1/jobs/%s/events" % broken, "alice").json()["events"]
    trail = [(e["from"], e["to"]) for e in events]
    check(("cancelled", "queued") in trail, trail)
    check(any(e["detail"] == "resumed by alice: continues from its last checkpoint"
              for e in events), events)
    check(trail[-1][1] == "succeeded", trail)
    expect_error(d.req("POST", "/api/v1/jobs/%s/resume" % straight, "alice"), 409,
                 "resume a succeeded job")


def slow_step(d):
    jid = d.submit_id("alice", SLOW)

    progress = os.path.join(d.run_dir(jid), "progress.jsonl")

    def first_step():
        try:
            with open(progress) as f:
                return '"event":"step"' in f.read()
        except OSError:
            return False
    # Read from the file, not the job view (which may lag): the cancel must
    # come right after a step's event, with the next step just begun.
    wait_for(first_step, "the first step of the slow job", timeout=120, interval=0.02)
    check(d.req("POST", "/api/v1/jobs/%s/cancel" % jid, "alice").status_code == 200, "cancel")
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=120)
    check(end["state"] == "cancelled", "%s\n%s" % (end, d.train_log(jid)))
    log = d.train_log(jid)
    check("checkpoint saved" in log, "the step in progress and its checkpoint finished:\n" + log)
    for sub in ("", "checkpoints"):
        left = [f for f in os.listdir(os.path.join(d.run_dir(jid), sub)) if ".tmp." in f]
        check(not left, "temporary files left in %s: %s" % (sub or "the run dir", left))
    check(d.req("POST", "/api/v1/jobs/%s/resume" % jid, "alice").status_code == 200, "resume")
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=180)
    check(end["state"] == "succeeded", "%s\n%s" % (end, d.train_log(jid)))
    events = d.req("GET", "/api/v1/jobs/%s/events" % jid, "alice").json()["events"]
    check(any(e["detail"] == "resumed by alice: continues from its last checkpoint"
              for e in events), events)
    with open(progress) as f:
        starts = [json.loads(line) for line in f if '"start"' in line]
    check(len(starts) == 2 and starts[1]["resumed"], "start events: %s" % starts)


if __name__ == "__main__":
    punchtest.main(cases)
