"""it_slurm_cluster.py — punchcardd --scheduler slurm on a Slurm 22.05
cluster of three namespace hosts (run by tests/cluster/run.sh, so this runs
in h1; slurmcluster.py gives each host a slurmd with one CPU): a 3-rank
allreduce job is placed by Slurm on all three nodes, mpirun takes them from
the allocation (its daemons started with srun), the job succeeds, its
history names a different host for each rank, and its weights download.
Then a node lost mid-job: a 2-node job checkpointing every epoch loses one
of its nodes (the host's link down, its slurmd and the job's processes
there killed, as in a power loss); Slurm finds the node down, requeues the
batch job, and it resumes from its checkpoint on the nodes left and
succeeds, each epoch once in its history."""
import json
import os
import re
import time

import cluster
import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, job_like, read_json, wait_for
from slurmcluster import Slurm, require_slurm

# Slurm's defaults would make the lost-node case last minutes: a node is
# down after SlurmdTimeout (300 s) without an answer, a requeued job is held
# back cred_expire + 1 s (121 s), and a job whose hold has passed waits for
# the backfill pass (every 30 s). SlurmdTimeout=8: pinged every ~3 s.
SLURMD_TIMEOUT = 8
CRED_EXPIRE = 5
SLURM_CONF = "SlurmdTimeout=%d\nSchedulerParameters=bf_interval=1\n" % SLURMD_TIMEOUT
# 2 ranks in short epochs: the node is lost after the first checkpoints and
# the job still has epochs to do when it resumes: 18 epochs left leave a
# fast machine seconds of margin between the 2nd checkpoint and the crash.
EPOCHS = 20
LOSS_JOB = job_like(punchtest.synthetic_job("nodeloss", 64, [(256, "relu"), (10, "softmax")],
                                            6000, 100, EPOCHS),
                    distributed={"trainer": "allreduce", "workers": 2},
                    resources={"threads_per_worker": 1})


def cases():
    require_slurm()
    punchtest.require_engine()
    if not os.environ.get("PUNCH_CLUSTER_HOSTS"):
        punchtest.skip("run through tests/cluster/run.sh (the namespace cluster)")
    slurm = Slurm(conf_extra=SLURM_CONF, cred_expire=CRED_EXPIRE)
    try:
        slurm.start()
        os.environ.update(slurm.env)
        with Daemon(["--scheduler", "slurm"]) as d:
            punchtest.case("a 3-rank allreduce spans the three nodes", spanning, d, slurm)
            punchtest.case("a node lost: Slurm requeues, the job resumes on the others",
                           node_lost, d, slurm)
    finally:
        slurm.close()


def spanning(d, slurm):
    t0 = time.monotonic()
    a = d.submit_id("alice", job_like(QUICK_JOB, distributed={"trainer": "allreduce",
                                                                "workers": 3}))
    j = d.wait_state("alice", a, FINAL_STATES, timeout=120)
    took = time.monotonic() - t0
    check(j["state"] == "succeeded", "state %s\n%s\n%s\n%s" % (
        j, d.read_log()[-3000:], d.train_log(a), slurm.logs()))
    h = read_json(os.path.join(d.run_dir(a), "history.json"))
    check(sorted(h.get("rank_hosts") or []) == ["h1", "h2", "h3"],
          "rank_hosts %r, want one rank on each of h1, h2, h3" % h.get("rank_hosts"))
    r = d.req("GET", "/api/v1/jobs/%s/weights" % a, "alice")
    check(r.status_code == 200 and len(r.content) > 8, "weights: %d" % r.status_code)
    print("  submit -> succeeded on 3 Slurm nodes: %.2f s" % took)


def events(d, job_id):
    return d.req("GET", "/api/v1/jobs/%s/events" % job_id, "alice").json()["events"]


def slurm_job_nodes(slurm, sid):
    """The job's nodes and its batch host, as scontrol shows them."""
    text = slurm.client("scontrol", "show", "job", str(sid))
    nodes = re.search(r"\bNodeList=(\S+)", text).group(1)
    batch = re.search(r"\bBatchHost=(\S+)", text).group(1)
    return slurm.client("scontrol", "show", "hostnames", nodes).split(), batch


def node_lost(d, slurm):
    a = d.submit_id("alice", LOSS_JOB)
    d.wait_state("alice", a, ("running",), timeout=60)
    sid = int(next(re.match(r"Slurm job (\d+)", e["detail"] or "").group(1)
                   for e in events(d, a) if re.match(r"Slurm job \d+", e["detail"] or "")))
    nodes, batch = slurm_job_nodes(slurm, sid)
    # Not the batch host (the job's script runs there) nor h1 (this test).
    victims = [n for n in nodes if n not in (batch, "h1")]
    punchtest.require(len(nodes) == 2 and victims, "job on %r, batch host %s" % (nodes, batch))
    victim = victims[0]
    hist_path = os.path.join(d.run_dir(a), "history.json")

    def epochs_done():
        try:
            return len(read_json(hist_path).get("loss", []))
        except (OSError, ValueError):
            return 0
    wait_for(lambda: epochs_done() >= 2, "two epochs of job " + a, timeout=60)
    lost_at = time.monotonic()
    cluster.crash_host(victim)
    slurm.node_lost(victim)

    def requeued():
        return [e for e in events(d, a) if "requeued by Slurm" in (e["detail"] or "")]
    found = wait_for(requeued, lambda _: "the requeue of job %s:\n%s\n%s" % (
        a, d.read_log()[-3000:], slurm.logs()), timeout=60)
    took = time.monotonic() - lost_at
    check(found[0]["from"] == "running" and found[0]["to"] == "queued", found)
    check("resumes from its last checkpoint" in found[0]["detail"], found)
    d.wait_state("alice", a, ("running",) + FINAL_STATES, timeout=60)
    rerun = time.monotonic() - lost_at
    j = d.wait_state("alice", a, FINAL_STATES, timeout=90)
    check(j["state"] == "succeeded", "after the requeue: %s\n%s\n%s" % (
        j, d.train_log(a)[-2000:], slurm.logs()))
    h = read_json(hist_path)
    check(len(h.get("loss", [])) == EPOCHS, "every epoch once: %s" % h.get("loss"))
    check(victim not in (h.get("rank_hosts") or []) and len(h.get("rank_hosts") or []) == 2,
          "resumed on %r, %s lost" % (h.get("rank_hosts"), victim))
    with open(os.path.join(d.run_dir(a), "progress.jsonl")) as f:
        starts = [e for e in map(json.loads, f) if e.get("event") == "start"]
    check(len(starts) == 2 and starts[1].get("resumed"), "start events: %s" % starts)
    state = slurm.client("sinfo", "-h", "-n", victim, "-o", "%t").strip()
    check(state.startswith("down"), "%s shown %r by sinfo" % (victim, state))
    print("  node %s lost -> requeued %.1f s later (%s), running again at %.1f s, "
          "succeeded at %.1f s" % (victim, took, found[0]["detail"], rerun,
                                   time.monotonic() - lost_at))


if __name__ == "__main__":
    punchtest.main(cases)
