#!/usr/bin/python3
"""Sequence data (issue 28) against what numpy and Python make of the same files.

Usage: check_sequences.py SEQSET_TOOL

- npz token sequences with and without len_*, cut and padded to
  data.max_length, per-sequence and per-step labels (-1 at padding), every
  integer width and float16/32/64, float [N, T, F] sequences;
- the CNTK seed notebook's CTF format (sparse token ids, one-hot label on
  a sequence's first line) and a dense, per-step CTF file;
- text windows, byte and char tokenizers, the char vocabulary;
- the errors (a bad CTF line, a token id >= V, an unknown char) with their
  messages; partial loads (ranges, record lists, the validation split)
  equal to the whole load.
Exit 0 on success, 77 (skip) without numpy, 1 on any mismatch.
"""
import json
import os
import subprocess
import sys
import tempfile

import punchtest
from punchtest import check, np

TOOL = sys.argv[1]


def cases():
    punchtest.require_numpy()
    with tempfile.TemporaryDirectory() as tmp:
        punchtest.case("npz token sequences", npz_tokens, tmp)
        punchtest.case("npz dtypes", npz_dtypes, tmp)
        punchtest.case("npz per-step labels and float sequences", npz_per_step, tmp)
        punchtest.case("npz errors", npz_errors, tmp)
        punchtest.case("ctf, the notebook's format", ctf_notebook, tmp)
        punchtest.case("ctf dense per step", ctf_dense, tmp)
        punchtest.case("ctf errors", ctf_errors, tmp)
        punchtest.case("text byte and char", text_windows, tmp)
        punchtest.case("text errors", text_errors, tmp)


def load(tmp, data, model_input, *extra):
    """The tool's JSON for a spec of `data` and model.input, or its message."""
    classes = data.get("num_classes", 256 if data["format"] == "text" else 10)
    layers = [{"type": "flatten"}, {"type": "dense", "units": classes, "activation": "softmax"}]
    spec = {"model": {"input": model_input, "layers": layers}, "data": data}
    path = os.path.join(tmp, "spec.json")
    punchtest.write_json(path, spec)
    out = subprocess.run([TOOL, path, tmp, *map(str, extra)], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), None


def require_load(tmp, data, model_input, *extra):
    got, msg = load(tmp, data, model_input, *extra)
    punchtest.require(got is not None, "load failed: %s" % msg)
    return got


def expect_error(tmp, data, model_input, *parts):
    got, msg = load(tmp, data, model_input)
    check(got is None and all(p in (msg or "") for p in parts),
          "expected an error with %s, got %s" % (parts, msg if got is None else "success"))


def seq_x(s):
    return np.array(s["x"], dtype=np.float32).reshape([s["n"]] + s["shape"])


def pad_cut(x, t):
    """x [N, T', ...] to [N, t, ...]: cut, or padded with zeros."""
    out = np.zeros((x.shape[0], t) + x.shape[2:], dtype=np.float32)
    k = min(t, x.shape[1])
    out[:, :k] = x[:, :k]
    return out


def tokens_file(tmp, n=12, t=9, v=50):
    rng = np.random.default_rng(3)
    x = rng.integers(1, v, size=(n, t))
    lens = rng.integers(1, t + 1, size=n)
    lens[0] = t
    for i, k in enumerate(lens):
        x[i, k:] = 0
    y = np.arange(n) % 3
    return x, lens, y


def same_set(a, b):
    return all(a[k] == b[k] for k in ("n", "shape", "label_steps", "x", "y", "len"))


def npz_tokens(tmp):
    x, lens, y = tokens_file(tmp)
    np.savez(os.path.join(tmp, "tok.npz"), x=x.astype(np.int32), y=y)
    data = {"format": "npz", "train": "tok", "num_classes": 3, "max_length": 12}
    got = require_load(tmp, data, {"tokens": 50})
    tr = got["train"]
    check(tr["shape"] == [12, 1], "shape %s" % tr["shape"])
    check(np.array_equal(seq_x(tr)[:, :, 0], pad_cut(x, 12)), "x padded to max_length")
    check(tr["len"] == lens.tolist(), "lengths from the last non-zero id: %s" % tr["len"])
    check(tr["y"] == y.tolist() and tr["label_steps"] == 1, "labels per sequence")
    # Cut to a shorter max_length: lengths cut with it.
    data["max_length"] = 5
    tr = require_load(tmp, data, {"tokens": 50})["train"]
    check(np.array_equal(seq_x(tr)[:, :, 0], pad_cut(x, 5)), "x cut to max_length")
    check(tr["len"] == np.minimum(lens, 5).tolist(), "lengths cut: %s" % tr["len"])
    # len_* given: it wins over the zeros, and steps past it are zero.
    given = np.maximum(lens - 1, 1)
    np.savez(os.path.join(tmp, "tokl.npz"), x_train=x.astype(np.int64),
             y_train=y, len_train=given)
    data = {"format": "npz", "train": "tokl", "num_classes": 3, "max_length": 9}
    tr = require_load(tmp, data, {"tokens": 50})["train"]
    check(tr["len"] == given.tolist(), "len_train read")
    want = x.astype(np.float32).copy()
    for i, k in enumerate(given):
        want[i, k:] = 0
    check(np.array_equal(seq_x(tr)[:, :, 0], want), "steps past len_train zeroed")
    # Partial loads equal the whole load, the validation split included.
    data["validation_split"] = 0.25
    whole = require_load(tmp, data, {"tokens": 50})
    check(whole["val"]["len"] == given[9:].tolist(), "validation split keeps lengths")
    part = require_load(tmp, data, {"tokens": 50}, "part", "train", 2, 6)
    check(part["x"] == whole["train"]["x"][2 * 9:6 * 9] and part["len"] ==
          whole["train"]["len"][2:6] and part["y"] == whole["train"]["y"][2:6], "range part")
    val = require_load(tmp, data, {"tokens": 50}, "part", "val", 0, 3)
    check(same_set(val, whole["val"]), "val part")
    rows = require_load(tmp, data, {"tokens": 50}, "rows", "1,4,8")
    check(rows["len"] == [whole["train"]["len"][i] for i in (1, 4, 8)] and
          rows["y"] == [whole["train"]["y"][i] for i in (1, 4, 8)], "record list")


def npz_dtypes(tmp):
    x, lens, y = tokens_file(tmp)
    data = {"format": "npz", "train": "w", "num_classes": 3, "max_length": 9}
    for dt in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "float16", "float32", "float64", ">i4", ">f2"):
        np.savez(os.path.join(tmp, "w.npz"), x=x.astype(dt), y=y.astype(dt))
        got, msg = load(tmp, data, {"tokens": 50})
        check(got is not None and np.array_equal(seq_x(got["train"])[:, :, 0], x) and
              got["train"]["y"] == y.tolist(), "%s: %s" % (dt, msg))
    # Images and tables too: float16 values convert exactly.
    f = (np.arange(24, dtype=np.float32) / 8 - 1).reshape(6, 4)
    np.savez(os.path.join(tmp, "tab.npz"), x=f.astype(np.float16), y=np.arange(6) % 3)
    got, msg = load(tmp, {"format": "npz", "train": "tab", "num_classes": 3,
                          "scaling": "none"}, [4])
    check(got is not None and got["train"]["x"] == f.ravel().tolist(), "float16 table: %s" % msg)


def npz_per_step(tmp):
    x, lens, _ = tokens_file(tmp)
    ys = (x % 3).astype(np.int16)
    np.savez(os.path.join(tmp, "ps.npz"), x=x.astype(np.uint16), y=ys)
    data = {"format": "npz", "train": "ps", "num_classes": 3, "max_length": 11,
            "per_step_labels": True}
    whole = require_load(tmp, data, {"tokens": 50})
    tr = whole["train"]
    want = np.full((12, 11), -1)
    for i, k in enumerate(lens):
        want[i, :k] = ys[i, :k]
    check(tr["label_steps"] == 11 and tr["y"] == want.ravel().tolist(),
          "per-step labels, -1 at padding")
    part = require_load(tmp, data, {"tokens": 50}, "rows", "0,5,11")
    check(part["y"] == want[[0, 5, 11]].ravel().tolist(), "per-step record list")
    # Float [N, T', F] sequences, lengths from the last non-zero step.
    rng = np.random.default_rng(8)
    f = rng.standard_normal((5, 6, 3)).astype(np.float32)
    f[1, 4:] = 0
    np.savez(os.path.join(tmp, "fs.npz"), x=f, y=np.arange(5) % 3)
    data = {"format": "npz", "train": "fs", "num_classes": 3, "max_length": 8}
    tr = require_load(tmp, data, {"sequence": [3]})["train"]
    check(np.array_equal(seq_x(tr), pad_cut(f, 8)) and tr["len"] == [6, 4, 6, 6, 6],
          "float sequences: len %s" % tr["len"])


def npz_errors(tmp):
    x, lens, y = tokens_file(tmp)
    x[7, 2] = 50
    np.savez(os.path.join(tmp, "big.npz"), x=x, y=y)
    expect_error(tmp, {"format": "npz", "train": "big", "num_classes": 3, "max_length": 9},
                 {"tokens": 50}, "big.npz", "record 8, step 3", "token id 50",
                 "[0, 50)")
    np.savez(os.path.join(tmp, "bl.npz"), x=x, y=y, len=np.zeros(12, dtype=np.int32))
    expect_error(tmp, {"format": "npz", "train": "bl", "num_classes": 3, "max_length": 9},
                 {"tokens": 60}, "bl.npz", "len: record 1", "length 0")
    np.savez(os.path.join(tmp, "empty.npz"), x=np.zeros((4, 0), np.int32),
             y=np.zeros(4, np.int32))
    expect_error(tmp, {"format": "npz", "train": "empty", "num_classes": 3, "max_length": 9},
                 {"tokens": 60}, "empty.npz", "has no steps")


NOTEBOOK = """0 |x 560:1 |y 1 0 0 0 0
0 |x 0:1
0 |x 0:1
1 |x 560:1 |y 0 1 0 0 0
1 |x 0:1
1 |x 0:1
1 |x 424:1
2 |x 160:1 |y 0 0 0 0 1
2 |x 24:1
"""


def ctf_notebook(tmp):
    with open(os.path.join(tmp, "nb.ctf"), "w") as f:
        f.write(NOTEBOOK)
    data = {"format": "ctf", "train": "nb", "num_classes": 5, "max_length": 3}
    layers = {"tokens": 944}
    whole = require_load(tmp, data, layers)
    tr = whole["train"]
    check(tr["n"] == 3 and tr["shape"] == [3, 1], "3 sequences of {3, 1}")
    check(tr["x"] == [560, 0, 0, 560, 0, 0, 160, 24, 0], "token ids, cut and padded: %s"
          % tr["x"])
    check(tr["len"] == [3, 3, 2] and tr["y"] == [0, 1, 4], "len %s, y %s"
          % (tr["len"], tr["y"]))
    part = require_load(tmp, data, layers, "part", "train", 1, 3)
    check(part["x"] == tr["x"][3:] and part["y"] == tr["y"][1:], "range part")
    # Sparse labels and other streams are read too; the stream names are set.
    with open(os.path.join(tmp, "nb2.txt"), "w") as f:
        f.write("a |w 3:1 |#comment\n|z 0.5 |w 1:1 |l 2:1\n")
    data = {"format": "ctf", "train": "nb2", "num_classes": 5, "max_length": 3,
            "features": "w", "labels": "l"}
    got, msg = load(tmp, data, {"tokens": 4})
    check(got is None and "nb2.txt:1: no |l label" in (msg or ""), "missing label: %s" % msg)


def ctf_dense(tmp):
    with open(os.path.join(tmp, "d.ctf"), "w") as f:
        f.write("s1 |x 0.5 1 |y 0 1\ns1 |x 2 -1 |y 1 0\n\ns2 |x 3 4 |y 1:1\n")
    data = {"format": "ctf", "train": "d", "num_classes": 2, "max_length": 3,
            "per_step_labels": True}
    tr = require_load(tmp, data, {"sequence": [2]})["train"]
    check(tr["x"] == [0.5, 1, 2, -1, 0, 0, 3, 4, 0, 0, 0, 0], "dense x %s" % tr["x"])
    check(tr["y"] == [1, 0, -1, 1, -1, -1] and tr["len"] == [2, 1], "per-step y %s"
          % tr["y"])


def ctf_errors(tmp):
    expect_error(tmp, {"format": "ctf", "train": "nothere", "num_classes": 2},
                 {"tokens": 5}, "nothere[.ctf][.txt]")
    expect_error(tmp, {"format": "text", "train": "nothere"}, {"tokens": 256},
                 "nothere[.txt]")
    cases = [("a |x 1:1 |y 1 0\na |x 2:1 3:1\n", {"tokens": 5}, "bad.ctf:2", "multi-hot"),
             ("a |x 7:1 |y 1 0\n", {"tokens": 5}, "bad.ctf:1", "index 7 is not in [0, 5)"),
             ("a |x 1:1 |y 1 0\nb |x 1:1 |y 0 1\nb |x q:1\n", {"tokens": 5}, "bad.ctf:3",
              "is not a number"),
             ("a |x 1:1 |y 1 0\na |x 1:1 |y 1 0\n", {"tokens": 5}, "bad.ctf:2",
              "per_step_labels"),
             ("a |x 1 2 3 |y 1 0\n", {"sequence": [2]}, "bad.ctf:1", "more than 2 values"),
             ("a x 1\n", {"tokens": 5}, "bad.ctf:1", "expected |name"),
             # A label is one class: soft, multi-hot or empty rows are refused,
             # not cut to their largest entry.
             ("a |x 1:1 |y 0.3 0.7\n", {"tokens": 5}, "bad.ctf:1", "not one-hot (entry 0"),
             ("a |x 1:1 |y 1 1\n", {"tokens": 5}, "bad.ctf:1", "not one-hot (entry 1"),
             ("a |x 1:1 |y 0 0\n", {"tokens": 5}, "bad.ctf:1", "all zeros"),
             ("a |x 1:1 |y 1:0.5\n", {"tokens": 5}, "bad.ctf:1", "class 1 has value 0.5"),
             # Dense values under a token input: refused before any is stored
             # (they once overran the row buffer, sized for the labels).
             ("a |x " + " 0" * 4000 + " |y 1 0\n", {"tokens": 5000}, "bad.ctf:1",
              "sparse ID:1 entry")]
    for text, model_input, *parts in cases:
        with open(os.path.join(tmp, "bad.ctf"), "w") as f:
            f.write(text)
        expect_error(tmp, {"format": "ctf", "train": "bad", "num_classes": 2,
                           "max_length": 4}, model_input, *parts)


def text_windows(tmp):
    text = "héllo wörld\nabc\n"
    with open(os.path.join(tmp, "t.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    raw = list(text.encode())
    data = {"format": "text", "train": "t", "max_length": 6, "block_size": 4}
    tr = require_load(tmp, data, {"tokens": 256})["train"]
    n = (len(raw) - 1) // 4
    check(tr["n"] == n and tr["label_steps"] == 6 and tr["len"] == [4] * n, "byte windows")
    xs = np.array(tr["x"]).reshape(n, 6)
    ys = np.array(tr["y"]).reshape(n, 6)
    check(all(xs[i, :4].tolist() == raw[4 * i:4 * i + 4] and
              ys[i, :4].tolist() == raw[4 * i + 1:4 * i + 5] for i in range(n)) and
          (xs[:, 4:] == 0).all() and (ys[:, 4:] == -1).all(), "byte windows' values")
    vocab = sorted(set(text))
    data = {"format": "text", "train": "t", "test": "t", "max_length": 3,
            "tokenizer": "char", "num_classes": 20}
    got = require_load(tmp, data, {"tokens": 20})
    ids = [vocab.index(c) for c in text]
    n = (len(ids) - 1) // 3
    check(got["train"]["x"] == [float(v) for v in ids[:3 * n]] and
          got["train"]["y"] == [v for i in range(n) for v in ids[3 * i + 1:3 * i + 4]],
          "char windows")
    check(got["test"]["x"] == got["train"]["x"], "test text with the train vocabulary")
    voc = require_load(tmp, data, {"tokens": 20}, "vocab")
    check(voc == [ord(c) for c in vocab], "vocabulary %s" % voc)
    part = require_load(tmp, data, {"tokens": 20}, "rows", "1,3")
    check(part["y"] == got["train"]["y"][3:6] + got["train"]["y"][9:12], "text record list")


def text_errors(tmp):
    with open(os.path.join(tmp, "tr.txt"), "w", encoding="utf-8") as f:
        f.write("abcabc\nabc\n")
    with open(os.path.join(tmp, "te.txt"), "w", encoding="utf-8") as f:
        f.write("abc\nabé\n")
    data = {"format": "text", "train": "tr", "test": "te", "max_length": 3,
            "tokenizer": "char", "num_classes": 4}
    expect_error(tmp, data, {"tokens": 4}, "te.txt:2", "U+00E9", "vocabulary")
    with open(os.path.join(tmp, "bad.txt"), "wb") as f:
        f.write(b"ab\n\xff\xfe\n")
    data = {"format": "text", "train": "bad", "max_length": 3, "tokenizer": "char",
            "num_classes": 4}
    expect_error(tmp, data, {"tokens": 4}, "bad.txt:2", "invalid UTF-8")
    data = {"format": "text", "train": "tr", "max_length": 3, "tokenizer": "char",
            "num_classes": 2}
    expect_error(tmp, data, {"tokens": 4}, "tr.txt", "4 ids", "data.num_classes (2)")


if __name__ == "__main__":
    punchtest.main(cases)
