#!/usr/bin/python3
"""attn_torch.py MODE PARAMS OUT V E H L T C N: a preset written
independently in PyTorch (test_attn's reference). MODE "classifier" is
transformer_classifier; "gpt" is nanoGPT's GPT (causal, a final layer
norm, the output tied to the token table). PARAMS holds float32s: every
tensor of the engine's model in layer order, then the token ids (N, T)
and the lengths (N). OUT gets float32s: the classifier's logits (N, C)
then its probabilities; the GPT's logits (N, T, V)."""
import sys

import numpy as np
import torch
import torch.nn.functional as F

GPT = sys.argv[1] == "gpt"
V, E, H, L, T, C, N = (int(a) for a in sys.argv[4:11])
buf = np.fromfile(sys.argv[2], dtype=np.float32)
at = 0


def take(*shape):
    global at
    n = int(np.prod(shape))
    t = torch.from_numpy(buf[at:at + n].reshape(shape).copy()).double()
    at += n
    return t


wte, wpe = take(V, E), take(T, E)
blocks = []
for _ in range(L):
    b = {"ln1": (take(E), take(E))}
    for name in ("q", "k", "v"):
        b[name] = (take(E, E), take(E))
    b["o"] = (take(E, E), take(E))
    b["ln2"] = (take(E), take(E))
    b["fc"] = (take(E, 4 * E), take(4 * E))
    b["proj"] = (take(4 * E, E), take(E))
    blocks.append(b)
head = (take(E), take(E)) if GPT else (take(E, C), take(C))
ids = take(N, T).long()
lens = take(N).long()
assert at == len(buf)

real = torch.arange(T)[None, :] < lens[:, None]          # (N, T)
x = wte[ids] + wpe[None, :, :]
dk = E // H


def attention(h, b):
    def heads(w):
        return (h @ w[0] + w[1]).view(N, T, H, dk).transpose(1, 2)
    q, k, v = heads(b["q"]), heads(b["k"]), heads(b["v"])
    att = q @ k.transpose(-2, -1) / dk ** 0.5
    seen = real[:, None, None, :]
    if GPT:
        seen = seen & torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~seen, float("-inf")).softmax(-1)
    y = (att @ v).transpose(1, 2).reshape(N, T, E)
    return y @ b["o"][0] + b["o"][1]


for b in blocks:
    x = x + attention(F.layer_norm(x, (E,), *b["ln1"], eps=1e-5), b)
    h = F.layer_norm(x, (E,), *b["ln2"], eps=1e-5)
    x = x + F.gelu(h @ b["fc"][0] + b["fc"][1], approximate="tanh") @ b["proj"][0] + b["proj"][1]
if GPT:
    logits = F.layer_norm(x, (E,), *head, eps=1e-5) @ wte.t()
    logits.numpy().astype(np.float32).tofile(sys.argv[3])
    sys.exit(0)
pooled = (x * real[..., None]).sum(1) / lens[:, None]
logits = pooled @ head[0] + head[1]
np.concatenate([logits.numpy().ravel(), logits.softmax(-1).numpy().ravel()]).astype(
    np.float32).tofile(sys.argv[3])
