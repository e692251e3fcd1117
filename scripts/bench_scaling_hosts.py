#!/usr/bin/python3
"""bench_scaling_hosts.py — the network half of scripts/bench-scaling
(`--hosts N`): data-parallel training across N hosts made of network
namespaces (tests/cluster/run.sh builds them around this script, which runs
in h1), with every host's link shaped to a given rate, against the
compute-bound rate and the bound a ring allreduce puts on it.

For each link rate: one worker (1 thread) per host, the allreduce trainer,
samples/s of the last epoch, the share of training time in MPI, and
 - compute-bound: N x the 1-worker rate measured on h1 in the same run
   (the best N hosts could do with free communication);
 - ring bound: the rate if every step also moved 2(N-1)/N x model bytes
   per rank at the link rate, not overlapped with compute;
 - efficiency: measured / compute-bound.
With compressions "none,bf16" each link runs once per distributed.compression
(bf16 halves the bytes a ring moves). PUNCH_DIST_OVERLAP, when set, is passed
to every rank (mpirun -x).
Link shaping uses tc: netem (rate and delay) when the kernel has it,
otherwise tbf (rate only; the delay is then not simulated, and said so)."""
import json
import os
import subprocess
import sys

punch, work, model = sys.argv[1], sys.argv[2], sys.argv[3]
rates, repeat = sys.argv[4].split(","), max(1, int(sys.argv[5]))
delay_us = int(sys.argv[6])
compressions = (sys.argv[7] if len(sys.argv) > 7 else "none").split(",")
hosts = os.environ["PUNCH_CLUSTER_HOSTS"].split()
netns = os.environ["PUNCH_CLUSTER_NETNS"].split()
n = len(hosts)
# Per model: train samples, epochs (the last one is reported), batch per worker.
MODELS = {"mlp": (30000, 2, 64), "convnet": (3200, 2, 64), "simplecnn": (10000, 2, 64)}


def spec(trainer, workers, compression="none"):
    samples, epochs, batch = MODELS[model]
    dist = {"trainer": trainer, "workers": workers}
    if compression != "none":
        dist["compression"] = compression
    return {"name": "bench-hosts", "model": model,
            "data": {"format": "idx", "train": "fashion-mnist/train",
                     "test": "fashion-mnist/t10k", "train_samples": samples,
                     "test_samples": 1000},
            "training": {"epochs": epochs, "batch_size": batch, "seed": 1,
                         "optimizer": {"name": "adam", "learning_rate": 0.001}},
            "distributed": dist,
            "resources": {"threads_per_worker": 1}}


def shape(rate):
    """Every host's eth0 at `rate` (or unshaped); returns the qdisc used."""
    used = "none"
    for ns in netns:
        subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root"],
                       capture_output=True)
        if rate == "none":
            continue
        netem = ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root",
                 "netem", "delay", "%dus" % delay_us, "rate", rate, "limit", "10000"]
        if subprocess.run(netem, capture_output=True).returncode == 0:
            used = "%s +%dus (netem)" % (rate, delay_us)
            continue
        subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root",
                        "tbf", "rate", rate, "burst", "256kb", "latency", "50ms"], check=True)
        used = "%s (tbf, no delay)" % rate
    return used


def run(name, trainer, workers, compression="none"):
    """Best of `repeat` runs: (samples/s, comm share, model bytes) or None."""
    best = None
    for i in range(repeat):
        out = os.path.join(work, "%s-%d" % (name, i))
        path = os.path.join(work, "%s-%d.json" % (name, i))
        with open(path, "w") as f:
            json.dump(spec(trainer, workers, compression), f)
        cmd = [punch, path, "--out", out]
        if trainer != "single":
            hostfile = os.path.join(work, "hostfile")
            with open(hostfile, "w") as f:
                f.writelines("%s slots=1\n" % h for h in hosts[:workers])
            cmd = ["mpirun", "--hostfile", hostfile, "-np", str(workers), "--map-by", "node",
                   "--bind-to", "none"] + \
                (["-x", "PUNCH_DIST_OVERLAP"] if "PUNCH_DIST_OVERLAP" in os.environ else []) + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            print("  %s failed: %s" % (name, (p.stderr.strip().splitlines() or ["?"])[-1]))
            continue
        epochs = [json.loads(line) for line in open(os.path.join(out, "progress.jsonl"))
                  if '"event":"epoch"' in line]
        h = json.load(open(os.path.join(out, "history.json")))
        shares = [w["comm_time_s"] / w["train_time_s"] for w in h.get("workers", [])
                  if w.get("train_time_s")]
        size = os.path.getsize(os.path.join(out, "weights.safetensors"))
        r = (epochs[-1]["samples_per_s"], sum(shares) / len(shares) if shares else 0.0, size)
        if best is None or r[0] > best[0]:
            best = r
    return best


def bits(rate):
    units = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}
    for u, m in units.items():
        if rate.lower().endswith(u):
            return float(rate[:-len(u)]) * m
    raise SystemExit("bench-scaling: rate %r: use e.g. 10gbit, 1gbit, 100mbit" % rate)


shape("none")
one = run("single", "single", 1)
if one is None:
    raise SystemExit("bench-scaling: the 1-worker baseline failed")
rate1, _, model_bytes = one
batch = MODELS[model][2]
print("model %s: %.2f MB of weights; 1 worker on h1: %.0f samples/s; %d hosts, 1 worker each"
      % (model, model_bytes / 1e6, rate1, n))
print("overlap: %s" % os.environ.get("PUNCH_DIST_OVERLAP", "default (off on CPUs)"))
print("%-22s %-5s %10s %6s %12s %12s %6s" % ("link", "wire", "samples/s", "comm", "compute-bnd",
                                               "ring-bound", "eff"))
bound = n * rate1
for rate in rates:
    used = shape(rate)
    for comp in compressions:
        r = run("allreduce-%s-%s" % (rate, comp), "allreduce", n, comp)
        wire_bytes = model_bytes / 2 if comp == "bf16" else model_bytes
        if rate == "none":
            ring = bound
        else:
            t_step = batch / rate1 + 2 * (n - 1) / n * wire_bytes * 8 / bits(rate)
            ring = n * batch / t_step
        if r is None:
            print("%-22s %-5s %10s" % (used, comp, "failed"))
            continue
        print("%-22s %-5s %10.0f %5.1f%% %12.0f %12.0f %5.0f%%" % (
            used, comp, r[0], 100 * r[1], bound, ring, 100 * r[0] / bound))
        sys.stdout.flush()
shape("none")
