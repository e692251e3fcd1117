"""it_slurm_cluster.py — punchcardd --scheduler slurm on a Slurm 22.05
cluster of three namespace hosts (run by tests/cluster/run.sh, so this runs
in h1; slurmcluster.py gives each host a slurmd with one CPU): a 3-rank
allreduce job is placed by Slurm on all three nodes, mpirun takes them from
the allocation (its daemons started with srun), the job succeeds, its
history names a different host for each rank, and its weights download."""
import os
import time

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, job_like, read_json
from slurmcluster import Slurm, require_slurm


def cases():
    require_slurm()
    punchtest.require_engine()
    if not os.environ.get("PUNCH_CLUSTER_HOSTS"):
        punchtest.skip("run through tests/cluster/run.sh (the namespace cluster)")
    slurm = Slurm()
    try:
        slurm.start()
        os.environ.update(slurm.env)
        with Daemon(["--scheduler", "slurm"]) as d:
            punchtest.case("a 3-rank allreduce spans the three nodes", spanning, d, slurm)
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


if __name__ == "__main__":
    punchtest.main(cases)
