/* onnx_seq.c — the sequence layers as ONNX nodes (onnx_layers.h). A batch
 * is [N, T, F] as in the engine; each sample's real length travels beside
 * the values as float [N] and its padding mask [N, T, 1], and onnx_layers.c
 * multiplies every sequence a layer makes by that mask, because the engine
 * keeps zeros at padding in every activation (docs/sequences.md) and a
 * later conv1d window or pool would read them. The recurrent layers are
 * ONNX LSTM/GRU given the lengths as sequence_lens, so the state stops at
 * each sample's last real step as the engine's does; their weights are
 * reordered from Keras's layout (kernel [F, G], gates i, f, c, o) to
 * ONNX's (W [dirs, G, F], gates i, o, f, c; GRU's z, r, h are the same in
 * both). Only what maps exactly is emitted: a strided conv1d (its "same"
 * padding depends on each sample's length), the 1-d window pools, a
 * go_backwards layer returning sequences and the attention layers are
 * refused naming the layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/onnx_layers.h"

static const char *seq_transpose(onnx_emit *e, const char *x, const int64_t *perm, int rank)
{
    Onnx__NodeProto *n = onnx_graph_node(e->g, "Transpose", &x, 1, NULL);
    onnx_node_ints(e->g, n, "perm", perm, rank);
    return onnx_node_out(n);
}

static const char *seq_reshape(onnx_emit *e, const char *x, const int64_t *shape, int rank)
{
    const char *in[2] = {x, onnx_emit_int64s(e, shape, rank)};
    return onnx_node_out(onnx_graph_node(e->g, "Reshape", in, 2, NULL));
}

static const char *seq_cast(onnx_emit *e, const char *x, int64_t to)
{
    Onnx__NodeProto *n = onnx_graph_node(e->g, "Cast", &x, 1, NULL);
    onnx_node_int(e->g, n, "to", to);
    return onnx_node_out(n);
}

static const char *seq_unsqueeze(onnx_emit *e, const char *x, int64_t axis)
{
    const char *in[2] = {x, onnx_emit_int64s(e, &axis, 1)};
    return onnx_node_out(onnx_graph_node(e->g, "Unsqueeze", in, 2, NULL));
}

/* A reduction over one axis without keeping it: ReduceSum takes its axes
 * as an input from opset 13, the others as an attribute until opset 18. */
static const char *seq_reduce(onnx_emit *e, const char *op, const char *x, int64_t axis)
{
    Onnx__NodeProto *n;
    if (strcmp(op, "ReduceSum") == 0) {
        const char *in[2] = {x, onnx_emit_int64s(e, &axis, 1)};
        n = onnx_graph_node(e->g, op, in, 2, NULL);
    } else {
        n = onnx_graph_node(e->g, op, &x, 1, NULL);
        onnx_node_ints(e->g, n, "axes", &axis, 1);
    }
    onnx_node_int(e->g, n, "keepdims", 0);
    return onnx_node_out(n);
}

/* A float constant [count] 0, 1, ..., count - 1 plus `from`. */
static const char *seq_steps(onnx_emit *e, int count, float from)
{
    float *v = malloc((size_t)count * sizeof *v);
    if (!v) {
        e->g->failed = true;
        return "";
    }
    for (int t = 0; t < count; t++)
        v[t] = (float)t + from;
    int64_t d = count;
    const char *name = onnx_graph_floats(e->g, onnx_graph_name(e->g, "steps"), &d, 1, v);
    free(v);
    return name;
}

const char *onnx_emit_mask(onnx_emit *e, const char *len, int steps)
{
    /* step t is real when t < len: [T] < [N, 1] broadcasts to [N, T]. */
    const char *real = onnx_emit_binary(e, "Less", seq_steps(e, steps, 0.0f),
                                        seq_unsqueeze(e, len, 1));
    return seq_unsqueeze(e, seq_cast(e, real, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT), 2);
}

void onnx_emit_seq_input(onnx_emit *e, const char *x, bool tokens, int steps)
{
    const char *nonzero;
    if (tokens) {
        const int64_t zero = 0, one = 1;
        const char *z = onnx_graph_int64s(e->g, onnx_graph_name(e->g, "zero"), &one, 1, &zero);
        nonzero = onnx_emit_unary(e, "Not", onnx_emit_binary(e, "Equal", x, z));
    } else {
        nonzero = onnx_emit_binary(e, "Greater",
                                   seq_reduce(e, "ReduceMax", onnx_emit_unary(e, "Abs", x), 2),
                                   onnx_emit_scalar(e, "zero", 0.0f));
    }
    /* The length is the largest (t + 1) over the non-zero steps, at least 1. */
    const char *at = onnx_emit_binary(e, "Mul",
                                      seq_cast(e, nonzero, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT),
                                      seq_steps(e, steps, 1.0f));
    e->in_len = onnx_emit_binary(e, "Max", seq_reduce(e, "ReduceMax", at, 1),
                                 onnx_emit_scalar(e, "one", 1.0f));
    e->in_mask = onnx_emit_mask(e, e->in_len, steps);
}

/* The initializer of a weights-file tensor as stored, under dims. */
static const char *seq_init(onnx_emit *e, const tensor_entry *t, const int64_t *dims, int rank)
{
    return onnx_graph_floats(e->g, t->name, dims, rank, t->data);
}

static int seq_embedding(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    long v = s->input_dim, d = s->output_dim;
    const tensor_entry *t = onnx_emit_tensor(e, i, "embeddings", v * d, err, errlen);
    if (!t)
        return -1;
    int64_t dims[2] = {v, d};
    const char *in[2] = {seq_init(e, t, dims, 2), onnx_emit_in(e, s, 0)};
    e->values[i] = onnx_node_out(onnx_graph_node(e->g, "Gather", in, 2, NULL));
    return 0;
}

/* dense on a sequence: the same weights at every step. */
static int seq_dense(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    long in = s->in_shape.dim[1], out = s->units;
    if (s->tied) {
        snprintf(err, errlen, "model.layers[%d]: ONNX export does not support tie_embedding "
                 "yet", i);
        return -1;
    }
    const tensor_entry *w = onnx_emit_tensor(e, i, "weight", in * out, err, errlen);
    const tensor_entry *b = s->use_bias ? onnx_emit_tensor(e, i, "bias", out, err, errlen) : NULL;
    if (!w || (s->use_bias && !b))
        return -1;
    int64_t wd[2] = {in, out}, bd[1] = {out};
    const char *y = onnx_emit_binary(e, "MatMul", onnx_emit_in(e, s, 0), seq_init(e, w, wd, 2));
    if (b)
        y = onnx_emit_binary(e, "Add", y, seq_init(e, b, bd, 1));
    e->values[i] = onnx_emit_activation(e, s->activation, y, &s->out_shape);
    return 0;
}

/* ONNX's gate block for each of its gates, in Keras's order. */
static int seq_gate_source(bool lstm, int onnx_gate)
{
    static const int lstm_src[4] = {0, 3, 1, 2}; /* i, o, f, c from i, f, c, o */
    return lstm ? lstm_src[onnx_gate] : onnx_gate;
}

/* Keras's kernel [rows, G] as ONNX's [G, rows] with the gates reordered,
 * into dst (one direction's block). */
static void seq_gates_transposed(const float *src, long rows, long units, bool lstm, float *dst)
{
    int gates = lstm ? 4 : 3;
    long g_all = gates * units;
    for (int g = 0; g < gates; g++) {
        long from = seq_gate_source(lstm, g) * units;
        for (long u = 0; u < units; u++)
            for (long r = 0; r < rows; r++)
                dst[(g * units + u) * rows + r] = src[r * g_all + from + u];
    }
}

/* ONNX's bias [2G] (input then recurrent) from Keras's [G] or GRU
 * reset_after's [2, G], gates reordered. */
static void seq_gates_bias(const float *src, long units, bool lstm, bool two, float *dst)
{
    int gates = lstm ? 4 : 3;
    long g_all = gates * units;
    memset(dst, 0, (size_t)(2 * g_all) * sizeof *dst);
    for (int half = 0; half < (two ? 2 : 1); half++)
        for (int g = 0; g < gates; g++)
            memcpy(dst + half * g_all + g * units,
                   src + half * g_all + seq_gate_source(lstm, g) * units,
                   (size_t)units * sizeof *dst);
}

typedef struct seq_rnn {
    bool lstm, reset_after;
    long f, units;             /* input features (V on token ids), units */
    int dirs;
    const tensor_entry *k[2], *r[2], *b[2];
} seq_rnn;

static int seq_rnn_tensors(onnx_emit *e, int i, seq_rnn *q, char *err, size_t errlen)
{
    static const char *const one[3] = {"kernel", "recurrent_kernel", "bias"};
    static const char *const two[2][3] = {
        {"forward_kernel", "forward_recurrent_kernel", "forward_bias"},
        {"backward_kernel", "backward_recurrent_kernel", "backward_bias"}};
    long g = (q->lstm ? 4 : 3) * q->units;
    for (int d = 0; d < q->dirs; d++) {
        const char *const *n = q->dirs == 2 ? two[d] : one;
        q->k[d] = onnx_emit_tensor(e, i, n[0], q->f * g, err, errlen);
        q->r[d] = q->k[d] ? onnx_emit_tensor(e, i, n[1], q->units * g, err, errlen) : NULL;
        q->b[d] = q->r[d] ? onnx_emit_tensor(e, i, n[2], (q->reset_after ? 2 : 1) * g, err,
                                             errlen)
                          : NULL;
        if (!q->b[d])
            return -1;
    }
    return 0;
}

/* W, R and B initializers of the ONNX node, both directions stacked. */
static int seq_rnn_weights(onnx_emit *e, const seq_rnn *q, const char *names[3])
{
    long g = (q->lstm ? 4 : 3) * q->units;
    long nw = q->f * g, nr = q->units * g, nb = 2 * g;
    float *buf = malloc((size_t)(q->dirs * (nw + nr + nb)) * sizeof *buf);
    if (!buf) {
        e->g->failed = true;
        return -1;
    }
    float *w = buf, *r = w + q->dirs * nw, *b = r + q->dirs * nr;
    for (int d = 0; d < q->dirs; d++) {
        seq_gates_transposed(q->k[d]->data, q->f, q->units, q->lstm, w + d * nw);
        seq_gates_transposed(q->r[d]->data, q->units, q->units, q->lstm, r + d * nr);
        seq_gates_bias(q->b[d]->data, q->units, q->lstm, q->reset_after, b + d * nb);
    }
    int64_t wd[3] = {q->dirs, g, q->f}, rd[3] = {q->dirs, g, q->units}, bd[2] = {q->dirs, nb};
    names[0] = onnx_graph_floats(e->g, onnx_graph_name(e->g, "W"), wd, 3, w);
    names[1] = onnx_graph_floats(e->g, onnx_graph_name(e->g, "R"), rd, 3, r);
    names[2] = onnx_graph_floats(e->g, onnx_graph_name(e->g, "B"), bd, 2, b);
    free(buf);
    return 0;
}

/* The directions' outputs [.., dirs, U] merged as merge_mode says (the
 * forward half first when concatenated), over axis `axis`. */
static const char *seq_merge(onnx_emit *e, const spec_layer *s, const char *y, int dirs,
                             int axis, const int64_t *concat_shape, int rank)
{
    if (dirs == 1 || s->merge_mode == MERGE_CONCAT)
        return seq_reshape(e, y, concat_shape, rank);
    switch (s->merge_mode) {
    case MERGE_SUM:
        return seq_reduce(e, "ReduceSum", y, axis);
    case MERGE_AVE:
        return seq_reduce(e, "ReduceMean", y, axis);
    default:
        return seq_reduce(e, "ReduceProd", y, axis);
    }
}

static int seq_rnn_layer(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    spec_layer_type cell = s->type == LAYER_BIDIRECTIONAL ? s->rnn : s->type;
    seq_rnn q = {.lstm = cell == LAYER_LSTM, .reset_after = cell == LAYER_GRU && s->reset_after,
                 .f = s->token_vocab > 0 ? s->token_vocab : s->in_shape.dim[1],
                 .units = s->units, .dirs = s->type == LAYER_BIDIRECTIONAL ? 2 : 1};
    if (s->go_backwards && s->return_sequences && q.dirs == 1) {
        snprintf(err, errlen, "model.layers[%d]: ONNX export does not support a go_backwards "
                 "%s returning sequences yet", i, spec_layer_type_name(s->type));
        return -1;
    }
    const char *names[3];
    if (seq_rnn_tensors(e, i, &q, err, errlen) != 0 || seq_rnn_weights(e, &q, names) != 0)
        return -1;
    const char *x = onnx_emit_in(e, s, 0);
    if (s->token_vocab > 0) {
        /* The ids as the one-hot rows the engine reads them as. */
        const int64_t depth = s->token_vocab;
        const float off_on[2] = {0.0f, 1.0f};
        int64_t two = 2, one = 1;
        const char *in[3] = {x, onnx_graph_int64s(e->g, onnx_graph_name(e->g, "depth"), &one, 1,
                                                  &depth),
                             onnx_graph_floats(e->g, onnx_graph_name(e->g, "onehot"), &two, 1,
                                               off_on)};
        x = onnx_node_out(onnx_graph_node(e->g, "OneHot", in, 3, NULL));
    }
    const int64_t tnf[3] = {1, 0, 2};
    const char *lens = e->lens[i] ? e->lens[i] : e->in_len;
    const char *ins[5] = {seq_transpose(e, x, tnf, 3), names[0], names[1], names[2],
                          seq_cast(e, lens, ONNX__TENSOR_PROTO__DATA_TYPE__INT32)};
    Onnx__NodeProto *n = onnx_graph_node(e->g, q.lstm ? "LSTM" : "GRU", ins, 5, NULL);
    const char *y_h = onnx_node_add_output(e->g, n);
    onnx_node_int(e->g, n, "hidden_size", s->units);
    onnx_node_string(e->g, n, "direction", q.dirs == 2 ? "bidirectional"
                                           : s->go_backwards ? "reverse" : "forward");
    if (!q.lstm)
        onnx_node_int(e->g, n, "linear_before_reset", q.reset_after ? 1 : 0);
    if (s->return_sequences) {
        /* Y [T, dirs, N, U] -> [N, T, dirs, U] -> merged. */
        const int64_t perm[4] = {2, 0, 1, 3}, shape[3] = {0, 0, q.dirs * q.units};
        e->values[i] = seq_merge(e, s, seq_transpose(e, onnx_node_out(n), perm, 4), q.dirs, 2,
                                 shape, 3);
    } else {
        /* Y_h [dirs, N, U]: each direction's state after its last step. */
        const int64_t perm[3] = {1, 0, 2}, shape[2] = {0, q.dirs * q.units};
        e->values[i] = seq_merge(e, s, seq_transpose(e, y_h, perm, 3), q.dirs, 1, shape, 2);
    }
    return 0;
}

static int seq_conv1d(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    int stride = s->stride[0] > 0 ? s->stride[0] : 1, dil = s->dilation[0] > 0 ? s->dilation[0] : 1;
    if (stride != 1) {
        snprintf(err, errlen, "model.layers[%d]: ONNX export does not support a strided conv1d "
                 "yet (its padding depends on each sample's length)", i);
        return -1;
    }
    long k = s->kernel[0], c = s->in_shape.dim[1], f = s->filters;
    const tensor_entry *w = onnx_emit_tensor(e, i, "kernel", k * c * f, err, errlen);
    const tensor_entry *b = s->use_bias ? onnx_emit_tensor(e, i, "bias", f, err, errlen) : NULL;
    if (!w || (s->use_bias && !b))
        return -1;
    float *wt = malloc((size_t)(k * c * f) * sizeof *wt);
    if (!wt) {
        e->g->failed = true;
        return -1;
    }
    for (long o = 0; o < f; o++) /* [K, C, filters] -> [filters, C, K] */
        for (long ch = 0; ch < c; ch++)
            for (long t = 0; t < k; t++)
                wt[(o * c + ch) * k + t] = w->data[(t * c + ch) * f + o];
    int64_t wd[3] = {f, c, k}, bd[1] = {f};
    const int64_t ntc[3] = {0, 2, 1};
    const char *ins[3] = {seq_transpose(e, onnx_emit_in(e, s, 0), ntc, 3),
                          onnx_graph_floats(e->g, w->name, wd, 3, wt),
                          b ? seq_init(e, b, bd, 1) : NULL};
    free(wt);
    Onnx__NodeProto *n = onnx_graph_node(e->g, "Conv", ins, b ? 3 : 2, NULL);
    int span = (int)(k - 1) * dil + 1, t_in = s->in_shape.dim[0], t_out = s->out_shape.dim[0];
    int64_t pads[2] = {0, 0}, kernel = k, one = 1, dl = dil;
    if (s->padding != PAD_VALID) {
        pads[0] = s->pad[0];
        pads[1] = (t_out - 1) + span - t_in - pads[0];
    }
    onnx_node_ints(e->g, n, "kernel_shape", &kernel, 1);
    onnx_node_ints(e->g, n, "strides", &one, 1);
    onnx_node_ints(e->g, n, "dilations", &dl, 1);
    onnx_node_ints(e->g, n, "pads", pads, 2);
    const char *y = seq_transpose(e, onnx_node_out(n), ntc, 3);
    e->values[i] = onnx_emit_activation(e, s->activation, y, &s->out_shape);
    if (s->padding == PAD_VALID && span > 1) {
        /* Whole windows only: a sample of L steps has max(L - span + 1, 1). */
        const char *len = e->lens[i];
        len = onnx_emit_binary(e, "Max", onnx_emit_binary(e, "Sub", len,
                                                          onnx_emit_scalar(e, "span",
                                                                           (float)(span - 1))),
                               onnx_emit_scalar(e, "one", 1.0f));
        e->lens[i] = len;
        e->masks[i] = onnx_emit_mask(e, len, t_out);
    }
    return 0;
}

/* global_maxpool1d, global_avgpool1d: over each sample's real steps. */
static int seq_global_pool(onnx_emit *e, int i)
{
    const spec_layer *s = &e->spec->layers[i];
    const char *x = onnx_emit_in(e, s, 0), *mask = e->masks[i];
    if (s->type == LAYER_GLOBAL_MAXPOOL1D) {
        const char *in[3] = {onnx_emit_binary(e, "Greater", mask,
                                              onnx_emit_scalar(e, "zero", 0.0f)),
                             x, onnx_emit_scalar(e, "lowest", -3.4028235e38f)};
        x = onnx_node_out(onnx_graph_node(e->g, "Where", in, 3, NULL));
        e->values[i] = seq_reduce(e, "ReduceMax", x, 1);
        return 0;
    }
    e->values[i] = onnx_emit_binary(e, "Div", seq_reduce(e, "ReduceSum", x, 1),
                                    seq_unsqueeze(e, e->lens[i], 1));
    return 0;
}

static int seq_layer_norm(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    long f = s->in_shape.dim[s->in_shape.rank - 1];
    const tensor_entry *g = onnx_emit_tensor(e, i, "gamma", f, err, errlen);
    const tensor_entry *b = g ? onnx_emit_tensor(e, i, "beta", f, err, errlen) : NULL;
    if (!b)
        return -1;
    int64_t d = f;
    const char *in[3] = {onnx_emit_in(e, s, 0), seq_init(e, g, &d, 1), seq_init(e, b, &d, 1)};
    Onnx__NodeProto *n = onnx_graph_node(e->g, "LayerNormalization", in, 3, NULL);
    onnx_node_int(e->g, n, "axis", -1);
    onnx_node_float(e->g, n, "epsilon", s->epsilon > 0.0f ? s->epsilon : 1e-5f);
    e->values[i] = onnx_node_out(n);
    return 0;
}

/* The table's first T rows added to every sample (masked after). */
static int seq_positional(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    long t = s->in_shape.dim[0], f = s->in_shape.dim[1];
    const tensor_entry *p = onnx_emit_tensor(e, i, "embeddings", (long)s->max_length * f, err,
                                             errlen);
    if (!p)
        return -1;
    int64_t d[2] = {t, f};
    const char *rows = onnx_graph_floats(e->g, p->name, d, 2, p->data);
    e->values[i] = onnx_emit_binary(e, "Add", onnx_emit_in(e, s, 0), rows);
    return 0;
}

int onnx_emit_seq_layer(onnx_emit *e, int i, char *err, size_t errlen)
{
    const spec_layer *s = &e->spec->layers[i];
    switch (s->type) {
    case LAYER_EMBEDDING:
        return seq_embedding(e, i, err, errlen);
    case LAYER_LSTM:
    case LAYER_GRU:
    case LAYER_BIDIRECTIONAL:
        return seq_rnn_layer(e, i, err, errlen);
    case LAYER_CONV1D:
        return seq_conv1d(e, i, err, errlen);
    case LAYER_GLOBAL_MAXPOOL1D:
    case LAYER_GLOBAL_AVGPOOL1D:
        return seq_global_pool(e, i);
    case LAYER_LAYER_NORM:
        return seq_layer_norm(e, i, err, errlen);
    case LAYER_POSITIONAL_EMBEDDING:
        return seq_positional(e, i, err, errlen);
    case LAYER_DENSE:
        if (s->in_shape.rank == 2 && e->lens)
            return seq_dense(e, i, err, errlen);
        return 1;
    default:
        return 1;
    }
}
