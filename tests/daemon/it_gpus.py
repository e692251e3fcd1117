"""it_gpus.py — GPUs as a scheduler resource, against a real punchcardd.

- Without --gpus (0), with --gpus 1, and with --gpus 2 on a two-host
  hostfile, a job asking for more GPUs than the cluster has (resources.gpus x
  workers) gets 400 naming resources.gpus and the cluster's count; an
  asynchronous trainer's parameter server needs none.
- With --gpus 1, a gpus:1 job is accepted, given device 0, and (no device
  here) ends failed with punch-train's own one-line error in `error`.
- With a stand-in engine that records CUDA_VISIBLE_DEVICES and holds its
  ranks until told to end: a GPU job that does not fit waits while a CPU job
  behind it starts, /metrics counts the GPUs in use, and the waiting job
  starts on both devices once the first one ends; after a kill -9 and a
  restart of the daemon, a re-adopted job keeps its device."""
import os
import re
import subprocess

import punchtest
from punchtest import (FINAL_STATES, QUICK_JOB, STAND_IN_ENGINE, Daemon, check, expect_error,
                       job_like, wait_file, wait_for)


def cases():
    engine = punchtest.require_engine()
    punchtest.case("no GPUs by default", no_gpus)
    punchtest.case("--gpus is per hostfile host", hostfile_hosts)
    punchtest.case("one GPU, no device here", one_gpu, engine)
    punchtest.case("a GPU job waits for GPUs", waits_for_gpus)
    punchtest.case("a re-adopted job keeps its device", restart_keeps_devices)


def gpu_job(gpus, name="gpu", trainer=None, workers=None):
    j = job_like(QUICK_JOB, name=name, resources={"gpus": gpus})
    if trainer:
        j["distributed"] = {"trainer": trainer, "workers": workers}
    return j


def metric(d, name, kind):
    text = d.req("GET", "/metrics").text
    m = re.search(r'^%s\{kind="%s"\} (\d+)$' % (name, kind), text, re.M)
    punchtest.require(m, "metrics lack %s{kind=%s}:\n%s" % (name, kind, text[:1500]))
    return int(m.group(1))


def wait_gpus_used(d, want, what):
    """Wait until /metrics counts `want` GPUs in use. The gauge is set by
    the scheduler's tick from the jobs active at its start, so a job that
    tick started is counted from the next tick on: a test that has seen the
    job's ranks may read /metrics before that tick has run."""
    wait_for(lambda: metric(d, "punchcard_gpus", "used") == want,
             lambda _: "%s: punchcard_gpus{kind=used} stays %d, want %d" % (
                 what, metric(d, "punchcard_gpus", "used"), want), timeout=30)


def too_many(d, job, cluster):
    body = expect_error(d.submit("alice", job), 400, "GPU job larger than the cluster")
    check(body["field"] == "resources.gpus", body)
    check("resources.gpus" in body["error"] and "cluster has %d" % cluster in body["error"], body)


def no_gpus():
    with Daemon(["--slots", "2"]) as d:
        too_many(d, gpu_job(1), 0)
        check(metric(d, "punchcard_gpus", "total") == 0, "no GPUs by default")
        r = d.submit("alice")
        check(r.status_code == 201, "CPU jobs still accepted: %s" % r.text)


def hostfile_hosts():
    """A two-host hostfile doubles the cluster's GPUs (held queue: nothing
    is launched on the made-up hosts)."""
    d = Daemon(["--gpus", "2", "--hold"])
    hostfile = os.path.join(d.tmp, "hosts")
    with open(hostfile, "w") as f:
        f.write("# two machines\nnode1 slots=2\nnode2 slots=2\n")
    d.args += ["--hostfile", hostfile]
    with d:
        # The totals are set by the scheduler's first tick, which may run
        # just after the daemon starts answering.
        wait_for(lambda: metric(d, "punchcard_gpus", "total") == 4 and
                 metric(d, "punchcard_slots", "total") == 4,
                 "2 GPUs and 2 slots on each of 2 hosts in /metrics", timeout=30)
        r = d.submit("alice", gpu_job(2, trainer="allreduce", workers=2))
        check(r.status_code == 201, "4 GPUs fit: %s" % r.text)
        too_many(d, gpu_job(3, trainer="allreduce", workers=2), 4)
        body = expect_error(d.submit("alice", gpu_job(5)), 400, "5 GPUs")
        check("on each of 2 hosts" in body["error"], body)


def engine_line(engine, job, tmp):
    """What punch-train itself says about a GPU job on this machine."""
    path = punchtest.write_json(os.path.join(tmp, "direct.json"), job)
    out = subprocess.run([engine, path, "--out", os.path.join(tmp, "direct")],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode != 0, "punch-train ran a GPU job on a machine without a GPU")
    lines = [l for l in out.stderr.splitlines() if l.startswith("punch-train: ")]
    punchtest.require(lines, "punch-train gave no one-line error: %r" % out.stderr[-500:])
    return lines[-1]


def one_gpu(engine):
    """A gpus:1 job is accepted, given device 0, and (no device here) ends
    failed with punch-train's own one-line error; a parameter server needs
    no GPU."""
    with Daemon(["--slots", "3", "--gpus", "1", "--max-running", "2"]) as d:
        check(metric(d, "punchcard_gpus", "total") == 1, "--gpus 1 on one host")
        too_many(d, gpu_job(2), 1)
        too_many(d, gpu_job(1, trainer="allreduce", workers=2), 1)
        r = d.submit("bob", gpu_job(1, trainer="downpour", workers=1))
        check(r.status_code == 201 and r.json()["ranks"] == 2,
              "parameter server needs no GPU: %s" % r.text)
        check(d.req("DELETE", "/api/v1/jobs/" + r.json()["id"], "bob").status_code == 200,
              "cancel")

        jid = d.submit_id("alice", gpu_job(1))
        j = d.wait_state("alice", jid, FINAL_STATES, timeout=90)
        check(j["state"] == "failed", "no device here, yet: %s" % j)
        check(j["gpus"] == 1 and j["gpu_devices"] == "0", j)
        want = engine_line(engine, gpu_job(1), d.tmp)
        check(want in (j["error"] or ""), "error %r lacks the engine's line %r" % (j["error"], want))
        if "no CUDA device" not in want:
            print("note: punch-train built without CUDA here: %s" % want)
        else:
            check("no CUDA device: " in j["error"], j["error"])


def waits_for_gpus():
    """With the stand-in engine: a GPU job that does not fit waits while a
    CPU job behind it starts, and starts on both devices once the first
    GPU job ends; /metrics counts the GPUs in use."""
    d = Daemon(["--slots", "4", "--gpus", "2", "--max-running", "0"])
    d.engine_script("stand-in-engine", STAND_IN_ENGINE)
    with d:
        a = d.submit_id("alice", gpu_job(1, "a"))
        check(wait_file(os.path.join(d.run_dir(a), "gpus.0")) == "0", "a gets device 0")
        b = d.submit_id("bob", gpu_job(1, "b", "allreduce", 2))
        c = d.submit_id("alice", job_like(QUICK_JOB, name="c"))
        d.wait_state("alice", c, ("running",), timeout=30)
        # b needs both GPUs: it waits although slots are free, and the CPU
        # job c behind it has started.
        jb = d.job("bob", b)
        check(jb["state"] == "queued" and jb["gpu_devices"] is None, jb)
        check(jb["queue_position"] == 1 and jb["waiting_for"] == "resources", jb)
        wait_gpus_used(d, 1, "a holds one GPU")
        check(wait_file(os.path.join(d.run_dir(c), "gpus.0")) == "unset", "c sees no GPU list")
        d.release(a)
        d.wait_state("alice", a, FINAL_STATES, timeout=30)
        jb = d.wait_state("bob", b, ("running",), timeout=30)
        check(jb["gpus"] == 2 and jb["gpu_devices"] == "0,1", jb)
        for rank in (0, 1):
            seen = wait_file(os.path.join(d.run_dir(b), "gpus.%d" % rank))
            check(seen == "0,1", "rank %d of b sees CUDA_VISIBLE_DEVICES=%s" % (rank, seen))
        wait_gpus_used(d, 2, "b holds both GPUs")
        for jid in (b, c):
            d.release(jid)
        d.wait_state("bob", b, FINAL_STATES, timeout=30)
        d.wait_state("alice", c, FINAL_STATES, timeout=30)


def restart_keeps_devices():
    """kill -9 of the daemon while a GPU job runs: after the restart the
    re-adopted job still holds its device, so the next job gets the other."""
    d = Daemon(["--slots", "4", "--gpus", "2", "--max-running", "0"])
    d.engine_script("stand-in-engine", STAND_IN_ENGINE)
    with d:
        a = d.submit_id("alice", gpu_job(1, "a"))
        check(wait_file(os.path.join(d.run_dir(a), "gpus.0")) == "0", "a gets device 0")
        d.kill9()
        d.start()
        b = d.submit_id("bob", gpu_job(1, "b"))
        check(wait_file(os.path.join(d.run_dir(b), "gpus.0")) == "1",
              "b gets device 1: the re-adopted a holds 0")
        c = d.submit_id("bob", gpu_job(1, "c"))
        jc = d.job("bob", c)
        check(jc["state"] == "queued" and jc["waiting_for"] == "resources", jc)
        wait_gpus_used(d, 2, "a and b hold both GPUs")
        d.release(a)
        check(wait_file(os.path.join(d.run_dir(c), "gpus.0")) == "0", "c gets a's device")
        for jid in (b, c):
            d.release(jid)
        for jid in (b, c):
            d.wait_state("bob", jid, FINAL_STATES, timeout=30)


if __name__ == "__main__":
    punchtest.main(cases)
