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
import copy
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from punchd import (QUICK_JOB, Daemon, check, expect_error, require_engine,  # noqa: E402
                    stand_in_engine, wait_file)

FINAL = ("succeeded", "failed", "cancelled", "timeout")

def gpu_job(gpus, name="gpu", trainer=None, workers=None):
    j = copy.deepcopy(QUICK_JOB)
    j["name"] = name
    j["resources"] = {"gpus": gpus}
    if trainer:
        j["distributed"] = {"trainer": trainer, "workers": workers}
    return j


def metric(d, name, kind):
    text = d.req("GET", "/metrics").text
    m = re.search(r'^%s\{kind="%s"\} (\d+)$' % (name, kind), text, re.M)
    check(m, "metrics lack %s{kind=%s}:\n%s" % (name, kind, text[:1500]))
    return int(m.group(1))


def too_many(d, job, cluster):
    body = expect_error(d.submit("alice", job), 400, "GPU job larger than the cluster")
    check(body["field"] == "resources.gpus", body)
    check("resources.gpus" in body["error"] and "cluster has %d" % cluster in body["error"], body)


def check_no_gpus():
    d = Daemon(["--slots", "2"])
    try:
        d.start()
        too_many(d, gpu_job(1), 0)
        check(metric(d, "punchcard_gpus", "total") == 0, "no GPUs by default")
        r = d.submit("alice")
        check(r.status_code == 201, "CPU jobs still accepted: %s" % r.text)
        d.stop()
    finally:
        d.cleanup()


def check_hostfile_hosts():
    """--gpus is per host: a two-host hostfile doubles the cluster's GPUs
    (held queue: nothing is launched on the made-up hosts)."""
    d = Daemon(["--gpus", "2", "--hold"])
    hostfile = os.path.join(d.tmp, "hosts")
    with open(hostfile, "w") as f:
        f.write("# two machines\nnode1 slots=2\nnode2 slots=2\n")
    d.args += ["--hostfile", hostfile]
    try:
        d.start()
        check(metric(d, "punchcard_gpus", "total") == 4, "2 GPUs on each of 2 hosts")
        check(metric(d, "punchcard_slots", "total") == 4, "hostfile slots")
        r = d.submit("alice", gpu_job(2, trainer="allreduce", workers=2))
        check(r.status_code == 201, "4 GPUs fit: %s" % r.text)
        too_many(d, gpu_job(3, trainer="allreduce", workers=2), 4)
        body = expect_error(d.submit("alice", gpu_job(5)), 400, "5 GPUs")
        check("on each of 2 hosts" in body["error"], body)
        d.stop()
    finally:
        d.cleanup()


def engine_line(engine, job, tmp):
    """What punch-train itself says about a GPU job on this machine."""
    path = os.path.join(tmp, "direct.json")
    with open(path, "w") as f:
        json.dump(job, f)
    out = subprocess.run([engine, path, "--out", os.path.join(tmp, "direct")],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode != 0, "punch-train ran a GPU job on a machine without a GPU")
    lines = [l for l in out.stderr.splitlines() if l.startswith("punch-train: ")]
    check(lines, "punch-train gave no one-line error: %r" % out.stderr[-500:])
    return lines[-1]


def check_one_gpu(engine):
    d = Daemon(["--slots", "3", "--gpus", "1", "--max-running", "2"])
    try:
        d.start()
        check(metric(d, "punchcard_gpus", "total") == 1, "--gpus 1 on one host")
        too_many(d, gpu_job(2), 1)
        too_many(d, gpu_job(1, trainer="allreduce", workers=2), 1)
        r = d.submit("bob", gpu_job(1, trainer="downpour", workers=1))
        check(r.status_code == 201 and r.json()["ranks"] == 2,
              "parameter server needs no GPU: %s" % r.text)
        check(d.req("DELETE", "/api/v1/jobs/" + r.json()["id"], "bob").status_code == 200,
              "cancel")

        r = d.submit("alice", gpu_job(1))
        check(r.status_code == 201, "gpus:1 with --gpus 1: %s" % r.text)
        jid = r.json()["id"]
        j = d.wait_state("alice", jid, FINAL, timeout=90)
        check(j["state"] == "failed", "no device here, yet: %s" % j)
        check(j["gpus"] == 1 and j["gpu_devices"] == "0", j)
        want = engine_line(engine, gpu_job(1), d.tmp)
        check(want in (j["error"] or ""), "error %r lacks the engine's line %r" % (j["error"], want))
        if "no CUDA device" not in want:
            print("note: punch-train built without CUDA here: %s" % want)
        else:
            check("no CUDA device: " in j["error"], j["error"])
        d.stop()
    finally:
        d.cleanup()


def check_waits_for_gpus():
    d = Daemon(["--slots", "4", "--gpus", "2", "--max-running", "0"])
    d.args += ["--engine", stand_in_engine(d.tmp)]
    try:
        d.start()
        a = d.submit("alice", gpu_job(1, "a")).json()["id"]
        check(wait_file(os.path.join(d.run_dir(a), "gpus.0")) == "0", "a gets device 0")
        b = d.submit("bob", gpu_job(1, "b", "allreduce", 2)).json()["id"]
        c = d.submit("alice", dict(QUICK_JOB, name="c")).json()["id"]
        d.wait_state("alice", c, ("running",), timeout=30)
        # b needs both GPUs: it waits although slots are free, and the CPU
        # job c behind it has started.
        jb = d.job("bob", b)
        check(jb["state"] == "queued" and jb["gpu_devices"] is None, jb)
        check(jb["queue_position"] == 1 and jb["waiting_for"] == "resources", jb)
        check(metric(d, "punchcard_gpus", "used") == 1, "a holds one GPU")
        check(wait_file(os.path.join(d.run_dir(c), "gpus.0")) == "unset", "c sees no GPU list")
        open(os.path.join(d.run_dir(a), "release"), "w").close()
        d.wait_state("alice", a, FINAL, timeout=30)
        jb = d.wait_state("bob", b, ("running",), timeout=30)
        check(jb["gpus"] == 2 and jb["gpu_devices"] == "0,1", jb)
        for rank in (0, 1):
            seen = wait_file(os.path.join(d.run_dir(b), "gpus.%d" % rank))
            check(seen == "0,1", "rank %d of b sees CUDA_VISIBLE_DEVICES=%s" % (rank, seen))
        check(metric(d, "punchcard_gpus", "used") == 2, "b holds both GPUs")
        for jid in (b, c):
            open(os.path.join(d.run_dir(jid), "release"), "w").close()
        d.wait_state("bob", b, FINAL, timeout=30)
        d.wait_state("alice", c, FINAL, timeout=30)
        d.stop()
    finally:
        d.cleanup()


def check_restart_keeps_devices():
    """kill -9 of the daemon while a GPU job runs: after the restart the
    re-adopted job still holds its device, so the next job gets the other."""
    d = Daemon(["--slots", "4", "--gpus", "2", "--max-running", "0"])
    d.args += ["--engine", stand_in_engine(d.tmp)]
    daemons = [d]
    try:
        d.start()
        a = d.submit("alice", gpu_job(1, "a")).json()["id"]
        check(wait_file(os.path.join(d.run_dir(a), "gpus.0")) == "0", "a gets device 0")
        d.kill9()
        nd = Daemon(d.args, data_dir=d.data_dir, port=d.port)
        nd.secrets_path = d.secrets_path
        daemons.append(nd)
        d = nd.start()
        b = d.submit("bob", gpu_job(1, "b")).json()["id"]
        check(wait_file(os.path.join(d.run_dir(b), "gpus.0")) == "1",
              "b gets device 1: the re-adopted a holds 0")
        c = d.submit("bob", gpu_job(1, "c")).json()["id"]
        jc = d.job("bob", c)
        check(jc["state"] == "queued" and jc["waiting_for"] == "resources", jc)
        check(metric(d, "punchcard_gpus", "used") == 2, "a and b hold both GPUs")
        open(os.path.join(d.run_dir(a), "release"), "w").close()
        check(wait_file(os.path.join(d.run_dir(c), "gpus.0")) == "0", "c gets a's device")
        for jid in (b, c):
            open(os.path.join(d.run_dir(jid), "release"), "w").close()
        for jid in (b, c):
            d.wait_state("bob", jid, FINAL, timeout=30)
        d.stop()
    finally:
        for x in daemons:
            x.cleanup()


def main():
    engine = require_engine()
    check_no_gpus()
    check_hostfile_hosts()
    check_one_gpu(engine)
    check_waits_for_gpus()
    check_restart_keeps_devices()
    print("ok")


if __name__ == "__main__":
    main()
