"""it_keras.py — "model": {"keras": CONFIG} (issue 30, docs/interchange.md):
hand-written configs in the layouts Keras's model.to_json() writes — a
Keras 2 Sequential CNN (channels last, batchnorm, global pooling), a
Keras 3 Functional residual model (Add, Concatenate, Keras 3's
__keras_tensor__ inbound nodes) and a Keras 3 Sequential text model
(Embedding, Bidirectional LSTM, GRU, LayerNormalization) — validate to the
layers and shapes Keras would build and train a few steps; an unknown
layer class and an unsupported option are refused naming the layer and
the option."""
import os
import shutil
import subprocess
import tempfile

import punchtest as pt


def run(argv, timeout=300):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def k2(cls, name, **cfg):
    cfg.update(name=name, trainable=True, dtype="float32")
    return {"class_name": cls, "config": cfg}


def k3(cls, name, inbound=None, **cfg):
    cfg.update(name=name, trainable=True,
               dtype={"module": "keras", "class_name": "DTypePolicy",
                      "config": {"name": "float32"}, "registered_name": None})
    layer = {"module": "keras.layers", "class_name": cls, "config": cfg,
             "registered_name": None, "name": name}
    if inbound is not None:
        layer["inbound_nodes"] = [{"args": [inbound], "kwargs": {}}]
    return layer


def tensor(name, shape):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": shape, "dtype": "float32", "keras_history": [name, 0, 0]}}


GLOROT = {"class_name": "GlorotUniform", "config": {"seed": None}}

SEQ_K2_CNN = {"class_name": "Sequential", "keras_version": "2.11.0", "backend": "tensorflow",
              "config": {"name": "sequential", "layers": [
                  k2("InputLayer", "input_1", batch_input_shape=[None, 12, 12, 3],
                     sparse=False, ragged=False),
                  k2("Conv2D", "conv2d", filters=6, kernel_size=[3, 3], strides=[1, 1],
                     padding="same", data_format="channels_last", dilation_rate=[1, 1],
                     groups=1, activation="relu", use_bias=True, kernel_initializer=GLOROT,
                     bias_initializer={"class_name": "Zeros", "config": {}},
                     kernel_regularizer=None, bias_regularizer=None,
                     activity_regularizer=None, kernel_constraint=None, bias_constraint=None),
                  k2("BatchNormalization", "bn", axis=[3], momentum=0.99, epsilon=0.001,
                     center=True, scale=True),
                  k2("MaxPooling2D", "pool", pool_size=[2, 2], padding="valid",
                     strides=[2, 2], data_format="channels_last"),
                  k2("Conv2D", "conv2d_1", filters=4, kernel_size=[3, 3], strides=[2, 2],
                     padding="valid", data_format="channels_last", dilation_rate=[1, 1],
                     groups=2, activation="linear", use_bias=False),
                  k2("Activation", "act", activation="tanh"),
                  k2("Flatten", "flatten", data_format="channels_last"),
                  k2("Dropout", "dropout", rate=0.25, noise_shape=None, seed=None),
                  k2("Dense", "dense", units=5, activation="softmax", use_bias=True)]}}

K3_FUNCTIONAL = {"module": "keras", "class_name": "Functional", "registered_name": "Functional",
                 "config": {"name": "functional", "trainable": True, "layers": [
                     k3("InputLayer", "input_layer", batch_shape=[None, 8, 8, 2], sparse=False),
                     k3("Conv2D", "c1", [tensor("input_layer", [None, 8, 8, 2])], filters=4,
                        kernel_size=[3, 3], strides=[1, 1], padding="same",
                        data_format="channels_last", dilation_rate=[1, 1], groups=1,
                        activation="relu", use_bias=True, kernel_initializer=GLOROT),
                     k3("Conv2D", "c2", [tensor("c1", [None, 8, 8, 4])], filters=4,
                        kernel_size=[3, 3], strides=[1, 1], padding="same",
                        data_format="channels_last", dilation_rate=[1, 1], groups=1,
                        activation="linear", use_bias=True),
                     k3("Add", "add", [[tensor("c1", [None, 8, 8, 4]),
                                        tensor("c2", [None, 8, 8, 4])]]),
                     k3("ReLU", "relu", [tensor("add", [None, 8, 8, 4])], max_value=None,
                        negative_slope=0.0, threshold=0.0),
                     k3("Concatenate", "cat", [[tensor("relu", [None, 8, 8, 4]),
                                                tensor("c1", [None, 8, 8, 4])]], axis=-1),
                     k3("GlobalMaxPooling2D", "gmp", [tensor("cat", [None, 8, 8, 8])],
                        data_format="channels_last", keepdims=False),
                     k3("Dense", "out", [tensor("gmp", [None, 8])], units=3,
                        activation="softmax", use_bias=True)],
                     "input_layers": [["input_layer", 0, 0]],
                     "output_layers": [["out", 0, 0]]}}

K3_TEXT = {"module": "keras", "class_name": "Sequential", "registered_name": None,
           "config": {"name": "sequential", "trainable": True, "layers": [
               k3("InputLayer", "input_layer", batch_shape=[None, 16], sparse=False),
               k3("Embedding", "embedding", input_dim=256, output_dim=8, mask_zero=True,
                  embeddings_initializer={"module": "keras.initializers",
                                          "class_name": "RandomUniform", "config": {}}),
               k3("Bidirectional", "bidi", merge_mode="concat", layer={
                   "module": "keras.layers", "class_name": "LSTM",
                   "config": {"name": "lstm", "units": 6, "activation": "tanh",
                              "recurrent_activation": "sigmoid", "use_bias": True,
                              "return_sequences": True, "return_state": False,
                              "go_backwards": False, "stateful": False, "unroll": False,
                              "dropout": 0.0, "recurrent_dropout": 0.0,
                              "unit_forget_bias": True, "seed": None}}),
               k3("LayerNormalization", "ln", axis=-1, epsilon=0.001, center=True, scale=True,
                  rms_scaling=False),
               k3("GRU", "gru", units=5, activation="tanh", recurrent_activation="sigmoid",
                  use_bias=True, return_sequences=False, return_state=False,
                  go_backwards=False, stateful=False, reset_after=True, dropout=0.0,
                  recurrent_dropout=0.0, use_cudnn="auto"),
               k3("Dense", "out", units=4, activation="softmax", use_bias=True)]}}


def job(keras, classes, **data):
    d = {"format": "synthetic", "num_classes": classes, "synthetic_train": 64,
         "synthetic_test": 16}
    d.update(data)
    return {"name": "keras", "model": {"keras": keras}, "data": d,
            "training": {"epochs": 1, "batch_size": 16}}


def case_model(engine, tmp, name, spec, rows):
    path = os.path.join(tmp, name + ".json")
    pt.write_json(path, spec)
    p = run([engine, "--validate", path])
    pt.require(p.returncode == 0, "%s: --validate: %s" % (name, p.stderr))
    for row in rows:
        pt.check(row in p.stdout, "%s: no %r in:\n%s" % (name, row, p.stdout))
    p = run([engine, path, "--out", os.path.join(tmp, name), "--threads", "2"])
    pt.check(p.returncode == 0, "%s: training: %s" % (name, p.stderr[-2000:]))


def case_refused(engine, tmp):
    import copy
    path = os.path.join(tmp, "bad.json")
    bad = copy.deepcopy(SEQ_K2_CNN)
    bad["config"]["layers"][1]["config"]["data_format"] = "channels_first"
    pt.write_json(path, job(bad, 5))
    p = run([engine, "--validate", path])
    pt.check(p.returncode == 2 and 'model.keras.config.layers[1]: Conv2D "conv2d": option '
             '"data_format"' in p.stderr, "channels_first: %r" % p.stderr)
    bad = copy.deepcopy(SEQ_K2_CNN)
    bad["config"]["layers"][2] = k2("SpatialDropout2D", "sd", rate=0.1)
    pt.write_json(path, job(bad, 5))
    p = run([engine, "--validate", path])
    pt.check(p.returncode == 2 and 'SpatialDropout2D "sd": layer class SpatialDropout2D is '
             'not supported' in p.stderr, "unknown class: %r" % p.stderr)
    bad = copy.deepcopy(SEQ_K2_CNN)
    bad["config"]["layers"][8]["config"]["frobnicate"] = 1
    pt.write_json(path, job(bad, 5))
    p = run([engine, "--validate", path])
    pt.check(p.returncode == 2 and 'Dense "dense": option "frobnicate" is not supported'
             in p.stderr, "unknown option: %r" % p.stderr)


def cases():
    engine = pt.require_engine()
    tmp = tempfile.mkdtemp(prefix="punch-keras-")
    try:
        pt.case("keras2-sequential-cnn", case_model, engine, tmp, "k2cnn", job(SEQ_K2_CNN, 5),
                ["(3, 12, 12)", "0.conv2d 3x3/1 same relu", "(6, 12, 12)", "(4, 2, 2)",
                 "4.tanh", "7.dense 5 softmax"])
        pt.case("keras3-functional", case_model, engine, tmp, "k3fun", job(K3_FUNCTIONAL, 3),
                ["(2, 8, 8)", "add", "concat", "(8, 8, 8)", "maxpool2d 8x8", "dense 3"])
        pt.case("keras3-text", case_model, engine, tmp, "k3text",
                job(K3_TEXT, 4, max_length=16), ["embedding", "bidirectional", "layer_norm",
                                                 "gru", "dense 4"])
        pt.case("refused", case_refused, engine, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    pt.main(cases)
