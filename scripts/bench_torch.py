#!/usr/bin/python3
"""bench_torch.py MODEL EPOCHS STEPS THREADS [SEED [DEVICE]]: the PyTorch side of
scripts/bench-engine (DEVICE cpu, the default) and scripts/bench-gpu (DEVICE cuda).

Trains the Punchcard preset MODEL (mlp, simplecnn, convnet) on Fashion-MNIST, or
(resnet20_cifar10, vgg11_cifar10) on CIFAR-10-shaped random data (3x32x32, random
labels: STEPS x 64 training samples, 1,024 test samples), with the same architecture, initial-weight scheme, batch size (64), optimizer (Adam, lr 1e-3,
Keras epsilon 1e-7) and data scaling as punch-train, then measures inference throughput
at batch 256. Prints one JSON object: samples/s, test accuracy, peak RSS. PyTorch is a
benchmark reference only, never a dependency of Punchcard.

What each figure measures (the same as punch-train's, see scripts/bench-engine):
train_samples_per_s is samples over the time of the step loop (batch gather,
forward, loss, backward, Adam), data decoding excluded; infer_samples_per_s is
the best of three passes over the test set at batch 256 in eval mode. On
cuda the data sit on the device before timing starts (punch-train uploads
each batch, so this favours PyTorch slightly) and the timers synchronise.
STEPS > 0 trims each epoch to its first STEPS batches, like punch-train's
training.steps_per_epoch. Run it with OPENBLAS_NUM_THREADS=1 (the fast
configuration on 2 cores); the driver does."""
import contextlib
import gzip
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = "/usr/share/datasets/fashion-mnist"


def load(kind):
    with gzip.open(f"{ROOT}/{kind}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(f"{ROOT}/{kind}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))


# PyDTNN's zoo presets as lib/jobspec/spec_presets.c builds them: convolutions
# with bias, batchnorm where it places them. A strided 3x3 convolution pads 1 on
# both sides here and only the far edge in punch-train ("same"): the same shapes
# and arithmetic, the sampled pixels shifted by one.
CIFAR = ("resnet20_cifar10", "vgg11_cifar10")


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout))
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride), nn.BatchNorm2d(cout))
                      if stride != 1 else nn.Identity())

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


def build_cifar(name):
    if name == "vgg11_cifar10":
        layers, c = [], 3
        for n, convs in zip((64, 128, 256, 512, 512), (1, 1, 2, 2, 2)):
            for _ in range(convs):
                layers += [nn.Conv2d(c, n, 3, padding=1), nn.ReLU()]
                c = n
            layers.append(nn.MaxPool2d(2))
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Dropout(0.5), nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.5),
                             nn.Linear(512, 10))
    blocks, c = [nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)], 16
    for s, n in enumerate((16, 32, 64)):
        for b in range(3):
            blocks.append(BasicBlock(c, n, 2 if s > 0 and b == 0 else 1))
            c = n
    return nn.Sequential(*blocks, nn.AvgPool2d(8), nn.Flatten(), nn.Linear(64, 64),
                         nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))


def build(name):
    if name in CIFAR:
        return build_cifar(name)
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "simplecnn":
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(128, 10))
    if name == "convnet":
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(3136, 1024), nn.ReLU(), nn.Dropout(0.4), nn.Linear(1024, 10))
    raise SystemExit(f"unknown model {name}")


def glorot(model):
    """punch-train's initialisation (Keras's): Glorot-uniform weights, zero biases."""
    for mod in model.modules():
        if isinstance(mod, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(mod.weight)
            nn.init.zeros_(mod.bias)


def main():
    name, epochs, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1  # other seeds: accuracy spread only
    dev = torch.device(sys.argv[6] if len(sys.argv) > 6 else "cpu")
    if dev.type == "cuda":
        # FP32 as punch-train computes: no TF32 in convolutions or GEMMs.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    # PUNCH_TORCH_PRECISION=bf16 (scripts/bench-engine --precision): forward
    # and loss under bf16 autocast, PyTorch's mixed precision (weights and
    # Adam fp32, convolutions and GEMMs in bf16).
    precision = os.environ.get("PUNCH_TORCH_PRECISION", "fp32")
    autocast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16)) if precision == "bf16" \
        else contextlib.nullcontext
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    if name in CIFAR:
        g = torch.Generator().manual_seed(seed)
        ntrain = max(steps, 1) * 64
        xtr, ytr = torch.rand(ntrain, 3, 32, 32, generator=g), torch.randint(0, 10, (ntrain,), generator=g)
        xte, yte = torch.rand(1024, 3, 32, 32, generator=g), torch.randint(0, 10, (1024,), generator=g)
    else:
        xtr, ytr = load("train")
        xte, yte = load("t10k")
    xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
    model = build(name).to(dev)
    glorot(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    lossf = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    batch, trained, train_time = 64, 0, 0.0
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(xtr), generator=gen).to(dev)
        full = (len(xtr) + batch - 1) // batch  # the last batch may be short, as in punch-train
        nsteps = full if steps == 0 else min(steps, full)
        sync()
        t0 = time.perf_counter()
        for s in range(nsteps):
            idx = perm[s * batch:(s + 1) * batch]
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = lossf(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
        sync()
        train_time += time.perf_counter() - t0
        trained += min(nsteps * batch, len(xtr))
    model.eval()
    best = None
    with torch.no_grad():
        for _ in range(3):
            correct = 0
            sync()
            t0 = time.perf_counter()
            for i in range(0, len(xte), 256):
                with autocast():
                    correct += (model(xte[i:i + 256]).argmax(1) == yte[i:i + 256]).sum().item()
            sync()
            sec = time.perf_counter() - t0
            best = sec if best is None else min(best, sec)
    infer = len(xte) / best
    print(json.dumps({
        "framework": "pytorch " + torch.__version__, "model": name, "threads": threads,
        "device": str(dev), "precision": precision,
        "train_samples_per_s": trained / train_time, "test_accuracy": correct / len(xte),
        "infer_samples_per_s": infer, "steps_per_epoch": nsteps, "epochs": epochs,
        "parameters": sum(p.numel() for p in model.parameters()),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))


if __name__ == "__main__":
    main()
