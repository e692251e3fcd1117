#!/usr/bin/python3
"""Integration tests on a cluster of hosts made of network namespaces
(issue 14). Run through tests/cluster/run.sh, which builds the hosts around
this script (it runs in h1): `run.sh /usr/bin/python3 cluster_test.py CASE`.

Engine-level cases run punch-train under mpirun across the hosts; the
daemon-level cases run punchcardd --hostfile on them. Ranks talk over TCP
between hosts (btl self,vader,tcp, set by run.sh)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import cluster
import punchtest
from punchtest import check, read_json, require

PUNCH_TRAIN = punchtest.engine_path()


def job(trainer, workers, batch, epochs=2, extra_dist=None):
    """A small Fashion-MNIST mlp job (seconds on 2 cores)."""
    return {"name": "cluster-test", "model": "mlp",
            "data": {"format": "idx", "train": "fashion-mnist/train",
                     "test": "fashion-mnist/t10k", "train_samples": 1200,
                     "test_samples": 500, "validation_split": 0.1},
            "training": {"epochs": epochs, "batch_size": batch, "seed": 3,
                         "optimizer": {"name": "adam"}},
            "distributed": dict({"trainer": trainer, "workers": workers}, **(extra_dist or {})),
            "resources": {"threads_per_worker": 1}}


def run_job(tmp, name, spec, ranks=None, hostfile=None, env=None):
    """Train `spec` (under mpirun across hostfile's hosts unless ranks is
    None); returns the output directory."""
    out = os.path.join(tmp, name)
    path = punchtest.write_json(os.path.join(tmp, name + ".json"), spec)
    if ranks is None:
        punchtest.train(PUNCH_TRAIN, path, out)
    else:
        cluster.train(PUNCH_TRAIN, path, out, ranks, hostfile, env)
    return out


def history(out):
    return read_json(os.path.join(out, "history.json"))


def weights(out):
    return punchtest.load_npz(os.path.join(out, "weights.npz"))


def max_diff(a, b):
    require(sorted(a) == sorted(b), "different tensors: %s vs %s" % (sorted(a), sorted(b)))
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


# ---- engine-level cases ------------------------------------------------------

def case_allreduce(tmp):
    """3 ranks, one per host, batch 16 == single with batch 48 (as on one
    host), and history.json names the three hosts, rank by rank."""
    hostfile = cluster.write_hostfile(os.path.join(tmp, "hosts"), 1)
    ref = run_job(tmp, "single", job("single", 1, 48))
    check(history(ref).get("rank_hosts") == ["h1"],
          "single: rank_hosts %r, want ['h1']" % history(ref).get("rank_hosts"))
    out = run_job(tmp, "ar3", job("allreduce", 3, 16), 3, hostfile,
                  {"PUNCH_DIST_CHECK_SYNC": "1"})
    d = max_diff(weights(ref), weights(out))
    print("allreduce over 3 hosts: max |w - w_single| = %.3g" % d)
    check(d < 1e-6, "allreduce over 3 hosts differs from single with batch 48 by %g" % d)
    h = history(out)
    check(h.get("rank_hosts") == ["h1", "h2", "h3"],
          "rank_hosts %r, want one rank on each of h1, h2, h3" % h.get("rank_hosts"))


def case_async(tmp):
    """downpour with its server (rank 0) on h1 and its two workers on h2
    and h3 trains to a finite, lower loss and finishes."""
    hostfile = cluster.write_hostfile(os.path.join(tmp, "hosts"), 1)
    out = run_job(tmp, "downpour", job("downpour", 2, 32,
                                       extra_dist={"communication_window": 4}), 3, hostfile)
    h = history(out)
    print("downpour over 3 hosts: loss %s commits %s" % (h["loss"], h.get("commits")))
    check(h.get("rank_hosts") == ["h1", "h2", "h3"],
          "rank_hosts %r, want server on h1, workers on h2 and h3" % h.get("rank_hosts"))
    check(all(np.isfinite(h["loss"])) and h["loss"][-1] < h["loss"][0],
          "loss not finite or not lower: %s" % h["loss"])
    check(h.get("commits", 0) > 0 and
          h["commits"] == sum(w["commits"] for w in h["workers"]),
          "server received %s commits, workers sent %s" % (
              h.get("commits"), [w.get("commits") for w in h["workers"]]))


def start_async(tmp, name, epochs):
    """downpour under mpirun --enable-recovery (as punchcardd runs it), its
    server on h1 and workers on h2 and h3, with a 4 s silence bound; returns
    (process, stderr file, out) once its first epoch is written."""
    hostfile = cluster.write_hostfile(os.path.join(tmp, "hosts"), 1)
    spec = job("downpour", 2, 32, epochs=epochs, extra_dist={"communication_window": 4})
    out = os.path.join(tmp, name)
    path = punchtest.write_json(os.path.join(tmp, name + ".json"), spec)
    env = dict(punchtest.MPI_ENV, OMPI_MCA_orte_enable_recovery="1", PUNCH_WATCHDOG_S="4")
    cmd = cluster.mpirun_cmd(3, hostfile, env) + [PUNCH_TRAIN, path, "--out", out,
                                                  "--datasets", punchtest.DATASETS]
    err = open(out + ".err", "w+")
    p = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=err)
    try:
        punchtest.wait_for(lambda: p.poll() is not None or
                           (history_or_none(out) or {}).get("loss"), "a first epoch", 60)
    except BaseException:
        p.kill()
        p.wait()
        raise
    require(p.poll() is None, "%s ended before it could be interrupted" % name)
    return p, err, out


def wait_async(p, err):
    """mpirun's exit code, the seconds it took, and its stderr."""
    rc, secs = punchtest.wait_ended(p, "mpirun still running 90 s after the loss", timeout=90)
    err.seek(0)
    return rc, secs, err.read()


def case_async_host_lost(tmp):
    """A parameter-server job across hosts under --enable-recovery: its
    worker on h3 (rank 2) killed, over TCP, the job finishes with the
    worker in lost_workers and every epoch in its history. The whole host
    lost (its orted too) is not survived by Open MPI 4.1.4, which ends the
    job when it loses a daemon, recovery or not: the job fails in seconds
    (and punchcardd requeues it from its checkpoint), rather than hang."""
    p, err, out = start_async(tmp, "worker", 12)
    ranks = [pid for pid in cluster.host_pids("h3")
             if punchtest.proc_stat(pid) and open("/proc/%d/comm" % pid).read().strip()
             == "punch-train"]
    require(len(ranks) == 1, "punch-train processes on h3: %s" % ranks)
    os.kill(ranks[0], 9)
    rc, secs, text = wait_async(p, err)
    h = history_or_none(out) or {}
    print("rank 2 on h3 killed: mpirun exit %d %.1f s later; lost_workers %s, %d epochs, "
          "test %s" % (rc, secs, h.get("lost_workers"), len(h.get("loss", [])), h.get("test")))
    check(rc == 0, "mpirun exited %d after a worker was killed:\n%s" % (rc, text[-3000:]))
    check([x["rank"] for x in h.get("lost_workers", [])] == [2],
          "lost_workers %r, want rank 2" % h.get("lost_workers"))
    check(len(h.get("loss", [])) == 12 and all(np.isfinite(h["loss"])),
          "epochs: %s" % h.get("loss"))

    p, err, out = start_async(tmp, "host", 200)
    cluster.crash_host("h3")
    rc, secs, text = wait_async(p, err)
    print("h3 lost: mpirun exit %d %.1f s later" % (rc, secs))
    check(rc != 0 and secs < 30, "mpirun exited %d %.1f s after h3 was lost" % (rc, secs))


def history_or_none(out):
    try:
        return history(out)
    except (OSError, ValueError):
        return None


# ---- daemon-level cases ------------------------------------------------------
#
# punchcardd runs in h1 with --hostfile naming the hosts; it places each
# job on concrete hosts (the job's "hosts": [{"host", "ranks"}]), writes
# RUNDIR/hostfile with exactly that allocation and launches mpirun with
# btl self,vader,tcp plus --mpirun-args (here the cluster's rsh agent and
# interfaces, what an admin sets). GET /api/v1/cluster (admin) lists the
# hosts with slots, slots_used and state.

def distributed(base, trainer, workers, **changes):
    return punchtest.job_like(base, distributed={"trainer": trainer, "workers": workers},
                              resources={"threads_per_worker": 1}, **changes)


# About 3 s of allreduce on 3 ranks alone on 2 cores (more beside another
# job or under ASan): long enough to be seen running on its hosts.
RUNNING_JOB = distributed(punchtest.MEDIUM_JOB, "allreduce", 3)
# Runs until cancelled, in short epochs (history.json soon written).
ENDLESS_JOB = distributed(punchtest.synthetic_job(
    "endless", 64, [(256, "relu"), (10, "softmax")], 6000, 100, 100000), "allreduce", 3)


def cluster_daemon(tmp, slots, extra=()):
    """A punchcardd placing jobs on every host with `slots` slots each."""
    hostfile = cluster.write_hostfile(os.path.join(tmp, "daemon-hosts"), slots)
    env = os.environ
    mpirun_args = " ".join(
        "--mca %s %s" % (k, env["OMPI_MCA_" + k])
        for k in ("plm_rsh_agent", "rtc_hwloc_vmhole", "btl_tcp_if_include",
                  "oob_tcp_if_include"))
    return punchtest.Daemon(cluster.daemon_args(hostfile) +
                            ["--mpirun-args", mpirun_args] + list(extra))


def cluster_view(d):
    r = d.req("GET", "/api/v1/cluster", "root")
    require(r.status_code == 200, "GET /api/v1/cluster: %d %s" % (r.status_code, r.text[:300]))
    return {h["host"]: h for h in r.json()["hosts"]}


def job_hosts(j):
    """A job's allocation as {host: ranks}."""
    return {a["host"]: a["ranks"] for a in j.get("hosts") or []}


def hostfile_slots(path):
    """An Open MPI hostfile's "HOST slots=N" lines as {host: N}."""
    slots = {}
    with open(path) as f:
        for line in f:
            words = line.split("#")[0].split()
            if words:
                n = [w[len("slots="):] for w in words[1:] if w.startswith("slots=")]
                slots[words[0]] = int(n[0]) if n else 1
    return slots


def rank_hosts_seen(d, job_id, ranks):
    """{host: ranks} of the job's punch-train processes, by their network
    namespace, once all `ranks` of them run."""
    def seen():
        found = {}
        for pid, cmd in punchtest.job_processes(d.run_dir(job_id)):
            if "punch-train" in cmd and "mpirun" not in cmd and "orted" not in cmd:
                h = cluster.host_of(pid)
                found[h] = found.get(h, 0) + 1
        return found if sum(found.values()) == ranks else None
    return punchtest.wait_for(seen, "the %d ranks of job %s" % (ranks, job_id), 60)


def case_daemon_disjoint(tmp):
    """Two users' concurrent jobs get disjoint slots: each job's ranks run
    where its allocation says (by the namespace of its processes), and no
    host runs more ranks than its slots."""
    with cluster_daemon(tmp, 2) as d:
        a = d.submit_id("alice", ENDLESS_JOB)
        b = d.submit_id("bob", ENDLESS_JOB)
        seen = {}
        for user, jid in (("alice", a), ("bob", b)):
            j = d.wait_state(user, jid, ("running",), 60)
            alloc = job_hosts(j)
            check(sum(alloc.values()) == 3, "job %s allocation %r: want 3 ranks" % (jid, alloc))
            seen[jid] = rank_hosts_seen(d, jid, 3)
            check(seen[jid] == alloc, "job %s: ranks run on %r, allocation says %r"
                  % (jid, seen[jid], alloc))
            written = hostfile_slots(os.path.join(d.run_dir(jid), "hostfile"))
            check(written == alloc, "job %s: RUNDIR/hostfile gives %r, allocation says %r"
                  % (jid, written, alloc))
        for h in cluster.hosts():
            used = sum(s.get(h.name, 0) for s in seen.values())
            check(used <= 2, "%s runs %d ranks of the two jobs on 2 slots" % (h.name, used))
        view = cluster_view(d)
        check(sum(v["slots_used"] for v in view.values()) == 6,
              "cluster view while both run: %r" % view)
        for user, jid in (("alice", a), ("bob", b)):
            h = punchtest.wait_for(lambda: _read_history(d, jid), "history of job " + jid, 90)
            if check("rank_hosts" in h, "job %s: history.json has no rank_hosts" % jid):
                got = {}
                for name in h["rank_hosts"]:
                    got[name] = got.get(name, 0) + 1
                check(got == seen[jid], "job %s: rank_hosts %r, processes ran on %r"
                      % (jid, h["rank_hosts"], seen[jid]))
            r = d.req("DELETE", "/api/v1/jobs/" + jid, user)
            check(r.status_code in (200, 202), "cancel %s: %d" % (jid, r.status_code))
            d.wait_state(user, jid, ("cancelled",), 60)


def _read_history(d, job_id):
    try:
        return read_json(os.path.join(d.run_dir(job_id), "history.json"))
    except (OSError, ValueError):
        return None


def case_daemon_host_lost(tmp):
    """A host lost mid-job (off the network, its processes gone) fails
    that job within seconds naming the host; the host is shown down and the
    next job placed on the others; once it answers the probe again it is
    shown up. (Requeued by itself otherwise: case_daemon_host_requeue.)"""
    with cluster_daemon(tmp, 1, ["--host-probe-interval-s", "1", "--host-loss-retries", "0"]) as d:
        jid = d.submit_id("alice", ENDLESS_JOB)
        j = d.wait_state("alice", jid, ("running",), 60)
        rank_hosts_seen(d, jid, 3)
        victim, others = "h2", ("h1", "h3")
        require(job_hosts(j).get(victim), "job %s has no rank on %s: %r" % (jid, victim, j))
        cluster.crash_host(victim)
        j = d.wait_state("alice", jid, ("failed",), 30)
        error = j.get("error") or ""
        check(victim in error and not any(h in error for h in others),
              "job failed with %r: it should name %s alone" % (error, victim))
        last = {}

        def state_is(want):
            last.update(cluster_view(d))
            return last if last[victim]["state"] == want else None
        view = punchtest.wait_for(lambda: state_is("down"), lambda _: "%s shown down: %r\n%s"
                                  % (victim, last, d.read_log()[-3000:]), 30)
        check(all(view[h]["state"] == "up" for h in others), "other hosts not up: %r" % view)
        nxt = d.submit_id("bob", distributed(punchtest.QUICK_JOB, "allreduce", 2))
        j = d.wait_state("bob", nxt, ("succeeded", "failed"), 60)
        check(j["state"] == "succeeded" and sorted(job_hosts(j)) == list(others),
              "next job with %s down: %s on %r" % (victim, j["state"], job_hosts(j)))
        cluster.set_link(victim, True)
        punchtest.wait_for(lambda: state_is("up"), lambda _: "%s back up: %r" % (victim, last),
                           30)


# 2 ranks in short epochs: a host is lost after the first checkpoints and
# the job still has epochs to do when it resumes.
REQUEUE_JOB = distributed(punchtest.synthetic_job(
    "requeue", 64, [(256, "relu"), (10, "softmax")], 6000, 100, 20), "allreduce", 2)


def case_daemon_host_requeue(tmp, lose=cluster.crash_host):
    """A host lost mid-job (off the network, its processes killed): the job
    goes back to the queue by itself within a minute ("host h2 lost:
    requeued"), resumes from its checkpoint on the hosts left and succeeds
    with every epoch once in its history; the lost host is shown down."""
    with cluster_daemon(tmp, 1, ["--host-probe-interval-s", "60", "--stall-grace", "10",
                                 "--stall-factor", "5"]) as d:
        jid = d.submit_id("alice", REQUEUE_JOB)
        j = d.wait_state("alice", jid, ("running",), 60)
        rank_hosts_seen(d, jid, 2)
        victim = "h2"
        require(job_hosts(j).get(victim), "job %s has no rank on %s: %r" % (jid, victim, j))
        punchtest.wait_for(lambda: (_read_history(d, jid) or {}).get("loss", [])[1:],
                           "two epochs of job " + jid, 90)
        lost_at = time.time()
        lose(victim)

        def requeued():
            events = d.req("GET", "/api/v1/jobs/%s/events" % jid, "alice").json()["events"]
            return [e for e in events if "host %s lost: requeued" % victim in (e["detail"] or "")]
        found = punchtest.wait_for(requeued, lambda _: "the requeue of job %s:\n%s"
                                   % (jid, d.read_log()[-3000:]), 90)
        check(time.time() - lost_at < 60, "requeued %.0f s after the host was lost"
              % (time.time() - lost_at))
        check("resumes from its last checkpoint" in found[0]["detail"], found)
        j = d.wait_state("alice", jid, ("succeeded", "failed", "cancelled"), 120)
        check(j["state"] == "succeeded", "requeued job ended %s: %r\n%s"
              % (j["state"], j.get("error"), d.train_log(jid)[-2000:]))
        check(victim not in job_hosts(j), "resumed on %r" % job_hosts(j))
        hist = _read_history(d, jid) or {}
        check(len(hist.get("loss", [])) == 20, "every epoch once: %s" % hist.get("loss"))
        check(cluster_view(d)[victim]["state"] == "down", "host view: %r" % cluster_view(d))


def case_daemon_host_stall(tmp):
    """The same with only the host's link down: no connection is reset, so
    nothing fails and the ranks left wait in MPI; the job is found stalled
    (--stall-grace 10), h2 does not answer its probe and is marked down, and
    the job is requeued, resumes and succeeds as above."""
    case_daemon_host_requeue(tmp, lambda name: cluster.set_link(name, False))


def case_daemon_restart(tmp):
    """punchcardd kill -9 and restart re-adopts a job running on 3 hosts,
    which then finishes."""
    with cluster_daemon(tmp, 1) as d:
        jid = d.submit_id("alice", RUNNING_JOB)
        j = d.wait_state("alice", jid, ("running",), 60)
        before = rank_hosts_seen(d, jid, 3)
        check(len(before) == 3, "ranks on %r, want one on each host" % before)
        d.kill9()
        d.start()
        j = d.wait_state("alice", jid, ("succeeded", "failed", "cancelled"), 120)
        check(j["state"] == "succeeded", "re-adopted job ended %s: %r" % (j["state"], j.get("error")))
        check(len(job_hosts(j)) == 3, "re-adopted job lost its allocation: %r" % j.get("hosts"))
        with open(os.path.join(d.run_dir(jid), "progress.jsonl")) as f:
            starts = sum(1 for line in f if '"event":"start"' in line)
        check(starts == 1, "the job started %d times: relaunched, not re-adopted" % starts)


CASES = {"allreduce": case_allreduce, "async": case_async,
         "async_host_lost": case_async_host_lost,
         "daemon_disjoint": case_daemon_disjoint, "daemon_host_lost": case_daemon_host_lost,
         "daemon_restart": case_daemon_restart, "daemon_host_requeue": case_daemon_host_requeue,
         "daemon_host_stall": case_daemon_host_stall}


def cases(name):
    cluster.hosts()  # skips outside run.sh
    punchtest.require_engine()
    punchtest.require_dataset("fashion-mnist")
    tmp = tempfile.mkdtemp(prefix="punch-cluster-")
    try:
        punchtest.case(name, CASES[name], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: cluster_test.py {%s}" % "|".join(sorted(CASES)))
    punchtest.main(lambda: cases(sys.argv[1]))
