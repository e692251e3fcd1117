"""it_slurm.py — punchcardd --scheduler slurm against a real Slurm 22.05
(slurmcluster.py: munged, slurmctld, one slurmd, started here as root):
a 2-rank allreduce job is written a batch script, submitted with sbatch
(its Slurm id, comment and events recorded), runs under Slurm's allocation
and succeeds with its weights downloadable; a job waiting in Slurm shows
Slurm's reason; two users' waiting jobs run in Slurm's order; cancel while
pending and while running reaches Slurm (scancel); kill -9 of punchcardd
and a restart re-attach a running and a pending job by their stored Slurm
ids; slurmctld stopped: submits get 503, and once it is back the jobs are
followed again and a new job runs; `scontrol requeue` of a running job:
queued again with an event saying so, then it resumes from its checkpoint
and succeeds; an ASHA sweep's promotion follows its trials' ends under
Slurm (the sweep's job-end hook); a job past Slurm's time limit ends as timeout (normal build
only: Slurm's smallest limit is a minute). Not covered here: jobs spanning
nodes (one node in this machine's namespace; it_slurm_cluster.py)."""
import json
import os
import time

import punchtest
from punchtest import FINAL_STATES, LONG_JOB, QUICK_JOB, Daemon, check, job_like, wait_for
from slurmcluster import Slurm, require_slurm

TWO_RANKS = {"trainer": "allreduce", "workers": 2}
# The submit-to-first-rank latency is a measurement, not a check (six 2-rank
# jobs, about a minute of the suite): PUNCH_SLURM_LATENCY=1 runs it.
MEASURE_LATENCY = os.environ.get("PUNCH_SLURM_LATENCY") == "1"


def cases():
    require_slurm()
    punchtest.require_engine()
    slurm = Slurm()
    try:
        slurm.start()
        os.environ.update(slurm.env)
        with Daemon(["--scheduler", "slurm"]) as d:
            punchtest.case("an allreduce job runs under Slurm and its weights download",
                           allreduce, d, slurm)
            punchtest.case("two users' jobs run in Slurm's order; cancel pending and running",
                           cancel, d, slurm)
            punchtest.case("kill -9 and restart re-attach running and pending jobs",
                           reattach, d, slurm)
            # The sweep's two rounds of Slurm jobs run beside the requeue
            # case's waits rather than adding their own.
            sweep = punchtest.case("an ASHA sweep under Slurm: submitted", asha_submit, d)
            punchtest.case("scontrol requeue: queued again, resumes from its checkpoint",
                           requeue, d, slurm)
            if sweep:
                punchtest.case("an ASHA sweep promotes as its trials end under Slurm",
                               asha_promoted, d, sweep)
            punchtest.case("slurmctld down: 503 on submit; followed again when it is back",
                           ctld_down, d, slurm)
            slurm_s = local_s = None
            if MEASURE_LATENCY:
                slurm_s = punchtest.case("submit to first rank under Slurm", latency, d)
            if os.environ.get("PUNCH_SLURM_TIME_LIMIT") == "1":
                punchtest.case("Slurm's time limit ends a job as timeout", time_limit, d, slurm)
        if MEASURE_LATENCY:
            with Daemon() as d:
                local_s = punchtest.case("submit to first rank, local scheduler", latency, d)
        if slurm_s and local_s:
            print("  submit -> first rank's start line, median of 3: Slurm %.2f s, local %.2f s"
                  % (slurm_s, local_s))
    finally:
        slurm.close()


def slurm_id(d, job_id, user="alice"):
    """The Slurm id from the job's events ("Slurm job N")."""
    r = d.req("GET", "/api/v1/jobs/%s/events" % job_id, user)
    punchtest.require(r.status_code == 200, "events: %d %s" % (r.status_code, r.text))
    for e in r.json()["events"] if isinstance(r.json(), dict) else r.json():
        detail = e.get("detail") or ""
        if detail.startswith("Slurm job "):
            return int(detail.split()[2])
    punchtest.fail("no Slurm job in the events of %s: %s" % (job_id, r.text))


def slurm_state(slurm, sid):
    for line in slurm.client("squeue", "--me", "-h", "-t", "all", "-o", "%i|%T").splitlines():
        i, state = line.split("|")
        if int(i) == sid:
            return state
    return None


def allreduce(d, slurm):
    t0 = time.monotonic()
    a = d.submit_id("alice", job_like(QUICK_JOB, distributed=TWO_RANKS))
    j = d.wait_state("alice", a, FINAL_STATES, timeout=90)
    took = time.monotonic() - t0
    check(j["state"] == "succeeded", "state %s\n%s\n%s" % (j, d.read_log()[-3000:],
                                                           d.train_log(a)))
    sid = slurm_id(d, a)
    check(slurm_state(slurm, sid) == "COMPLETED", "Slurm's state of %d" % sid)
    show = slurm.client("scontrol", "show", "job", str(sid))
    check("Comment=punchcard id=%s user=alice" % a in show, "comment in:\n" + show)
    check("NumTasks=2" in show, "ntasks in:\n" + show)
    run = d.run_dir(a)
    for f in ("slurm.sh", "slurm.out", "supervisor.json", "exit.json", "job.json"):
        check(os.path.exists(os.path.join(run, f)), "%s missing from the run directory" % f)
    r = d.req("GET", "/api/v1/jobs/%s/weights" % a, "alice")
    check(r.status_code == 200 and len(r.content) > 8, "weights: %d" % r.status_code)
    print("  submit -> succeeded under Slurm: %.2f s" % took)


def running_and_pending(d):
    """A long job that takes every CPU of the node, running, and a second
    one pending in Slurm behind it: (a, b, b's job object)."""
    big = job_like(LONG_JOB, resources={"threads_per_worker": os.cpu_count() or 1})
    a = d.submit_id("alice", big)
    d.wait_state("alice", a, ("running",), timeout=60)
    b = d.submit_id("alice", big)
    jb = wait_for(lambda: (lambda j: j if j.get("waiting_for") not in (None, "submitting", "slurm")
                           else None)(d.job("alice", b)),
                  "Slurm's reason for the pending job", timeout=30)
    return a, b, jb


def cancel(d, slurm):
    """Also the order: alice's b and then bob's c wait behind a; when a is
    cancelled b runs and c still waits (Slurm's order, first come first
    served here), then c is cancelled pending and b running."""
    a, b, jb = running_and_pending(d)
    check(jb["state"] == "queued" and jb["waiting_for"] in ("Resources", "Priority"),
          "pending job: %s" % jb)
    big = job_like(LONG_JOB, resources={"threads_per_worker": os.cpu_count() or 1})
    c = d.submit_id("bob", big)
    wait_for(lambda: d.job("bob", c).get("waiting_for") in ("Resources", "Priority") or None,
             "bob's job pending in Slurm", timeout=30)
    sa = slurm_id(d, a)
    check(d.req("DELETE", "/api/v1/jobs/" + a, "alice").status_code == 200, "cancel running a")
    ja = d.wait_state("alice", a, FINAL_STATES, timeout=60)
    check(ja["state"] == "cancelled", "a: %s" % ja)
    check(slurm_state(slurm, sa) == "CANCELLED", "Slurm's state of running %d" % sa)
    d.wait_state("alice", b, ("running",), timeout=60)
    jc = d.job("bob", c)
    check(jc["state"] == "queued" and jc["waiting_for"] in ("Resources", "Priority"),
          "bob's later job still waits while alice's earlier one runs: %s" % jc)
    sc = slurm_id(d, c, "bob")
    check(d.req("DELETE", "/api/v1/jobs/" + c, "bob").status_code == 200, "cancel pending c")
    check(d.wait_state("bob", c, FINAL_STATES)["state"] == "cancelled", "c cancelled")
    wait_for(lambda: slurm_state(slurm, sc) == "CANCELLED", "Slurm to cancel pending %d" % sc,
             timeout=30)
    sb = slurm_id(d, b)
    check(d.req("DELETE", "/api/v1/jobs/" + b, "alice").status_code == 200, "cancel running b")
    check(d.wait_state("alice", b, FINAL_STATES, timeout=60)["state"] == "cancelled", "b")
    check(slurm_state(slurm, sb) == "CANCELLED", "Slurm's state of running %d" % sb)


def reattach(d, slurm):
    a, b, _ = running_and_pending(d)
    sa, sb = slurm_id(d, a), slurm_id(d, b)
    d.kill9()
    d.start()
    check(d.job("alice", a)["state"] == "running", "a after restart")
    check(d.job("alice", b)["state"] == "queued", "b after restart")
    check(d.req("DELETE", "/api/v1/jobs/" + a, "alice").status_code == 200, "cancel a")
    check(d.wait_state("alice", a, FINAL_STATES, timeout=60)["state"] == "cancelled", "a")
    d.wait_state("alice", b, ("running",), timeout=60)
    check(slurm_id(d, b) == sb and slurm_state(slurm, sa) == "CANCELLED",
          "the same Slurm jobs followed")
    check(d.req("DELETE", "/api/v1/jobs/" + b, "alice").status_code == 200, "cancel b")
    check(d.wait_state("alice", b, FINAL_STATES, timeout=60)["state"] == "cancelled", "b")


def progress_events(d, job_id, kind):
    path = os.path.join(d.run_dir(job_id), "progress.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [e for e in map(json.loads, f) if e.get("event") == kind]


def requeue(d, slurm):
    # About 30 epochs of MEDIUM_JOB's size: long enough to requeue mid-run.
    a = d.submit_id("alice", job_like(punchtest.MEDIUM_JOB, training=dict(
        punchtest.MEDIUM_JOB["training"], epochs=30)))
    d.wait_state("alice", a, ("running",), timeout=60)
    wait_for(lambda: len(progress_events(d, a, "epoch")) >= 2 or None, "two epochs", timeout=60)
    sid = slurm_id(d, a)
    slurm.client("scontrol", "requeue", str(sid))
    wait_for(lambda: any("requeued by Slurm" in (e.get("detail") or "")
                         for e in d.req("GET", "/api/v1/jobs/%s/events" % a, "alice")
                         .json()["events"]) or None, "the requeue in the events", timeout=60)
    # Slurm holds a requeued job back about two minutes (reason BeginTime);
    # an admin may release it at once, as here.
    wait_for(lambda: slurm_state(slurm, sid) == "PENDING" or None, "Slurm's requeue", timeout=30)
    slurm.client("scontrol", "update", "JobId=%d" % sid, "StartTime=now")
    j = d.wait_state("alice", a, FINAL_STATES, timeout=180)
    check(j["state"] == "succeeded", "after the requeue: %s\n%s" % (j, d.train_log(a)))
    starts = progress_events(d, a, "start")
    check(len(starts) == 2 and not starts[0]["resumed"] and starts[1]["resumed"] and
          starts[1]["epoch"] >= 1, "the second run resumed: %s" % starts)
    check(slurm_id(d, a) == sid, "the same Slurm job ran twice")


def job_events(d, job_id):
    return d.req("GET", "/api/v1/jobs/%s/events" % job_id, "alice").json()["events"]


def asha_submit(d):
    """Two learning rates, rungs at 1 and 2 epochs (eta 2), both trials
    submitted at once; (sweep id, trial jobs) for asha_promoted."""
    body = {"name": "asha-slurm", "job": job_like(QUICK_JOB, name="trial"),
            "search": {"method": "asha", "metric": "loss", "max_concurrent": 2,
                       "asha": {"min_epochs": 1, "max_epochs": 2, "reduction_factor": 2},
                       "parameters": {"training.optimizer.learning_rate":
                                      {"values": [0.01, 0.5]}}}}
    r = d.req("POST", "/api/v1/sweeps", "alice", body=body)
    check(r.status_code == 201, "sweep submit: %d %s" % (r.status_code, r.text))
    sid = r.json()["id"]
    jobs = [t["job"] for t in d.req("GET", "/api/v1/sweeps/" + sid, "alice").json()["trials"]]
    check(len(jobs) == 2 and all(jobs), "both trials submitted at once: %s" % jobs)
    return sid, jobs


def asha_promoted(d, sweep):
    """The better trial at rung 1 was promoted when both had ended, through
    the job-end hook that settle_job calls for a job Slurm ended: only the
    jobs are watched here (a read of the sweep would advance it too)."""
    sid, jobs = sweep

    def promoted_done():
        for j in jobs:
            ev = job_events(d, j)
            at = [i for i, e in enumerate(ev) if "promoted by sweep" in (e.get("detail") or "")]
            if at and any(e["to"] == "succeeded" for e in ev[at[-1]:]):
                return j
        return None
    best = wait_for(promoted_done, "a trial promoted and run again under Slurm", timeout=120)
    check(sum(1 for e in job_events(d, best) if e["to"] == "running") == 2,
          "two Slurm runs of the promoted trial: %s" % job_events(d, best))
    s = d.req("GET", "/api/v1/sweeps/" + sid, "alice").json()
    check(s["state"] == "succeeded" and s["best"]["job"] == best and
          s["best"]["epochs_run"] == 2, "the sweep: %s" % s)


def latency(d):
    """Median over 3 runs of the same 2-rank job: seconds from the submit's
    answer to the first rank's "start" line in progress.jsonl (measured,
    not asserted)."""
    took = []
    for _ in range(3):
        t0 = time.monotonic()
        a = d.submit_id("alice", job_like(QUICK_JOB, distributed=TWO_RANKS))
        wait_for(lambda: progress_events(d, a, "start") or None, "the first rank's start line",
                 timeout=90, interval=0.02)
        took.append(time.monotonic() - t0)
        check(d.wait_state("alice", a, FINAL_STATES, timeout=90)["state"] == "succeeded",
              "job %s succeeded" % a)
    return sorted(took)[1]


def time_limit(d, slurm):
    """Slurm's smallest limit is a minute, and slurmctld looks for jobs past
    theirs about every 30 s: this case waits about 90 s, so meson runs it in
    the normal build only (PUNCH_SLURM_TIME_LIMIT)."""
    a = d.submit_id("alice", job_like(LONG_JOB, resources={"threads_per_worker": 1,
                                                           "time_limit_s": 60}))
    d.wait_state("alice", a, ("running",), timeout=60)
    sid = slurm_id(d, a)
    check("TimeLimit=00:01:00" in slurm.client("scontrol", "show", "job", str(sid)),
          "sbatch --time of a 60 s limit")
    j = d.wait_state("alice", a, FINAL_STATES, timeout=180)
    check(j["state"] == "timeout", "past Slurm's time limit: %s" % j)
    check(slurm_state(slurm, sid) == "TIMEOUT", "Slurm's state of %d" % sid)
    check("TIMEOUT" in (j.get("error") or ""), "the error names Slurm's TIMEOUT: %s" % j)


def ctld_down(d, slurm):
    slurm.stop_ctld()
    # A Response of 503 is falsy: wait for its text.
    body = wait_for(lambda: (lambda r: r.text if r.status_code == 503 else None)(
        d.submit("alice")), "a 503 while slurmctld is down", timeout=60, interval=0.5)
    check("Slurm is not reachable" in body, "503 body: %s" % body)
    slurm.start_ctld()
    wait_for(lambda: d.submit("alice").status_code == 201 or None,
             "submits accepted again", timeout=60, interval=0.5)
    a = d.submit_id("alice", job_like(QUICK_JOB, distributed=TWO_RANKS))
    j = d.wait_state("alice", a, FINAL_STATES, timeout=90)
    check(j["state"] == "succeeded", "after slurmctld's restart: %s\n%s" % (j, d.train_log(a)))


if __name__ == "__main__":
    punchtest.main(cases)
