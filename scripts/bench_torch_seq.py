#!/usr/bin/python3
"""bench_torch_seq.py NPZ MODEL [--epochs N] [--threads N] [--seed N] [--emb N]
[--units N] [--filters N] [--lr X] [--no-pack]: the PyTorch side of the
sequence-model comparison (scripts/bench-engine --models langid_lstm,...;
docs/performance.md). PyTorch is a benchmark reference only, never a
dependency of Punchcard.

Trains on a token-sequence npz (x_train int [N, T], ids 1..255, 0 = padding
after the end; y_train [N]; x_test, y_test), as scripts/fortunes-langid
writes it, the model punch-train trains from the same spec:

  lstm    embedding(256, emb) -> LSTM(units) -> dense(classes)  (last real step)
  gru     embedding(256, emb) -> GRU(units)  -> dense(classes)
  bilstm  embedding(256, emb) -> bidirectional LSTM(units / 2), concat -> dense
  conv1d  embedding(256, emb) -> conv1d(filters, 5, same, relu) -> global max -> dense

(defaults emb 32, units 128, filters 64, 4 epochs, 2 threads, seed 1).

Batch 32, Adam (lr 1e-3 unless --lr, Keras's epsilon 1e-7), samples in a seeded shuffled
order, the recurrent layers on packed sequences (nn.utils.rnn, lengths from
the padding) so padding costs nothing, as in punch-train. Prints one JSON
object: train samples/s (the step loop: batch gather, forward, loss,
backward, Adam), the final test accuracy, the epochs' losses."""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence


class Model(nn.Module):
    def __init__(self, kind, classes, emb, units, filters, pack=True, vocab=256):
        super().__init__()
        self.kind, self.pack = kind, pack
        self.emb = nn.Embedding(vocab, emb)
        if kind == "lstm":
            self.rnn = nn.LSTM(emb, units, batch_first=True)
        elif kind == "bilstm":
            self.rnn = nn.LSTM(emb, units // 2, batch_first=True, bidirectional=True)
        elif kind == "gru":
            self.rnn = nn.GRU(emb, units, batch_first=True)
        else:
            self.conv = nn.Conv1d(emb, filters, 5, padding=2)
            units = filters
        self.out = nn.Linear(units, classes)
        self.keras_init()

    @torch.no_grad()
    def keras_init(self):
        """punch-train's (Keras's) initial-weight scheme, so the comparison
        is of the engines, not of PyTorch's other defaults: embeddings
        uniform in +-0.05, kernels Glorot uniform over (fan_in, gates x
        units), recurrent kernels orthogonal, biases zero but an LSTM's
        forget gate's 1 (PyTorch's second, recurrent bias stays zero)."""
        nn.init.uniform_(self.emb.weight, -0.05, 0.05)
        for name, p in self.named_parameters():
            if name.startswith("emb"):
                continue
            if "bias" in name:
                p.zero_()
            elif "weight_hh" in name:
                gates = p.shape[0] // p.shape[1]
                for g in range(gates):
                    nn.init.orthogonal_(p[g * p.shape[1]:(g + 1) * p.shape[1]])
            elif "weight_ih" in name:
                limit = (6.0 / (p.shape[1] + p.shape[0])) ** 0.5
                nn.init.uniform_(p, -limit, limit)
            else:
                nn.init.xavier_uniform_(p)
        if self.kind in ("lstm", "bilstm"):
            for name, p in self.rnn.named_parameters():
                if name.startswith("bias_ih"):
                    units = p.shape[0] // 4
                    p[units:2 * units] = 1.0

    def forward(self, x, lengths):
        e = self.emb(x)
        if self.kind == "conv1d":
            h = torch.relu(self.conv(e.transpose(1, 2)))
            steps = torch.arange(x.shape[1]).unsqueeze(0)
            pad = (steps >= lengths.unsqueeze(1)).unsqueeze(1)
            h = h.masked_fill(pad, float("-inf")).max(dim=2).values
            return self.out(h)
        if not self.pack:
            # The whole padded batch through cuDNN-style fused kernels, the
            # output of each sample's last real step gathered: PyTorch's
            # fastest CPU path, which computes the padding too.
            out, _ = self.rnn(e)
            if self.kind == "bilstm":
                half = out.shape[2] // 2
                last = out[torch.arange(x.shape[0]), lengths - 1, :half]
                return self.out(torch.cat([last, out[:, 0, half:]], dim=1))
            return self.out(out[torch.arange(x.shape[0]), lengths - 1])
        packed = pack_padded_sequence(e, lengths, batch_first=True, enforce_sorted=False)
        _, state = self.rnn(packed)
        h = state if self.kind == "gru" else state[0]
        if self.kind == "bilstm":
            return self.out(torch.cat([h[-2], h[-1]], dim=1))
        return self.out(h[-1])


def lengths_of(x):
    """Index after the last non-zero id (0 is padding), at least 1."""
    nz = x != 0
    last = np.where(nz.any(1), x.shape[1] - np.argmax(nz[:, ::-1], axis=1), 1)
    return last.astype(np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("npz")
    ap.add_argument("model", choices=["lstm", "gru", "bilstm", "conv1d"])
    for name, default in (("epochs", 4), ("threads", 2), ("seed", 1), ("emb", 32),
                          ("units", 128), ("filters", 64), ("batch", 32)):
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--no-pack", action="store_true",
                    help="run the recurrent layers on the padded batch (not packed)")
    a = ap.parse_args()
    path, kind, epochs, threads, seed = a.npz, a.model, a.epochs, a.threads, a.seed
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    d = np.load(path)
    xt, yt = torch.from_numpy(d["x_train"].astype(np.int64)), torch.from_numpy(
        d["y_train"].astype(np.int64))
    lt = torch.from_numpy(lengths_of(d["x_train"]))
    xs, ys = torch.from_numpy(d["x_test"].astype(np.int64)), torch.from_numpy(
        d["y_test"].astype(np.int64))
    ls = torch.from_numpy(lengths_of(d["x_test"]))
    classes = int(max(yt.max(), ys.max())) + 1
    model = Model(kind, classes, a.emb, a.units, a.filters, pack=not a.no_pack)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    n, batch, seconds, losses = xt.shape[0], a.batch, 0.0, []
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        total = 0.0
        t0 = time.perf_counter()
        model.train()
        for b in range(0, n, batch):
            idx = order[b:b + batch]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx], lt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        seconds += time.perf_counter() - t0
        losses.append(total / n)
    model.eval()
    correct = 0
    with torch.no_grad():
        for b in range(0, xs.shape[0], 256):
            pred = model(xs[b:b + 256], ls[b:b + 256]).argmax(1)
            correct += int((pred == ys[b:b + 256]).sum())
    print(json.dumps({"model": kind, "framework": "pytorch " + torch.__version__,
                      "train_samples_per_s": round(n * epochs / seconds, 1),
                      "test_accuracy": round(correct / xs.shape[0], 4),
                      "losses": [round(v, 4) for v in losses], "threads": threads,
                      "emb": a.emb, "units": a.units, "epochs": epochs, "lr": a.lr,
                      "packed": not a.no_pack}))


if __name__ == "__main__":
    main()
