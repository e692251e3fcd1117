"""it_onnx_export.py — the ONNX export (issue 30, docs/interchange.md).

  presets: every feed-forward model preset, at the smallest image input it
           validates on, exports (punch-train --export-onnx, initial
           weights) and passes onnx.checker.check_model(full_check=True)
           (Debian's python3-onnx); a sequence model is refused with a
           message naming its layer.
  runtime: a small CNN on byte data (unit scaling: /255 inside the graph;
           conv with groups and dilation, batchnorm, max and average
           pooling, add, concat, dropout, dense softmax) and an MLP on
           float data (standard scaling), trained; the model.onnx each job
           wrote runs in ONNX Runtime (npm onnxruntime-node, installed with
           --ignore-scripts into the build directory on first use) to
           punch-train --predict's outputs within 1e-4. Skips when node,
           npm or the registry is unreachable.

  daemon:  GET /api/v1/jobs/ID/export?format=onnx serves the job's
           model.onnx, builds it on request for a job without one (an
           older job), refuses another user (404) and other formats (400);
           punch fetch --onnx downloads it.

Run one part: it_onnx_export.py presets|runtime|daemon."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import punchtest as pt

TOL = 1e-4
QUICK = os.environ.get("PUNCH_ONNX_QUICK") == "1"
QUICK_PARAMS = 2000000
SHAPES = ([3, 16, 16], [3, 32, 32], [3, 64, 64], [3, 96, 96])


def run(argv, timeout=300, env=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def preset_names(engine, tmp):
    """Every preset, from the message that refuses an unknown one."""
    path = os.path.join(tmp, "unknown.json")
    pt.write_json(path, {"model": {"preset": "no-such-preset", "input": [3, 16, 16]},
                         "data": {"format": "synthetic"}})
    out = run([engine, "--validate", path])
    m = re.search(r"expected one of (.*)$", out.stderr.strip())
    pt.require(m, "no preset list in: %s" % out.stderr)
    return [n.strip() for n in m.group(1).split(",")]


def spec_for(engine, tmp, name):
    """A job for preset `name` at the smallest image input it validates on;
    None for a sequence preset, and under PUNCH_ONNX_QUICK (the sanitizer
    build) for one over QUICK_PARAMS parameters."""
    path = os.path.join(tmp, name + ".json")
    for shape in SHAPES:
        pt.write_json(path, {"name": name, "model": {"preset": name, "input": shape},
                             "data": {"format": "synthetic"}})
        out = run([engine, "--validate", path])
        if out.returncode == 0:
            m = re.search(r"Trainable params: ([\d,]+)", out.stdout)
            if QUICK and m and int(m.group(1).replace(",", "")) > QUICK_PARAMS:
                return None
            return path
        if "model.preset:" in out.stderr:  # a sequence preset: refused on images
            return None
    pt.fail("%s validates on none of %s: %s" % (name, SHAPES, out.stderr.strip()))


def case_presets(engine, tmp):
    import onnx
    names = preset_names(engine, tmp)
    pt.require(len(names) >= 20, "only %d presets listed" % len(names))
    exported = 0
    for name in names:
        spec = spec_for(engine, tmp, name)
        if spec is None:
            continue
        path = os.path.join(tmp, name + ".onnx")
        out = run([engine, spec, "--export-onnx", path])
        if not pt.check(out.returncode == 0, "%s: export failed: %s" % (name, out.stderr)):
            continue
        model = onnx.load(path)
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as e:  # the checker's own exception types vary by version
            pt.check(False, "%s: checker: %s" % (name, e))
            continue
        pt.check(model.opset_import[0].version == 17, "%s: opset %s" % (name, model.opset_import))
        dims = model.graph.input[0].type.tensor_type.shape.dim
        pt.check(dims[0].dim_param == "N", "%s: batch dimension is not dynamic" % name)
        pt.check([o.name for o in model.graph.output] == ["output"], "%s: outputs" % name)
        os.unlink(path)
        exported += 1
    print("exported and checked %d presets" % exported)
    pt.check(exported >= (5 if QUICK else 20), "only %d presets exported" % exported)


def case_sequence_presets(engine, tmp):
    import onnx
    # (the per-step presets need per-step data; case_sequences runs one)
    for name in ["lstm_classifier", "cntk_lstm"]:
        spec, path = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".onnx")
        data = {"format": "synthetic", "max_length": 16}
        pt.write_json(spec, {"model": {"preset": name, "input": {"tokens": 256}}, "data": data})
        out = run([engine, spec, "--export-onnx", path])
        if not pt.check(out.returncode == 0, "%s: export failed: %s" % (name, out.stderr)):
            continue
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        inp = model.graph.input[0].type.tensor_type
        pt.check(inp.elem_type == onnx.TensorProto.INT64, "%s: input type %d" % (name,
                                                                             inp.elem_type))
        pt.check([d.dim_value for d in inp.shape.dim][1:] == [16], "%s: input %s" % (name, inp))
    spec = os.path.join(tmp, "pool1d.json")
    pt.write_json(spec, {"model": {"input": {"tokens": 256}, "layers": [
        {"type": "embedding", "output_dim": 4}, {"type": "maxpool1d", "pool_size": 2},
        {"type": "global_avgpool1d"}, {"type": "dense", "units": 10}]},
        "data": {"format": "synthetic", "max_length": 8}})
    out = run([engine, spec, "--export-onnx", os.path.join(tmp, "pool1d.onnx")])
    pt.check(out.returncode == 1, "exit %d, expected 1" % out.returncode)
    pt.check("model.layers[1]: ONNX export does not support maxpool1d" in out.stderr,
             "message: %r" % out.stderr)
    pt.check(not os.path.exists(os.path.join(tmp, "pool1d.onnx")), "a partial file was left")


def ort_dir():
    """node_modules holding onnxruntime-node, installed on first use; skip
    when it cannot be."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pt.skip("node or npm is not installed (apt-get install nodejs npm)")
    cache = pt.build_path("onnxruntime-cache")
    if not os.path.isdir(os.path.join(cache, "node_modules", "onnxruntime-node")):
        os.makedirs(cache, exist_ok=True)
        try:
            out = run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund",
                       "--fetch-retries", "1",
                       "--prefix", cache, "onnxruntime-node"], timeout=300)
        except subprocess.TimeoutExpired:
            pt.skip("npm install onnxruntime-node timed out (registry unreachable?)")
        if out.returncode != 0:
            pt.skip("npm install onnxruntime-node failed (registry unreachable?): %s"
                    % out.stderr.strip()[-300:])
    return os.path.join(cache, "node_modules")


def ort_outputs(modules, model, x, tmp):
    import numpy as np
    inp, outp = os.path.join(tmp, "ort_in.bin"), os.path.join(tmp, "ort_out.bin")
    ids = x.dtype == np.int64  # token ids; byte images go in as float
    np.ascontiguousarray(x, dtype="<i8" if ids else "<f4").tofile(inp)
    env = dict(os.environ, NODE_PATH=modules)
    out = run(["node", pt.source_path("tests", "interchange", "ort_run.js"), model, inp,
               json.dumps(list(x.shape)), outp] + (["int64"] if ids else []),
              timeout=120, env=env)
    pt.require(out.returncode == 0, "onnxruntime: %s" % out.stderr)
    info = json.loads(out.stdout)
    return np.fromfile(outp, dtype="<f4").reshape(info["dims"])


def train_and_compare(engine, modules, tmp, name, job, x):
    import numpy as np
    spec, rundir = os.path.join(tmp, name + ".json"), os.path.join(tmp, name)
    pt.write_json(spec, job)
    out = run([engine, spec, "--out", rundir, "--threads", "2"])
    pt.require(out.returncode == 0, "%s: training failed: %s" % (name, out.stderr))
    model = os.path.join(rundir, "model.onnx")
    pt.require(os.path.exists(model), "%s: the job wrote no model.onnx: %s" % (name, out.stderr))
    npy = os.path.join(tmp, name + "_in.npy")
    np.save(npy, x)
    pout = os.path.join(tmp, name + "_pred")
    out = run([engine, spec, "--weights", os.path.join(rundir, "weights.safetensors"),
               "--predict", npy, "--out", pout])
    pt.require(out.returncode == 0, "%s: --predict failed: %s" % (name, out.stderr))
    want = np.load(os.path.join(pout, "predictions.npy"))
    got = ort_outputs(modules, model, x if x.dtype == np.int64 else x.astype(np.float32), tmp)
    pt.require(got.shape == want.shape, "%s: shape %s, /predict's %s" % (name, got.shape,
                                                                       want.shape))
    diff = float(np.max(np.abs(got - want)))
    print("%s: %d samples, max |onnxruntime - predict| = %.3g" % (name, len(x), diff))
    pt.check(diff <= TOL, "%s: onnxruntime differs from /predict by %g" % (name, diff))
    # The same model from the weights file, as the daemon builds it for an
    # older job, is the same graph.
    again = os.path.join(tmp, name + "_again.onnx")
    out = run([engine, spec, "--weights", os.path.join(rundir, "weights.safetensors"),
               "--export-onnx", again])
    pt.require(out.returncode == 0, "%s: --export-onnx: %s" % (name, out.stderr))
    with open(again, "rb") as a, open(model, "rb") as b:
        pt.check(a.read() == b.read(), "%s: --export-onnx differs from the job's model.onnx"
                 % name)


def case_cnn(engine, modules, tmp):
    import numpy as np
    layers = [
        {"type": "conv2d", "filters": 4, "kernel": [3, 3], "padding": "same",
         "activation": "relu"},
        {"type": "batchnorm"},
        {"type": "maxpool2d", "pool": [2, 2]},
        {"type": "conv2d", "filters": 4, "kernel": [3, 3], "padding": "same", "groups": 2,
         "dilation": [2, 2]},
        {"type": "add", "inputs": [2, 3]},
        {"type": "conv2d", "filters": 4, "kernel": [1, 1], "activation": "tanh"},
        {"type": "concat", "inputs": [4, 5]},
        {"type": "avgpool2d", "pool": [3, 3], "stride": [2, 2], "padding": "same"},
        {"type": "conv2d", "filters": 3, "kernel": [2, 2], "stride": [1, 1],
         "activation": "sigmoid"},
        {"type": "flatten"},
        {"type": "dropout", "rate": 0.25},
        {"type": "dense", "units": 10, "activation": "softmax"},
    ]
    job = {"name": "cnn", "model": {"input": [2, 8, 8], "layers": layers},
           "data": {"format": "synthetic", "synthetic_train": 512, "synthetic_test": 64},
           "training": {"epochs": 2, "batch_size": 32}}
    x = np.random.default_rng(1).integers(0, 256, size=(7, 2, 8, 8)).astype(np.uint8)
    train_and_compare(engine, modules, tmp, "cnn", job, x)


def case_mlp(engine, modules, tmp):
    import numpy as np
    rng = np.random.default_rng(2)
    xs = (rng.normal(size=(300, 6)) * [1, 5, 0.1, 20, 3, 1] + [0, 10, -3, 50, 0, 1])
    y = (xs[:, 0] + xs[:, 1] / 5 > 2).astype(np.int64) + (xs[:, 3] > 50)
    data = os.path.join(tmp, "mlp.npz")
    np.savez(data, x_train=xs[:240].astype(np.float32), y_train=y[:240],
             x_test=xs[240:].astype(np.float32), y_test=y[240:])
    layers = [
        {"type": "dense", "units": 16, "activation": "tanh"},
        {"type": "batchnorm"},
        {"type": "dense", "units": 8},
        {"type": "relu"},
        {"type": "dense", "units": 8, "activation": "gelu"},
        {"type": "dense", "units": 8, "activation": "gelu_exact"},
        {"type": "dense", "units": 3},
    ]
    job = {"name": "mlp", "model": {"input": [6], "layers": layers},
           "data": {"format": "npz", "train": "@" + data, "test": "@" + data,
                    "scaling": "standard", "num_classes": 3},
           "training": {"epochs": 3, "batch_size": 16}}
    train_and_compare(engine, modules, tmp, "mlp", job, xs[:9].astype(np.float32))


def seq_data(tmp, name, rng, vocab=None, feat=None, n=160, steps=12, per_step=False):
    """An npz of sequences of random lengths 1..steps, zero padded: token
    ids 1..vocab-1 or float steps; labels from the content."""
    import numpy as np
    lens = rng.integers(1, steps + 1, size=n)
    real = np.arange(steps)[None, :] < lens[:, None]
    if vocab:
        x = rng.integers(1, vocab, size=(n, steps)) * real
        y = (x.sum(axis=1) // lens) % 3
        if per_step:
            y = np.where(real, x % 3, -1)
    else:
        x = (rng.normal(size=(n, steps, feat)) * 2 + 1).astype(np.float32) * real[:, :, None]
        y = (x[:, :, 0].sum(axis=1) > lens).astype(np.int64) + (x[:, 0, 1] > 1)
    path = os.path.join(tmp, name + ".npz")
    np.savez(path, x_train=x, y_train=y, x_test=x[:32], y_test=y[:32])
    return path, x


def seq_job(name, inp, layers, data, per_step=False):
    d = {"format": "npz", "train": "@" + data, "test": "@" + data, "num_classes": 3,
         "max_length": 12}
    if per_step:
        d["per_step_labels"] = True
    return {"name": name, "model": {"input": inp, "layers": layers}, "data": d,
            "training": {"epochs": 1, "batch_size": 16, "seed": 3,
                         "optimizer": {"name": "adam", "learning_rate": 0.01}}}


def seq_inputs(x):
    """Test rows: trained-on samples, a full row, a one-step row and a row
    of padding only."""
    import numpy as np
    rows = np.array(x[:6])
    rows[1] = x[0].max() if rows.ndim == 2 else 0.5
    rows[2, 1:] = 0
    rows[3] = 0
    return rows


def case_sequences(engine, modules, tmp):
    import numpy as np
    rng = np.random.default_rng(5)
    data, x = seq_data(tmp, "tok", rng, vocab=20)
    # embedding, conv1d (same), layer_norm, a bidirectional LSTM returning
    # sequences, a GRU (reset_after) to its last real step, dense softmax.
    layers = [{"type": "embedding", "output_dim": 8},
              {"type": "conv1d", "filters": 6, "kernel_size": 3, "padding": "same",
               "activation": "relu"},
              {"type": "layer_norm"},
              {"type": "bidirectional", "layer": {"type": "lstm", "units": 5,
                                                  "return_sequences": True}},
              {"type": "gru", "units": 4},
              {"type": "dense", "units": 3, "activation": "softmax"}]
    train_and_compare(engine, modules, tmp, "seq_tokens",
                      seq_job("seq_tokens", {"tokens": 20}, layers, data), seq_inputs(x))
    # an LSTM straight on the ids (one-hot), a valid conv1d (shorter
    # lengths), a global max pool, a linear dense (the loss's softmax).
    layers = [{"type": "lstm", "units": 6, "return_sequences": True},
              {"type": "conv1d", "filters": 4, "kernel_size": 3, "padding": "valid",
               "activation": "tanh"},
              {"type": "global_maxpool1d"},
              {"type": "dense", "units": 3}]
    train_and_compare(engine, modules, tmp, "seq_onehot",
                      seq_job("seq_onehot", {"tokens": 20}, layers, data), seq_inputs(x))
    # float steps: a GRU (reset_after false) returning
    # sequences, a bidirectional GRU summed, a causal conv1d, a global
    # average pool, gelu.
    fdata, fx = seq_data(tmp, "steps", rng, feat=3)
    layers = [{"type": "gru", "units": 5, "return_sequences": True, "reset_after": False},
              {"type": "bidirectional", "merge_mode": "sum",
               "layer": {"type": "gru", "units": 4, "return_sequences": True}},
              {"type": "conv1d", "filters": 4, "kernel_size": 2, "padding": "causal",
               "dilation_rate": 2},
              {"type": "global_avgpool1d"},
              {"type": "dense", "units": 6, "activation": "gelu"},
              {"type": "dense", "units": 3, "activation": "softmax"}]
    job = seq_job("seq_floats", {"sequence": [3]}, layers, fdata)
    train_and_compare(engine, modules, tmp, "seq_floats", job, seq_inputs(fx))
    # a label per step: [N, T, classes], zeros at padding.
    sdata, sx = seq_data(tmp, "tags", rng, vocab=20, per_step=True)
    layers = [{"type": "embedding", "output_dim": 8},
              {"type": "lstm", "units": 6, "return_sequences": True, "go_backwards": False},
              {"type": "dense", "units": 3}]
    train_and_compare(engine, modules, tmp, "seq_steps",
                      seq_job("seq_steps", {"tokens": 20}, layers, sdata, per_step=True),
                      seq_inputs(sx))


def punch(d, user, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUNCH_")}
    env.update(PUNCH_URL=d.url, PUNCH_SECRET=d.secrets[user], HOME=d.tmp)
    exe = os.environ.get("PUNCH") or pt.build_path("client", "punch")
    return run([exe] + list(args), timeout=60, env=env)


def case_daemon(tmp):
    import onnx
    job = {"name": "export", "model": {"input": [1, 6, 6], "layers": [
        {"type": "conv2d", "filters": 2, "kernel": [3, 3], "activation": "relu"},
        {"type": "flatten"}, {"type": "dense", "units": 3, "activation": "softmax"}]},
        "data": {"format": "synthetic", "synthetic_train": 64, "synthetic_test": 16,
                 "num_classes": 3},
        "training": {"epochs": 1, "batch_size": 16}}
    with pt.Daemon() as d:
        jid = d.submit_id("alice", job)
        d.wait_state("alice", jid, ["succeeded"], timeout=120)
        path = "/api/v1/jobs/%s/export?format=onnx" % jid
        r = d.req("GET", path, "alice")
        pt.require(r.status_code == 200, "export: %d %s" % (r.status_code, r.text[:300]))
        saved = os.path.join(d.run_dir(jid), "model.onnx")
        with open(saved, "rb") as f:
            pt.check(r.content == f.read(), "the export is not the run directory's model.onnx")
        pt.check("model.onnx" in r.headers.get("Content-Disposition", ""),
                 "Content-Disposition: %r" % r.headers.get("Content-Disposition"))
        pt.expect_error(d.req("GET", path, "bob"), 404, "bob exports alice's model")
        pt.expect_error(d.req("GET", "/api/v1/jobs/%s/export?format=tflite" % jid, "alice"),
                        400, "format tflite")
        # A job from before the export: no model.onnx; built on request.
        os.unlink(saved)
        r = d.req("GET", "/api/v1/jobs/%s/export" % jid, "alice")
        pt.require(r.status_code == 200, "export built on request: %d %s"
                   % (r.status_code, r.text[:300]))
        built = os.path.join(tmp, "built.onnx")
        with open(built, "wb") as f:
            f.write(r.content)
        onnx.checker.check_model(onnx.load(built), full_check=True)
        pt.check(not os.path.exists(saved), "the daemon wrote into the run directory")
        out = punch(d, "alice", "fetch", jid, "--onnx", "-o", os.path.join(tmp, "fetched"))
        pt.check(out.returncode == 0, "punch fetch --onnx: %s %s" % (out.stdout, out.stderr))
        fetched = os.path.join(tmp, "fetched", "model.onnx")
        pt.check(os.path.exists(fetched) and "model.onnx" in out.stdout,
                 "punch fetch --onnx wrote no model.onnx: %s" % out.stdout)
        if os.path.exists(fetched):
            with open(fetched, "rb") as f:
                pt.check(f.read() == r.content, "punch fetch's model.onnx differs")


def cases():
    engine = pt.require_engine()
    parts = sys.argv[1:] or ["presets", "runtime", "daemon"]
    tmp = tempfile.mkdtemp(prefix="punch-onnx-")
    try:
        if "presets" in parts:
            pt.case("presets export and pass the checker", case_presets, engine, tmp)
            pt.case("sequence presets export; a 1-d window pool is refused naming its layer",
                    case_sequence_presets, engine, tmp)
        if "runtime" in parts:
            pt.require_numpy()
            modules = ort_dir()
            pt.case("cnn: onnxruntime gives /predict's outputs", case_cnn, engine, modules, tmp)
            pt.case("mlp: onnxruntime gives /predict's outputs", case_mlp, engine, modules, tmp)
            pt.case("sequence models: onnxruntime gives /predict's outputs", case_sequences,
                    engine, modules, tmp)
        if "daemon" in parts:
            pt.case("daemon: /export and punch fetch --onnx", case_daemon, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    pt.main(cases)
