#!/usr/bin/python3
"""Cross-check engine/io and engine/data against independent Python code.

Usage: check_numpy.py TENSORFILE_TOOL

- numpy.load reads our weights.npz with the right names, shapes, values;
- our safetensors header parses with json + struct, 8-byte aligned, with
  contiguous data_offsets, and the data decodes to the same values;
- our readers load what numpy.savez / savez_compressed write (little and
  big endian) and a safetensors file built here by hand;
- dataset_epoch_permutation equals this file's own splitmix64 +
  xoshiro256** + Fisher-Yates (the documented algorithm);
- the IDX loader agrees with gzip + numpy on Fashion-MNIST when installed.
Exit 0 on success, 77 (skip) without numpy, 1 on any mismatch.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import punchtest
from punchtest import check, np  # np is None without numpy: cases() skips first

TOOL = sys.argv[1]
M64 = (1 << 64) - 1


def cases():
    punchtest.require_numpy()
    with tempfile.TemporaryDirectory() as tmp:
        punchtest.case("our npz and safetensors files", check_our_files, tmp)
        punchtest.case("numpy's files and a hand-made safetensors", check_numpy_files, tmp)
    punchtest.case("epoch permutation", check_permutation)
    punchtest.case("IDX loader on Fashion-MNIST", check_fashion_mnist)


def run(*args):
    out = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True)
    return out.returncode, out.stdout


def expected(i, shape):
    size = int(np.prod(shape)) if shape else 1
    k = np.arange(size, dtype=np.float32)
    return ((k - np.float32(7)) * np.float32(0.125) + np.float32(i)).reshape(shape)


SHAPES = [("0.dense.weight", (6, 5)), ("0.dense.bias", (5,)),
          ("2.conv2d.weight", (4, 2, 3, 3)), ("3.batchnorm.running_var", (4,)),
          ("step", ())]


def check_our_files(tmp):
    rc, _ = run("write", tmp)
    punchtest.require(rc == 0, "tool write")
    z = punchtest.load_npz(os.path.join(tmp, "w.npz"))
    check(sorted(z) == sorted(n for n, _ in SHAPES), "npz member names %s" % sorted(z))
    for i, (name, shape) in enumerate(SHAPES):
        a = z.get(name)
        if not check(a is not None, "npz has " + name):
            continue
        check(a.dtype == np.float32, "%s dtype %s" % (name, a.dtype))
        check(a.shape == shape, "%s shape %s" % (name, a.shape))
        check(np.array_equal(a, expected(i, shape)), "%s values" % name)

    with open(os.path.join(tmp, "w.safetensors"), "rb") as f:
        raw = f.read()
    header, base = punchtest.safetensors_header(raw)
    check(base % 8 == 0, "safetensors data aligned to 8")
    check(header.get("__metadata__") == {"writer": "punch"},
          "metadata %r" % header.get("__metadata__"))
    tensors = punchtest.safetensors_tensors(raw)  # every dtype F32, or the case ends
    for i, (name, shape) in enumerate(SHAPES):
        a = tensors.get(name)
        if not check(a is not None, "safetensors has " + name):
            continue
        check(a.shape == shape, "%s shape %s" % (name, a.shape))
        check(np.array_equal(a, expected(i, shape)), name + " safetensors values")
    spans = sorted(tuple(e["data_offsets"]) for k, e in header.items() if k != "__metadata__")
    pos = 0
    for b, end in spans:
        check(b == pos, "data_offsets contiguous at %d" % b)
        pos = end
    check(pos == len(raw) - base, "data_offsets cover the data (%d of %d)" % (pos, len(raw) - base))


def parse_dump(text):
    out = {}
    for line in text.splitlines():
        f = line.split()
        name, rank = f[0], int(f[1])
        shape = tuple(int(x) for x in f[2:2 + rank])
        vals = np.array([float(x) for x in f[2 + rank:]], dtype=np.float32)
        out[name] = vals.reshape(shape)
    return out


def check_numpy_files(tmp):
    rng = np.random.default_rng(5)
    arrays = {"w": rng.standard_normal((7, 3)).astype("<f4"),
              "b": rng.standard_normal(3).astype("<f4"),
              "k": rng.standard_normal((2, 3, 2, 2)).astype(">f4"),
              "s": np.array(2.5, dtype="<f4"),
              "e": np.zeros((0, 4), dtype="<f4")}
    for saver in (np.savez, np.savez_compressed):
        path = os.path.join(tmp, "np_%s.npz" % saver.__name__)
        saver(path, **arrays)
        rc, out = run("dump", path)
        check(rc == 0, "tool reads %s output: %s" % (saver.__name__, out.strip()))
        if rc:
            continue
        got = parse_dump(out)
        check(sorted(got) == sorted(arrays), "%s names %s" % (saver.__name__, sorted(got)))
        for name, a in arrays.items():
            g = got.get(name)
            check(g is not None and g.shape == a.shape and np.array_equal(g, a.astype("<f4")),
                  "%s: %s" % (saver.__name__, name))

    # A safetensors file written here, unpadded and in reverse data order.
    t1 = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    t2 = -np.arange(4, dtype="<f4")
    header = {"b": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
              "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [16, 40]}}
    h = json.dumps(header).encode()
    path = os.path.join(tmp, "py.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + t2.tobytes() + t1.tobytes())
    rc, out = run("dump", path)
    check(rc == 0, "tool reads python safetensors: " + out.strip())
    if rc == 0:
        got = parse_dump(out)
        check(np.array_equal(got.get("a"), t1) and np.array_equal(got.get("b"), t2),
              "python safetensors values")


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def permutation(n, seed, epoch):
    _, mixed = splitmix64(0x5045524D00000000 | (epoch & 0xFFFFFFFF))
    mixed ^= seed
    s = []
    for _ in range(4):
        mixed, v = splitmix64(mixed)
        s.append(v)

    def nxt():
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(bound):
        limit = M64 - (M64 % bound)
        while True:
            v = nxt()
            if v < limit:
                return v % bound

    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = below(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def check_permutation():
    for n, seed, epoch in [(10, 1, 0), (1000, 1, 1), (257, 123456789, 7), (5, 2**63 + 11, 3)]:
        rc, out = run("perm", n, seed, epoch)
        got = [int(x) for x in out.split()]
        check(rc == 0 and got == permutation(n, seed, epoch),
              "permutation n=%d seed=%d epoch=%d" % (n, seed, epoch))


def check_fashion_mnist():
    root = punchtest.DATASETS
    punchtest.require_dataset("fashion-mnist/t10k-images-idx3-ubyte.gz")
    for name in ("t10k", "train"):
        img, lab = punchtest.fashion_mnist(name)
        lab = lab.astype(np.int64)
        n = lab.size
        img = img.reshape(n, 784).astype(np.float64)
        want = "%d 784 1 28 28 %.0f %.0f %d" % (
            n, img.sum(), (img[0] * np.arange(1, 785)).sum(),
            (lab * (np.arange(n) % 7 + 1)).sum())
        rc, out = run("idx", root, "fashion-mnist/" + name)
        check(rc == 0 and out.strip() == want,
              "fashion-mnist/%s: engine %r, numpy %r" % (name, out.strip(), want))
        check(np.all(np.bincount(lab) == n // 10), "fashion-mnist/%s classes balanced" % name)


if __name__ == "__main__":
    punchtest.main(cases)
