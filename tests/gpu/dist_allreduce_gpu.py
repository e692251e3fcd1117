#!/usr/bin/python3
"""The allreduce trainer on two GPUs (NCCL gradient exchange, device
optimizer) against the same job on the CPU (MPI_Allreduce, host
optimizer): `mpirun -np 2 punch-train` on a small Fashion-MNIST subset.

Usage: dist_allreduce_gpu.py PUNCH_TRAIN TEST_GPU_NCCL. Skips (77, with
the reason) where fewer than two CUDA devices are usable: NCCL cannot put
two ranks on one device. Checks, on a device:
- GPU weights equal the CPU run's within the training-run tolerance of
  test_gpu_vs_cpu.c (rtol 1e-3, atol 1e-4, SGD with momentum as there:
  Adam's normalisation turns rounding differences in near-zero gradients
  into steps of the learning rate), and so do the epoch losses; the
  global batch leaves a last step of 4 samples, so one rank contributes
  an empty share;
- every rank holds bit-identical weights after every step
  (PUNCH_DIST_CHECK_SYNC);
- with Adam, GPU against GPU: bucketed with overlap (the default) equals
  bucketed without (PUNCH_DIST_OVERLAP=0) and one bucket, and --resume
  from the epoch-1 checkpoint (device optimizer state saved and loaded in
  optim.h's layout; a lost iteration count would change Adam's bias
  correction) equals the uninterrupted run (rtol 1e-5, atol 1e-6);
- averaging on GPUs (device optimizer per replica) equals it on CPUs
  (the tolerance above);
- downpour and eamsgd with GPU workers around the CPU server (3 ranks):
  the workers' local optimizer / EAMSGD velocity on the device, commits
  and pulls through the pinned staging; the loss goes down, the center
  reaches 0.60 test accuracy and the server applied every commit sent."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import punchtest
from punchtest import check, load_npz, read_json

RTOL, ATOL = 1e-3, 1e-4
SAME_RTOL, SAME_ATOL = 1e-5, 1e-6
SGD = {"name": "sgd", "learning_rate": 0.05, "momentum": 0.9}
ADAM = {"name": "adam"}


def job(gpus, optimizer, epochs=2, bucket_mb=0.05, trainer="allreduce", extra=None,
        samples=1000):
    # 1000 samples (the default), 10% validation: 900 / (2 x 32) leaves a
    # last step of 4.
    return {"name": "gpu-allreduce", "model": "mlp",
            "data": {"format": "idx", "train": "fashion-mnist/train",
                     "test": "fashion-mnist/t10k", "train_samples": samples,
                     "test_samples": 500, "validation_split": 0.1},
            "training": {"epochs": epochs, "batch_size": 32, "seed": 5,
                         "optimizer": optimizer},
            "distributed": {"trainer": trainer, "workers": 2,
                            # bucket_mb is allreduce's alone (others refuse it)
                            **({"bucket_mb": bucket_mb} if trainer == "allreduce" else {}),
                            **(extra or {})},
            "resources": {"gpus": gpus, "threads_per_worker": 1}}


def run(punch_train, tmp, name, spec, env=None, resume=False, out=None, ranks=2):
    """mpirun -np ranks punch-train on spec; its output directory and process."""
    env = dict(env or {})
    env.setdefault("NCCL_SOCKET_IFNAME", os.environ.get("NCCL_SOCKET_IFNAME", "lo"))
    out = out or os.path.join(tmp, name)
    p = punchtest.train(punch_train, punchtest.write_json(os.path.join(tmp, name + ".json"), spec),
                        out, ranks, env, resume, timeout=150)
    return out, p


def weights(out):
    return load_npz(os.path.join(out, "weights.npz"))


def history(out):
    return read_json(os.path.join(out, "history.json"))


def losses(out):
    return np.array(history(out)["loss"], dtype=np.float64)


def expect_close(what, a, b, rtol=RTOL, atol=ATOL):
    punchtest.require(sorted(a) == sorted(b),
                      "%s: different tensors %s vs %s" % (what, sorted(a), sorted(b)))
    for k in a:
        check(np.allclose(a[k], b[k], rtol=rtol, atol=atol),
              lambda: "%s: %s differs by up to %g (rtol %g, atol %g)"
              % (what, k, float(np.abs(a[k] - b[k]).max()), rtol, atol))


def cases():
    punch_train, probe = sys.argv[1], sys.argv[2]
    p = subprocess.run([probe, "--probe"], capture_output=True, text=True)
    said = (p.stdout + p.stderr).strip()
    if p.returncode == punchtest.SKIP_EXIT:
        punchtest.skip(said.removeprefix("SKIP: ") or "no CUDA device")
    punchtest.require(p.returncode == 0, "%s --probe exited %d: %s" % (probe, p.returncode, said))
    tmp = tempfile.mkdtemp(prefix="gpu-allreduce-")
    try:
        punchtest.case("GPU vs CPU allreduce", gpu_vs_cpu, punch_train, tmp)
        punchtest.case("overlap, bucket size and --resume", unchanged_gpu_result, punch_train, tmp)
        punchtest.case("GPU vs CPU averaging", averaging, punch_train, tmp)
        for trainer, opt, extra in (("downpour", ADAM, {}),
                                    ("eamsgd", SGD, {"momentum": 0.9})):
            punchtest.case(trainer + " on GPU workers", async_workers, punch_train, tmp,
                           trainer, opt, extra)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def gpu_vs_cpu(punch_train, tmp):
    cpu, _ = run(punch_train, tmp, "cpu", job(0, SGD))
    gpu, p = run(punch_train, tmp, "gpu", job(1, SGD), {"PUNCH_DIST_CHECK_SYNC": "1"})
    check("weights identical on all 2 ranks" in p.stderr,
                    "no per-step identity check on the GPU run:\n" + p.stderr[-2000:])
    expect_close("GPU vs CPU allreduce", weights(gpu), weights(cpu))
    lg, lc = losses(gpu), losses(cpu)
    check(np.allclose(lg, lc, rtol=RTOL), "epoch losses GPU %s vs CPU %s" % (lg, lc))
    print("GPU vs CPU allreduce: weights and losses within rtol %g atol %g" % (RTOL, ATOL))


def unchanged_gpu_result(punch_train, tmp):
    """Adam, GPU against GPU: overlap off, one bucket, and --resume."""
    adam, _ = run(punch_train, tmp, "gpu-adam", job(1, ADAM))
    flat, _ = run(punch_train, tmp, "gpu-no-overlap", job(1, ADAM), {"PUNCH_DIST_OVERLAP": "0"})
    expect_close("overlapped vs not", weights(adam), weights(flat), SAME_RTOL, SAME_ATOL)
    one, _ = run(punch_train, tmp, "gpu-one-bucket", job(1, ADAM, bucket_mb=64))
    expect_close("many buckets vs one", weights(adam), weights(one), SAME_RTOL, SAME_ATOL)

    part = os.path.join(tmp, "resumed")
    run(punch_train, tmp, "gpu-1epoch", job(1, ADAM, epochs=1), out=part)
    run(punch_train, tmp, "gpu-resume", job(1, ADAM), resume=True, out=part)
    expect_close("resumed vs uninterrupted", weights(adam), weights(part), SAME_RTOL, SAME_ATOL)
    check(len(losses(part)) == 2, "resumed history has %d epochs, expected 2" % len(losses(part)))
    print("overlap, bucket size and --resume leave the GPU result unchanged")


def averaging(punch_train, tmp):
    avg_c, _ = run(punch_train, tmp, "avg-cpu", job(0, SGD, trainer="averaging"))
    avg_g, _ = run(punch_train, tmp, "avg-gpu", job(1, SGD, trainer="averaging"))
    expect_close("GPU vs CPU averaging", weights(avg_g), weights(avg_c))


def async_workers(punch_train, tmp, trainer, opt, extra):
    extra = {"communication_window": 4, **extra}
    out, _ = run(punch_train, tmp, trainer,
                 job(1, opt, epochs=3, trainer=trainer, extra=extra, samples=2000), ranks=3)
    h = history(out)
    sent = sum(w["commits"] for w in h["workers"])
    print("%s on GPU workers: loss %s test %s commits %d" % (
        trainer, h["loss"], h["test"], h["commits"]))
    check(h["loss"][-1] < h["loss"][0], "%s: loss did not go down: %s" % (trainer, h["loss"]))
    check(h["test"]["accuracy"] >= 0.60,
          "%s: test accuracy %.3f < 0.60" % (trainer, h["test"]["accuracy"]))
    check(h["commits"] == sent and sent > 0,
          "%s: server applied %d commits, workers sent %d" % (trainer, h["commits"], sent))


if __name__ == "__main__":
    punchtest.main(cases)
