/* onnx_layers.c — each spec layer as ONNX nodes (onnx_layers.h). The
 * engine keeps images as (channels, height, width) per sample, ONNX's
 * NCHW, so the weights need no transposing: a dense weight [in, out] is
 * Gemm's B as stored (transB 0), a conv2d weight [filters, channels /
 * groups, kh, kw] is Conv's W. Padding is written out as explicit pads
 * (the engine's resolved ones), never auto_pad, so the geometry is the
 * engine's bit for bit; average pooling leaves padding out of the count
 * as the engine does (count_include_pad 0). */
#include "export/onnx_layers.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "layers/layer.h"

/* An initializer holding tensor t's floats under dims. */
static const char *emit_init(onnx_emit *e, const tensor_entry *t, const int64_t *dims, int rank)
{
    return onnx_graph_floats(e->g, t->name, dims, rank, t->data);
}

static int emit_dense(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    long in = spec_shape_size(&s->in_shape), out = s->units;
    const tensor_entry *w = onnx_emit_tensor(e, i, "weight", in * out, err, errlen);
    const tensor_entry *b = s->use_bias ? onnx_emit_tensor(e, i, "bias", out, err, errlen) : NULL;
    if (!w || (s->use_bias && !b))
        return -1;
    int64_t wd[2] = {in, out}, bd[1] = {out};
    const char *x = onnx_emit_in(e, s, 0);
    if (s->in_shape.rank != 1) {
        Onnx__NodeProto *f = onnx_graph_node(e->g, "Flatten", &x, 1, NULL);
        onnx_node_int(e->g, f, "axis", 1);
        x = onnx_node_out(f);
    }
    const char *ins[3] = {x, emit_init(e, w, wd, 2), b ? emit_init(e, b, bd, 1) : NULL};
    const char *y = onnx_node_out(onnx_graph_node(e->g, "Gemm", ins, b ? 3 : 2, NULL));
    e->values[i] = onnx_emit_activation(e, s->activation, y, &s->out_shape);
    return 0;
}

/* pads [top, left, bottom, right] as the engine resolves them. */
static void emit_pads(const spec_layer *s, int dil_h, int dil_w, int stride_h, int stride_w,
                      int64_t pads[4])
{
    memset(pads, 0, 4 * sizeof *pads);
    if (s->padding != PAD_SAME)
        return;
    pads[0] = s->pad[0];
    pads[1] = s->pad[1];
    pads[2] = layer_pad_after(s->in_shape.dim[1], s->out_shape.dim[1], s->kernel[0], stride_h,
                              dil_h, s->pad[0]);
    pads[3] = layer_pad_after(s->in_shape.dim[2], s->out_shape.dim[2], s->kernel[1], stride_w,
                              dil_w, s->pad[1]);
}

static int emit_conv2d(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    int groups = s->groups > 0 ? s->groups : 1;
    int c = s->in_shape.dim[0], k = s->filters, kh = s->kernel[0], kw = s->kernel[1];
    int sh = s->stride[0] > 0 ? s->stride[0] : 1, sw = s->stride[1] > 0 ? s->stride[1] : 1;
    int dh = s->dilation[0] > 0 ? s->dilation[0] : 1, dw = s->dilation[1] > 0 ? s->dilation[1] : 1;
    long wsize = (long)k * (c / groups) * kh * kw;
    const tensor_entry *w = onnx_emit_tensor(e, i, "weight", wsize, err, errlen);
    const tensor_entry *b = s->use_bias ? onnx_emit_tensor(e, i, "bias", k, err, errlen) : NULL;
    if (!w || (s->use_bias && !b))
        return -1;
    int64_t wd[4] = {k, c / groups, kh, kw}, bd[1] = {k};
    const char *ins[3] = {onnx_emit_in(e, s, 0), emit_init(e, w, wd, 4),
                          b ? emit_init(e, b, bd, 1) : NULL};
    Onnx__NodeProto *n = onnx_graph_node(e->g, "Conv", ins, b ? 3 : 2, NULL);
    int64_t kernel[2] = {kh, kw}, strides[2] = {sh, sw}, dil[2] = {dh, dw}, pads[4];
    emit_pads(s, dh, dw, sh, sw, pads);
    onnx_node_ints(e->g, n, "kernel_shape", kernel, 2);
    onnx_node_ints(e->g, n, "strides", strides, 2);
    onnx_node_ints(e->g, n, "dilations", dil, 2);
    onnx_node_ints(e->g, n, "pads", pads, 4);
    onnx_node_int(e->g, n, "group", groups);
    e->values[i] = onnx_emit_activation(e, s->activation, onnx_node_out(n), &s->out_shape);
    return 0;
}

static int emit_pool(onnx_emit *e, int i)
{
    const spec_layer *s = &e->spec->layers[i];
    bool max = s->type == LAYER_MAXPOOL2D;
    int sh = s->stride[0] > 0 ? s->stride[0] : s->kernel[0];
    int sw = s->stride[1] > 0 ? s->stride[1] : s->kernel[1];
    const char *x = onnx_emit_in(e, s, 0);
    Onnx__NodeProto *n = onnx_graph_node(e->g, max ? "MaxPool" : "AveragePool", &x, 1, NULL);
    int64_t kernel[2] = {s->kernel[0], s->kernel[1]}, strides[2] = {sh, sw}, pads[4];
    emit_pads(s, 1, 1, sh, sw, pads);
    onnx_node_ints(e->g, n, "kernel_shape", kernel, 2);
    onnx_node_ints(e->g, n, "strides", strides, 2);
    onnx_node_ints(e->g, n, "pads", pads, 4);
    if (!max)
        onnx_node_int(e->g, n, "count_include_pad", 0);
    e->values[i] = onnx_node_out(n);
    return 0;
}

static int emit_batchnorm(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    long c = s->in_shape.dim[0];
    static const char *const names[4] = {"gamma", "beta", "running_mean", "running_var"};
    const char *ins[5] = {onnx_emit_in(e, s, 0)};
    int64_t d[1] = {c};
    for (int k = 0; k < 4; k++) {
        const tensor_entry *t = onnx_emit_tensor(e, i, names[k], c, err, errlen);
        if (!t)
            return -1;
        ins[k + 1] = emit_init(e, t, d, 1);
    }
    Onnx__NodeProto *n = onnx_graph_node(e->g, "BatchNormalization", ins, 5, NULL);
    onnx_node_float(e->g, n, "epsilon", s->epsilon > 0.0f ? s->epsilon : 1e-5f);
    e->values[i] = onnx_node_out(n);
    return 0;
}

/* add (a sum of its inputs) and concat (along channels, ONNX's axis 1). */
static int emit_merge(onnx_emit *e, int i)
{
    const spec_layer *s = &e->spec->layers[i];
    const char *ins[SPEC_MAX_INPUTS];
    for (int k = 0; k < s->n_inputs; k++)
        ins[k] = onnx_emit_in(e, s, k);
    if (s->type == LAYER_ADD) {
        e->values[i] = onnx_node_out(onnx_graph_node(e->g, "Sum", ins, s->n_inputs, NULL));
        return 0;
    }
    Onnx__NodeProto *n = onnx_graph_node(e->g, "Concat", ins, s->n_inputs, NULL);
    /* Channels of an image, features of a step or of a flat sample. */
    onnx_node_int(e->g, n, "axis", s->out_shape.rank == 2 ? 2 : 1);
    e->values[i] = onnx_node_out(n);
    return 0;
}

static int emit_layer(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    const char *x = onnx_emit_in(e, s, 0);
    int rc = onnx_emit_seq_layer(e, i, err, errlen);
    if (rc != 1)
        return rc;
    switch (s->type) {
    case LAYER_DENSE:
        return emit_dense(e, i, err, errlen);
    case LAYER_CONV2D:
        return emit_conv2d(e, i, err, errlen);
    case LAYER_MAXPOOL2D:
    case LAYER_AVGPOOL2D:
        return emit_pool(e, i);
    case LAYER_BATCHNORM:
        return emit_batchnorm(e, i, err, errlen);
    case LAYER_DROPOUT:
        /* Inference: dropout is the identity. */
        e->values[i] = x;
        return 0;
    case LAYER_FLATTEN: {
        Onnx__NodeProto *n = onnx_graph_node(e->g, "Flatten", &x, 1, NULL);
        onnx_node_int(e->g, n, "axis", 1);
        e->values[i] = onnx_node_out(n);
        return 0;
    }
    case LAYER_SOFTMAX:
        /* A softmax layer is over the sample's flattened features, on a
         * sequence too (activation.c). */
        e->values[i] = onnx_emit_softmax(e, x, &s->out_shape);
        return 0;
    case LAYER_RELU:
    case LAYER_SIGMOID:
    case LAYER_TANH:
        e->values[i] = onnx_emit_activation(e, layer_final_activation(s), x, &s->out_shape);
        return 0;
    case LAYER_ADD:
    case LAYER_CONCAT:
        return emit_merge(e, i);
    default:
        break;
    }
    snprintf(err, errlen, "model.layers[%d]: ONNX export does not support %s layers yet", i,
             spec_layer_type_name(s->type));
    return -1;
}

int onnx_emit_layer(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    if (e->lens) {
        int src = s->inputs[0];
        e->lens[i] = src < 0 ? e->in_len : e->lens[src];
        e->masks[i] = src < 0 ? e->in_mask : e->masks[src];
    }
    if (emit_layer(e, i, err, errlen) != 0)
        return -1;
    /* The engine zeroes every sequence's padding steps after each layer. */
    if (e->lens && s->out_shape.rank == 2 && s->type != LAYER_DROPOUT)
        e->values[i] = onnx_emit_binary(e, "Mul", e->values[i], e->masks[i]);
    return 0;
}
