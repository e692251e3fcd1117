"""it_onnx_import.py — ONNX models into Punchcard (issue 30, docs/interchange.md).

  engine: graphs built here with onnx.helper (an MLP ending in logits:
          Gemm with transB, Relu, MatMul + Add; a small CNN: Conv with
          padding, groups and dilation, BatchNormalization, MaxPool, a
          residual Add, GlobalAveragePool, Flatten, Gemm, Softmax) import
          (punch-train --validate prints the layers), predict with the
          file's weights as numpy computes the graph (1e-4) and train; an
          unsupported operator is refused naming the node and operator.
  torch:  a CNN with batchnorm and an MLP classifier from torch.onnx.export
          import and predict as PyTorch does (1e-4); skipped without
          python3-torch.
  seq:    sequence models from torch.onnx.export (nn.Embedding ->
          nn.LSTM / nn.GRU (batch_first, 1 or 2 layers) -> h_n[-1],
          out[:, -1], a bidirectional LSTM's two h_n concatenated,
          out.mean(1) -> nn.Linear, or nn.Linear on every step of out, a
          tagger) import as embedding / lstm / gru / bidirectional (lower
          layers and taggers with return_sequences) / global_avgpool1d /
          dense per step, predict as PyTorch does on the same token ids
          (1e-6), a lower layer's h_n is refused naming the node, and the
          LSTM one trains (its loss falls); skipped without python3-torch.
  daemon: PUT /api/v1/datasets/NAME.onnx is checked at upload (a bad graph
          is a 400 naming its node); "model": "@NAME.onnx" trains, and a
          "task": "predict" job without init_from evaluates the model as it
          came.

Run one part: it_onnx_import.py engine|torch|seq|daemon."""
import os
import shutil
import subprocess
import sys
import tempfile

import punchtest as pt

TOL = 1e-4


def run(argv, timeout=300):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def f32(a):
    import numpy as np
    return np.asarray(a, dtype=np.float32)


def save_model(nodes, inits, in_shape, out_shape, path, opset=13):
    import onnx
    from onnx import helper as h, numpy_helper as nh, TensorProto as T
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, ["N"] + in_shape)],
                     [h.make_tensor_value_info("y", T.FLOAT, ["N"] + out_shape)],
                     [nh.from_array(f32(v), k) for k, v in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def conv_ref(x, w, b, pad, dil, groups):
    """NCHW convolution, stride 1, symmetric pad, as ONNX's Conv."""
    import numpy as np
    n, c, hh, ww = x.shape
    k, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = hh + 2 * pad - dil * (kh - 1), ww + 2 * pad - dil * (kw - 1)
    y = np.zeros((n, k, oh, ow), np.float64)
    kg = k // groups
    for f in range(k):
        g = f // kg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dil:i * dil + oh, j * dil:j * dil + ow]
                y[:, f] += np.einsum("nchw,c->nhw", patch, w[f, :, i, j])
    return y + b[None, :, None, None]


def mlp_model(path, rng):
    from onnx import helper as h
    p = {"W1": rng.normal(size=(16, 6)) * 0.5, "b1": rng.normal(size=16),
         "W2": rng.normal(size=(16, 3)) * 0.5, "b2": rng.normal(size=3)}
    nodes = [h.make_node("Gemm", ["x", "W1", "b1"], ["h1"], name="fc1", transB=1),
             h.make_node("Relu", ["h1"], ["r1"], name="relu1"),
             h.make_node("Dropout", ["r1"], ["d1"], name="drop"),
             h.make_node("MatMul", ["d1", "W2"], ["m2"], name="fc2"),
             h.make_node("Add", ["m2", "b2"], ["y"], name="fc2_bias")]
    save_model(nodes, p, [6], [3], path)
    return lambda x: (f32(p["b2"]) + f32(x @ f32(p["W1"]).T + f32(p["b1"])).clip(0)
                      @ f32(p["W2"]))


def cnn_model(path, rng):
    import numpy as np
    from onnx import helper as h
    p = {"W1": rng.normal(size=(4, 2, 3, 3)) * 0.3, "B1": rng.normal(size=4) * 0.1,
         "g": rng.uniform(0.5, 1.5, 4), "be": rng.normal(size=4) * 0.1,
         "mu": rng.normal(size=4) * 0.1, "var": rng.uniform(0.5, 2, 4),
         "W2": rng.normal(size=(4, 2, 3, 3)) * 0.3,
         "Wf": rng.normal(size=(4, 3)), "bf": rng.normal(size=3) * 0.1}
    nodes = [h.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
             h.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["n1"],
                         name="bn1", epsilon=1e-3),
             h.make_node("Relu", ["n1"], ["r1"], name="relu1"),
             h.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
             h.make_node("Conv", ["p1", "W2"], ["c2"], name="conv2", pads=[2, 2, 2, 2],
                         dilations=[2, 2], group=2),
             h.make_node("Add", ["p1", "c2"], ["s"], name="residual"),
             h.make_node("GlobalAveragePool", ["s"], ["gp"], name="gap"),
             h.make_node("Flatten", ["gp"], ["f"], name="flatten"),
             h.make_node("Gemm", ["f", "Wf", "bf"], ["z"], name="fc"),
             h.make_node("Softmax", ["z"], ["y"], name="softmax", axis=1)]
    save_model(nodes, p, [2, 8, 8], [3], path)

    def ref(x):
        q = {k: np.asarray(v, np.float64) for k, v in p.items()}
        c1 = conv_ref(x.astype(np.float64), q["W1"], q["B1"], 1, 1, 1)
        n1 = ((c1 - q["mu"][None, :, None, None]) / np.sqrt(q["var"] + 1e-3)[None, :, None, None]
              * q["g"][None, :, None, None] + q["be"][None, :, None, None])
        r1 = np.maximum(n1, 0)
        p1 = r1.reshape(len(x), 4, 4, 2, 4, 2).max(axis=(3, 5))
        s = p1 + conv_ref(p1, q["W2"], np.zeros(4), 2, 2, 2)
        z = s.mean(axis=(2, 3)) @ q["Wf"] + q["bf"]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return ref


def job(model, inputs, classes, **data):
    d = {"format": "synthetic", "num_classes": classes, "synthetic_train": 128,
         "synthetic_test": 32}
    d.update(data)
    return {"name": "imported", "model": model, "data": d,
            "training": {"epochs": 2, "batch_size": 16, "optimizer": {"name": "sgd"}}}


def predict(engine, tmp, name, spec, weights, x):
    import numpy as np
    npy, out = os.path.join(tmp, name + "_x.npy"), os.path.join(tmp, name + "_pred")
    np.save(npy, x)
    p = run([engine, spec, "--weights", weights, "--predict", npy, "--out", out])
    pt.require(p.returncode == 0, "%s: --predict: %s" % (name, p.stderr))
    return np.load(os.path.join(out, "predictions.npy"))


def import_and_compare(engine, tmp, name, path, ref, x, classes, layers):
    import numpy as np
    spec = os.path.join(tmp, name + ".json")
    pt.write_json(spec, job("@" + path, list(x.shape[1:]), classes))
    p = run([engine, "--validate", spec])
    pt.require(p.returncode == 0, "%s: --validate: %s" % (name, p.stderr))
    for layer in layers:
        pt.check(layer in p.stdout, "%s: --validate does not print %s:\n%s"
                 % (name, layer, p.stdout))
    got = predict(engine, tmp, name, spec, path, x)
    want = ref(x)
    diff = float(np.max(np.abs(got - want)))
    print("%s: max |punch-train --predict - reference| = %.3g" % (name, diff))
    pt.check(got.shape == want.shape and diff <= TOL, "%s: predictions differ by %g"
             % (name, diff))
    return spec


def train_imported(engine, tmp, name, spec, path, x, softmaxes):
    """Training starts from the file's weights: the first loss is the
    imported model's, and the weights move. The run's model.onnx returns
    what /predict returns: a graph that ended in logits gets no Softmax
    (`softmaxes` is how many the graph itself had)."""
    import numpy as np
    import onnx
    run_dir = os.path.join(tmp, name + "_run")
    p = run([engine, spec, "--out", run_dir, "--threads", "2"])
    pt.require(p.returncode == 0, "%s: training: %s" % (name, p.stderr[-2000:]))
    trained = predict(engine, tmp, name + "_t", spec,
                      os.path.join(run_dir, "weights.safetensors"), x)
    before = predict(engine, tmp, name + "_b", spec, path, x)
    pt.check(np.all(np.isfinite(trained)), "%s: trained outputs are not finite" % name)
    pt.check(np.max(np.abs(trained - before)) > 1e-6, "%s: training changed nothing" % name)
    exported = onnx.load(os.path.join(run_dir, "model.onnx"))
    ops = [n.op_type for n in exported.graph.node]
    pt.check(ops.count("Softmax") == softmaxes, "%s: model.onnx has %d Softmax, the graph %d: %s"
             % (name, ops.count("Softmax"), softmaxes, ops))


def case_mlp(engine, tmp):
    import numpy as np
    rng = np.random.default_rng(1)
    path = os.path.join(tmp, "mlp.onnx")
    ref = mlp_model(path, rng)
    x = f32(rng.normal(size=(7, 6)))
    spec = import_and_compare(engine, tmp, "mlp", path, ref, x, 3,
                              ["0.dense 16", "1.relu", "2.dense 3"])
    train_imported(engine, tmp, "mlp", spec, path, x, 0)


def case_cnn(engine, tmp):
    import numpy as np
    rng = np.random.default_rng(2)
    path = os.path.join(tmp, "cnn.onnx")
    ref = cnn_model(path, rng)
    x = f32(rng.normal(size=(5, 2, 8, 8)))
    spec = import_and_compare(engine, tmp, "cnn", path, ref, x, 3,
                              ["conv2d", "batchnorm", "maxpool2d", "add", "avgpool2d",
                               "softmax"])
    train_imported(engine, tmp, "cnn", spec, path, x, 1)


def unsupported_model(path):
    from onnx import helper as h
    import onnx
    axis = onnx.helper.make_tensor("axis", onnx.TensorProto.INT64, [], [1])
    nodes = [h.make_node("Relu", ["x"], ["r"], name="/Relu"),
             h.make_node("Constant", [], ["axis"], name="/Constant", value=axis),
             h.make_node("CumSum", ["r", "axis"], ["y"], name="/Cumsum")]
    save_model(nodes, {}, [4], [4], path)


def case_refused(engine, tmp):
    path = os.path.join(tmp, "cumsum.onnx")
    unsupported_model(path)
    spec = os.path.join(tmp, "cumsum.json")
    pt.write_json(spec, job("@" + path, [4], 4))
    p = run([engine, "--validate", spec])
    want = 'model: node "/Cumsum" (CumSum) is not supported'
    pt.check(p.returncode != 0 and want in p.stderr, "CumSum: %r" % p.stderr)
    bad = os.path.join(tmp, "garbage.onnx")
    with open(bad, "wb") as f:
        f.write(b"\xff\xff\xff\xff not a protobuf")
    pt.write_json(spec, job("@" + bad, [4], 4))
    p = run([engine, "--validate", spec])
    pt.check(p.returncode != 0 and "not an ONNX model" in p.stderr, "garbage: %r" % p.stderr)


def torch_or_skip():
    try:
        import torch
    except ImportError:
        pt.skip("python3-torch is not installed")
    return torch


def case_torch(engine, tmp):
    torch = torch_or_skip()
    import numpy as np
    torch.manual_seed(0)
    nn = torch.nn
    models = {
        "torch_cnn": (nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                    nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1, groups=2),
                                    nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                    nn.Linear(8, 5)), (4, 3, 8, 8), 5),
        "torch_mlp": (nn.Sequential(nn.Flatten(), nn.Linear(12, 16), nn.Tanh(), nn.Dropout(0.2),
                                    nn.Linear(16, 4), nn.Softmax(dim=1)), (4, 12), 4),
        # LayerNormalization (opset 17) and GELU as torch 1.13 writes it
        # (x * 0.5 * (1 + erf(x / sqrt 2))), fused into the Linear before.
        "torch_ln_gelu": (nn.Sequential(nn.Linear(10, 16), nn.GELU(), nn.LayerNorm(16),
                                        nn.Linear(16, 3)), (4, 10), 3),
    }
    for name, (net, shape, classes) in models.items():
        net.eval()
        with torch.no_grad():
            for m in net.modules():  # non-trivial running statistics
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2)
        x = torch.randn(*shape)
        path = os.path.join(tmp, name + ".onnx")
        opset = 17 if name == "torch_ln_gelu" else 13
        torch.onnx.export(net, x, path, input_names=["x"], output_names=["y"], opset_version=opset,
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        with torch.no_grad():
            want = net(x).numpy()
        import_and_compare(engine, tmp, name, path, lambda _x, w=want: w, x.numpy(), classes,
                           ["dense"])


SEQ_V, SEQ_T = 30, 7
SEQ_TOL = 1e-6  # float32 both sides, the same operations: 1e-7 seen


def seq_classifier(torch, cell, take, bidirectional=False, layers=1):
    """Embedding -> LSTM/GRU (batch first) -> Linear, as a PyTorch user
    writes it; take "h" is h_n[-1] (both directions' for a bidirectional),
    "out" out[:, -1], "mean" out.mean(1), "tag" Linear on every step."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(SEQ_V, 8)
            self.rnn = cell(8, 10, num_layers=layers, batch_first=True,
                            bidirectional=bidirectional)
            self.fc = nn.Linear(20 if bidirectional else 10, 3)

        def forward(self, x):
            out, h = self.rnn(self.emb(x))
            h = h[0] if isinstance(h, tuple) else h
            if take == "tag":
                return self.fc(out)
            if take == "mean":
                return self.fc(out.mean(dim=1))
            if bidirectional:
                z = torch.cat([h[-2], h[-1]], dim=1)
            else:
                z = h[-1] if take == "h" else out[:, -1]
            return self.fc(z)
    return Net()


def seq_job(path, tmp, per_step=False, **training):
    t = {"epochs": 1, "batch_size": 16, "optimizer": {"name": "sgd"}}
    t.update(training)
    data = {"format": "npz", "train": "@" + os.path.join(tmp, "seq.npz"), "num_classes": 3,
            "max_length": SEQ_T}
    if per_step:
        data.update(train="@" + os.path.join(tmp, "tags.npz"), per_step_labels=True)
    return {"name": "imported-seq", "model": "@" + path, "data": data, "training": t}


def case_seq(engine, tmp):
    torch = torch_or_skip()
    import numpy as np
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    # Ids from 1: a trailing 0 is padding to the engine (docs/interchange.md).
    x = rng.integers(1, SEQ_V, size=(64, SEQ_T)).astype(np.int64)
    y = (x[:, -1] % 3).astype(np.int64)  # learnable from the last step
    np.savez(os.path.join(tmp, "seq.npz"), x_train=x, y_train=y)
    np.savez(os.path.join(tmp, "tags.npz"), x_train=x, y_train=x % 3)
    nn = torch.nn
    # name, cell, take, bidirectional, layers, what --validate prints.
    cases = [("lstm_h", nn.LSTM, "h", False, 1, "lstm 10"),
             ("lstm_out", nn.LSTM, "out", False, 1, "lstm 10"),
             ("gru_h", nn.GRU, "h", False, 1, "gru 10"), ("gru_out", nn.GRU, "out", False, 1, "gru 10"),
             ("bilstm", nn.LSTM, "h", True, 1, "bidirectional"),
             # Stacked (num_layers 2: the lower layer returns every step).
             ("lstm2_h", nn.LSTM, "h", False, 2, "lstm 10 all steps"),
             ("gru2_out", nn.GRU, "out", False, 2, "gru 10 all steps"),
             ("bilstm2_h", nn.LSTM, "h", True, 2, "all steps"),
             # The whole sequence: a mean over time, a tagger (Linear per step).
             ("lstm_mean", nn.LSTM, "mean", False, 1, "global_avgpool1d"),
             ("gru_tag", nn.GRU, "tag", False, 1, "gru 10 all steps"),
             ("bilstm2_tag", nn.LSTM, "tag", True, 2, "all steps")]
    for name, cell, take, bi, layers, layer in cases:
        net = seq_classifier(torch, cell, take, bi, layers).eval()
        path = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(net, torch.from_numpy(x[:2]), path, input_names=["x"],
                          output_names=["y"], opset_version=13,
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        spec = os.path.join(tmp, name + ".json")
        pt.write_json(spec, seq_job(path, tmp, per_step=take == "tag"))
        p = run([engine, "--validate", spec])
        pt.require(p.returncode == 0, "%s: --validate: %s" % (name, p.stderr))
        for want in ["embedding", layer, "dense 3"]:
            pt.check(want in p.stdout, "%s: --validate does not print %s:\n%s"
                     % (name, want, p.stdout))
        xs = x[:16]
        np.save(os.path.join(tmp, name + "_x.npy"), xs)
        out = os.path.join(tmp, name + "_pred")
        p = run([engine, spec, "--weights", path, "--predict",
                 os.path.join(tmp, name + "_x.npy"), "--out", out])
        pt.require(p.returncode == 0, "%s: --predict: %s" % (name, p.stderr))
        got = np.load(os.path.join(out, "predictions.npy"))
        with torch.no_grad():
            want = net(torch.from_numpy(xs))
            # --predict writes a per-step model's probabilities (softmax at every step).
            want = (torch.softmax(want, dim=-1) if take == "tag" else want).numpy()
        diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
        print("%s: max |punch-train --predict - torch| = %.3g" % (name, diff))
        pt.check(diff <= SEQ_TOL, "%s: predictions %s differ from torch's %s by %g"
                 % (name, got.shape, want.shape, diff))
    # An attribute the engine's LSTM does not have is refused by name.
    import onnx
    m = onnx.load(os.path.join(tmp, "lstm_h.onnx"))
    lstm = [n for n in m.graph.node if n.op_type == "LSTM"][0]
    lstm.attribute.append(onnx.helper.make_attribute("clip", 3.0))
    onnx.save(m, os.path.join(tmp, "clip.onnx"))
    spec = os.path.join(tmp, "clip.json")
    pt.write_json(spec, seq_job(os.path.join(tmp, "clip.onnx"), tmp))
    p = run([engine, "--validate", spec])
    want = 'node "%s" (LSTM): attribute clip is not supported' % lstm.name
    pt.check(p.returncode != 0 and want in p.stderr, "LSTM clip: %r" % p.stderr)
    # A lower layer's h_n (h_n[0] of a stack) is refused: that layer returns every step.
    net = seq_classifier(torch, nn.LSTM, "h", False, 2).eval()
    net.forward = lambda ids: net.fc(net.rnn(net.emb(ids))[1][0][0])
    path = os.path.join(tmp, "lstm2_h0.onnx")
    torch.onnx.export(net, torch.from_numpy(x[:2]), path, input_names=["x"],
                      output_names=["y"], opset_version=13,
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    gather = [n for n in onnx.load(path).graph.node if n.op_type == "Gather"][-1]
    pt.write_json(spec, seq_job(path, tmp))
    p = run([engine, "--validate", spec])
    want = 'node "%s" (Gather): only the last layer\'s entries of a stacked h_n' % gather.name
    pt.check(p.returncode != 0 and want in p.stderr, "stacked h_n[0]: %r" % p.stderr)
    # A few steps of training from the LSTM's imported weights: the loss falls.
    spec = os.path.join(tmp, "lstm_train.json")
    pt.write_json(spec, seq_job(os.path.join(tmp, "lstm_h.onnx"), tmp, epochs=4,
                                optimizer={"name": "adam", "learning_rate": 0.02}))
    run_dir = os.path.join(tmp, "lstm_run")
    p = run([engine, spec, "--out", run_dir, "--threads", "2"])
    pt.require(p.returncode == 0, "lstm training: %s" % p.stderr[-2000:])
    losses = pt.read_json(os.path.join(run_dir, "history.json"))["loss"]
    print("lstm_h training losses: %s" % ", ".join("%.4f" % v for v in losses))
    pt.check(losses[-1] < losses[0], "training the imported LSTM: the loss did not fall: %s"
             % losses)


def case_daemon(tmp):
    import numpy as np
    rng = np.random.default_rng(3)
    good, bad = os.path.join(tmp, "up.onnx"), os.path.join(tmp, "cumsum.onnx")
    ref = mlp_model(good, rng)
    unsupported_model(bad)
    x = f32(rng.normal(size=(9, 6)))
    data = os.path.join(tmp, "x.npz")
    np.savez(data, x=x, y=np.zeros(9, np.int64))
    with pt.Daemon() as d:
        put = lambda name, path: d.req("PUT", "/api/v1/datasets/" + name, "alice",
                                       body=open(path, "rb").read(),
                                       headers={"Content-Type": "application/octet-stream"})
        r = put("bad.onnx", bad)
        pt.check(r.status_code == 400 and
                 'node "/Cumsum" (CumSum) is not supported' in r.json().get("error", ""),
                 "bad upload: %d %s" % (r.status_code, r.text))
        r = put("mlp.onnx", good)
        pt.require(r.status_code in (200, 201), "upload: %d %s" % (r.status_code, r.text))
        r = put("x.npz", data)
        pt.require(r.status_code in (200, 201), "upload x.npz: %d %s" % (r.status_code, r.text))
        pt.expect_error(d.submit("bob", job("@mlp.onnx", [6], 3)), 400, "bob's model ref")
        jid = d.submit_id("alice", job("@mlp.onnx", [6], 3))
        j = d.wait_state("alice", jid, ["succeeded", "failed"], timeout=120)
        pt.check(j["state"] == "succeeded", "training the imported model: %s\n%s"
                 % (j, d.train_log(jid)))
        spec = job("@mlp.onnx", [6], 3, format="npz", test="@x.npz")
        spec["task"] = "predict"
        del spec["data"]["synthetic_train"], spec["data"]["synthetic_test"]
        jid = d.submit_id("alice", spec)
        j = d.wait_state("alice", jid, ["succeeded", "failed"], timeout=120)
        pt.require(j["state"] == "succeeded", "predict task: %s\n%s" % (j, d.train_log(jid)))
        got = np.load(os.path.join(d.run_dir(jid), "predictions.npy"))
        diff = float(np.max(np.abs(got - ref(x))))
        print("predict task: max |predictions - reference| = %.3g" % diff)
        pt.check(diff <= TOL, "the predict task differs from the graph by %g" % diff)


def cases():
    engine = pt.require_engine()
    pt.require_numpy()
    try:
        import onnx  # noqa: F401
    except ImportError:
        pt.skip("python3-onnx is not installed")
    parts = sys.argv[1:] or ["engine", "torch", "seq", "daemon"]
    tmp = tempfile.mkdtemp(prefix="punch-onnx-import-")
    try:
        if "engine" in parts:
            pt.case("mlp", case_mlp, engine, tmp)
            pt.case("cnn", case_cnn, engine, tmp)
            pt.case("refused", case_refused, engine, tmp)
        if "torch" in parts:
            pt.case("torch", case_torch, engine, tmp)
        if "seq" in parts:
            pt.case("seq", case_seq, engine, tmp)
        if "daemon" in parts:
            pt.case("daemon", case_daemon, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    pt.main(cases)
