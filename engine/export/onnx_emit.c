/* onnx_emit.c — the exporter's building blocks shared by the layer
 * emitters (onnx_layers.c, onnx_seq.c): a layer's inputs and weights,
 * constants, one-operator nodes and the activations. They call nothing
 * above them, so the layer files depend on this one and not on each
 * other's helpers. */
#include "export/onnx_emit.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>


const char *onnx_emit_in(const onnx_emit *e, const spec_layer *s, int k)
{
    int src = s->inputs[k];
    return src < 0 ? e->input : e->values[src];
}

/* The weights-file tensor INDEX.TYPE.PARAM with `count` floats, or NULL
 * with a message. */
const tensor_entry *onnx_emit_tensor(const onnx_emit *e, int i, const char *param, long count,
                                     char *err, size_t errlen)
{
    char key[96];
    snprintf(key, sizeof key, "%d.%s.%s", i, spec_layer_type_name(e->spec->layers[i].type),
             param);
    for (int k = 0; k < e->n_tensors; k++) {
        if (strcmp(e->tensors[k].name, key) != 0)
            continue;
        if (tensor_entry_size(&e->tensors[k]) != count) {
            snprintf(err, errlen, "weights: %s has %ld values, the layer needs %ld", key,
                     tensor_entry_size(&e->tensors[k]), count);
            return NULL;
        }
        return &e->tensors[k];
    }
    snprintf(err, errlen, "weights: no tensor %s", key);
    return NULL;
}

const char *onnx_emit_unary(onnx_emit *e, const char *op, const char *x)
{
    return onnx_node_out(onnx_graph_node(e->g, op, &x, 1, NULL));
}

/* Softmax over a sample's flattened features, as the engine computes it
 * (activation.c), reshaped back to the sample's shape. */
const char *onnx_emit_softmax(onnx_emit *e, const char *x, const spec_shape *s)
{
    if (s->rank == 1) {
        Onnx__NodeProto *n = onnx_graph_node(e->g, "Softmax", &x, 1, NULL);
        onnx_node_int(e->g, n, "axis", 1);
        return onnx_node_out(n);
    }
    Onnx__NodeProto *f = onnx_graph_node(e->g, "Flatten", &x, 1, NULL);
    onnx_node_int(e->g, f, "axis", 1);
    const char *flat = onnx_node_out(f);
    Onnx__NodeProto *n = onnx_graph_node(e->g, "Softmax", &flat, 1, NULL);
    onnx_node_int(e->g, n, "axis", 1);
    int64_t shape[4] = {-1, 0, 0, 0};
    for (int r = 0; r < s->rank; r++)
        shape[r + 1] = s->dim[r];
    int64_t len = s->rank + 1;
    const char *in[2] = {onnx_node_out(n),
                         onnx_graph_int64s(e->g, onnx_graph_name(e->g, "shape"), &len, 1, shape)};
    return onnx_node_out(onnx_graph_node(e->g, "Reshape", in, 2, NULL));
}

/* An int64 constant [n]. */
const char *onnx_emit_int64s(onnx_emit *e, const int64_t *v, int n)
{
    int64_t len = n;
    return onnx_graph_int64s(e->g, onnx_graph_name(e->g, "ints"), &len, 1, v);
}

/* A float constant of shape [1] (broadcast by the arithmetic operators). */
const char *onnx_emit_scalar(onnx_emit *e, const char *stem, float v)
{
    const int64_t one = 1;
    return onnx_graph_floats(e->g, onnx_graph_name(e->g, stem), &one, 1, &v);
}

const char *onnx_emit_binary(onnx_emit *e, const char *op, const char *a, const char *b)
{
    const char *in[2] = {a, b};
    return onnx_node_out(onnx_graph_node(e->g, op, in, 2, NULL));
}

/* GELU from opset-17 operators (Gelu itself is opset 20): exact,
 * x * 0.5 * (1 + erf(x / sqrt 2)); GPT-2's tanh form,
 * x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), as activation.c. */
static const char *emit_gelu(onnx_emit *e, const char *x, bool exact)
{
    const char *inner;
    if (exact) {
        inner = onnx_emit_unary(e, "Erf", onnx_emit_binary(e, "Mul", x, onnx_emit_scalar(e, "rsqrt2",
                                                                           0.70710678f)));
    } else {
        const char *x3 = onnx_emit_binary(e, "Mul", onnx_emit_binary(e, "Mul", x, x), x);
        const char *poly = onnx_emit_binary(e, "Add", x, onnx_emit_binary(e, "Mul", x3,
                                                                onnx_emit_scalar(e, "gelu_c",
                                                                            0.044715f)));
        inner = onnx_emit_unary(e, "Tanh", onnx_emit_binary(e, "Mul", poly,
                                                  onnx_emit_scalar(e, "sqrt2_pi", 0.79788456f)));
    }
    const char *half = onnx_emit_binary(e, "Mul", onnx_emit_binary(e, "Add", inner,
                                                         onnx_emit_scalar(e, "one", 1.0f)),
                                   onnx_emit_scalar(e, "half", 0.5f));
    return onnx_emit_binary(e, "Mul", x, half);
}

const char *onnx_emit_activation(onnx_emit *e, spec_activation act, const char *x,
                                 const spec_shape *s)
{
    switch (act) {
    case ACT_RELU:
        return onnx_emit_unary(e, "Relu", x);
    case ACT_SIGMOID:
        return onnx_emit_unary(e, "Sigmoid", x);
    case ACT_TANH:
        return onnx_emit_unary(e, "Tanh", x);
    case ACT_SOFTMAX:
        if (s->rank == 2) {
            /* A fused softmax on a sequence is per step (dense, the loss). */
            Onnx__NodeProto *n = onnx_graph_node(e->g, "Softmax", &x, 1, NULL);
            onnx_node_int(e->g, n, "axis", -1);
            return onnx_node_out(n);
        }
        return onnx_emit_softmax(e, x, s);
    case ACT_GELU:
        return emit_gelu(e, x, false);
    case ACT_GELU_EXACT:
        return emit_gelu(e, x, true);
    case ACT_NONE:
        break;
    }
    return x;
}
