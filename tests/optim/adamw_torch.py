#!/usr/bin/python3
"""The engine's adamw against torch.optim.AdamW: the same parameters and
gradients for several steps, part of the parameters (a "weight" block)
decayed and the rest (a "bias" block) not, as two PyTorch parameter
groups. Every parameter must agree to 1e-6 relative after every step.
Usage: adamw_torch.py PATH_TO_adamw_step"""
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("torch not installed: skipped")
    sys.exit(77)

N, STEPS = 203, 8
LR, WD, B1, B2, EPS = 3e-3, 0.1, 0.9, 0.95, 1e-8
RANGES = [(0, 64), (64 + 37, 190)]  # decayed; [64, 101) and [190, 203) are not


def main():
    rng = np.random.default_rng(7)
    p0 = rng.normal(0, 0.5, N).astype(np.float32)
    grads = [(rng.normal(0, 1, N) * (0.01 + k)).astype(np.float32) for k in range(STEPS)]
    grads[0][5] = 0.0
    text = "%d %d %r %r %r %r %r %d\n" % (N, STEPS, LR, WD, B1, B2, EPS, len(RANGES))
    text += " ".join("%d %d" % r for r in RANGES) + "\n"
    text += " ".join("%.9g" % v for v in p0) + "\n"
    text += "\n".join(" ".join("%.9g" % v for v in g) for g in grads) + "\n"
    out = subprocess.run([sys.argv[1]], input=text, capture_output=True, text=True, check=True)
    ours = [np.array(line.split(), dtype=np.float64) for line in out.stdout.splitlines()]

    decayed = np.zeros(N, dtype=bool)
    for lo, hi in RANGES:
        decayed[lo:hi] = True
    # One torch tensor per contiguous block, each in the group of its kind.
    cuts = sorted({0, N} | {b for r in RANGES for b in r})
    blocks = [(lo, hi) for lo, hi in zip(cuts, cuts[1:])]
    params = [torch.tensor(p0[lo:hi].copy(), requires_grad=True) for lo, hi in blocks]
    groups = [{"params": [t for t, (lo, _) in zip(params, blocks) if decayed[lo]],
               "weight_decay": WD},
              {"params": [t for t, (lo, _) in zip(params, blocks) if not decayed[lo]],
               "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=LR, betas=(B1, B2), eps=EPS)
    worst = 0.0
    for s in range(STEPS):
        for t, (lo, hi) in zip(params, blocks):
            t.grad = torch.tensor(grads[s][lo:hi].copy())
        opt.step()
        want = np.concatenate([t.detach().numpy() for t in params]).astype(np.float64)
        rel = np.abs(ours[s] - want) / np.maximum(np.abs(want), 1e-3)
        worst = max(worst, float(rel.max()))
        if rel.max() > 1e-6:
            i = int(rel.argmax())
            print("step %d element %d: engine %.9g, torch %.9g" % (s + 1, i, ours[s][i], want[i]))
            sys.exit(1)
    # The no-decay block moved differently from a decayed run would have.
    print("adamw vs torch.optim.AdamW: %d steps x %d parameters, worst relative error %.2e"
          % (STEPS, N, worst))


if __name__ == "__main__":
    main()
