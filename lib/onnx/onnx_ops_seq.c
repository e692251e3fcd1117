/* onnx_ops_seq.c — sequence classifiers as torch.onnx.export writes them
 * (docs/interchange.md): Gather from a table on the token ids (an
 * embedding), the Transpose to time-major before ONNX's LSTM/GRU (forward
 * or bidirectional; the zero initial state PyTorch builds from the
 * input's Shape), and the last step taken after it (Y_h[-1], out[:, -1]
 * through Squeeze and Transpose, or Y_h's two directions concatenated):
 * the engine's lstm/gru/bidirectional with return_sequences false. Their
 * values are tracked by kind (onnx_import_internal.h), so any other use of
 * them is refused naming the node. The weights are reordered from ONNX's
 * layout (W [dirs, G, F], gates i, o, f, c; GRU z, r, h) to the engine's
 * (kernel [F, G], gates i, f, c, o; GRU z, r, h), the inverse of
 * engine/export/onnx_seq.c. */
#include "onnx/onnx_ops.h"

#include <stdio.h>
#include <string.h>

/* Bind output k of the node as a value of the given kind. */
static int seq_bind(imp *im, int k, imp_kind kind, int layer, int rank, const long *dim,
                    int dirs, int dir)
{
    if (k >= (int)im->node->n_output || !im->node->output[k][0])
        return 0;
    if (imp_bind_name(im, im->node->output[k], layer, rank, dim) != 0)
        return -1;
    imp_value *v = &im->v[im->nv - 1];
    v->kind = kind;
    v->dirs = dirs;
    v->dir = dir;
    return 0;
}

/* The node's input k, whatever it holds (NULL with the error set). */
static imp_value *seq_value(imp *im, int k)
{
    if (k >= (int)im->node->n_input || !im->node->input[k][0]) {
        imp_fail(im, "input %d is missing", k);
        return NULL;
    }
    imp_value *v = imp_find(im, im->node->input[k]);
    if (!v)
        imp_fail(im, "input \"%.80s\" is not computed before it", im->node->input[k]);
    return v;
}

static bool seq_has_input(const imp *im, int k)
{
    return k < (int)im->node->n_input && im->node->input[k][0];
}

/* A constant scalar index (a Gather's, on the axis it picks from). */
static bool seq_scalar_index(imp *im, int k, int64_t *out)
{
    imp_value *v = imp_find(im, im->node->input[k]);
    return v && v->layer == IMP_CONST && v->init->n_dims == 0 &&
           imp_const_count(v->init) == 1 && imp_const_i64(v->init, 0, out);
}

/* Squeeze's axes: input 1 from opset 13, the attribute before. */
static int seq_squeeze_axis(imp *im, int64_t *axis)
{
    int64_t axes[2];
    int n = imp_attr_ints(im, "axes", axes, 2);
    if (seq_has_input(im, 1)) {
        imp_value *a = imp_find(im, im->node->input[1]);
        n = a && a->layer == IMP_CONST && imp_const_count(a->init) == 1 &&
                    imp_const_i64(a->init, 0, &axes[0]) ? 1 : 0;
    }
    if (n != 1)
        return imp_fail(im, "only a squeeze of one constant axis is supported");
    *axis = axes[0];
    return 0;
}

/* Gather(table [V, D], token ids): an embedding; the model's input becomes
 * {"tokens": V}. */
static int seq_embedding(imp *im, const imp_value *ids)
{
    const Onnx__TensorProto *w = imp_const(im, 0);
    if (!w)
        return -1;
    if (imp_attr_int(im, "axis", 0) != 0 || w->n_dims != 2 || w->dims[0] < 2 ||
        w->dims[0] > 16777216 || w->dims[1] < 1 || w->dims[1] > (1 << 20))
        return imp_fail(im, "only rows of a constant table [V, D] (V in 2..2^24) gathered on "
                        "the token ids (an embedding) are supported");
    long v = (long)w->dims[0], d = (long)w->dims[1];
    json_t *input = json_object_get(im->model, "input");
    json_int_t have = json_integer_value(json_object_get(input, "tokens"));
    if (have && have != v)
        return imp_fail(im, "a second embedding table has %ld rows, the first %lld", v,
                        (long long)have);
    if (json_object_set_new(im->model, "input", json_pack("{s:I}", "tokens", (json_int_t)v)))
        return imp_fail(im, "out of memory");
    imp_value x = *ids;
    const imp_value *in[1] = {&x};
    int l = imp_add_layer(im, json_pack("{s:s,s:I,s:I}", "type", "embedding", "output_dim",
                                        (json_int_t)d, "input_dim", (json_int_t)v), in, 1);
    long wd[2] = {v, d}, od[2] = {x.dim[0], d};
    if (l < 0 || imp_weight(im, l, "embedding", "embeddings", w, 2, wd, false) != 0)
        return -1;
    return seq_bind(im, 0, IMP_SEQ, l, 2, od, 0, 0);
}

/* The engine's recurrent layer gives either its last step or every step
 * (return_sequences, on a bidirectional's inner layer): the first use of
 * the layer's output decides, and a graph that reads both is refused. */
static int seq_mode(imp *im, int layer, bool all)
{
    json_t *l = json_array_get(im->layers, (size_t)layer);
    json_t *inner = json_object_get(l, "layer");
    json_t *cell = inner ? inner : l;
    json_t *have = json_object_get(cell, "return_sequences");
    if (have && json_is_true(have) != all)
        return imp_fail(im, "layer %d's last step and its whole sequence are both used; the "
                        "engine's LSTM/GRU gives one of them", layer);
    if (json_object_set_new(cell, "return_sequences", json_boolean(all)) != 0)
        return imp_fail(im, "out of memory");
    return 0;
}

/* The last step of a recurrent layer (return_sequences false): [N, U]. */
static int seq_last(imp *im, const imp_value *y)
{
    imp_value v = *y;
    if (v.dirs != 1)
        return imp_fail(im, "only the last step of a one-direction layer is supported here (a "
                        "bidirectional one: concatenate Y_h's two directions)");
    if (seq_mode(im, v.layer, false) != 0)
        return -1;
    long d[1] = {v.dim[v.rank - 1]};
    return seq_bind(im, 0, IMP_PLAIN, v.layer, 1, d, 0, 0);
}

/* A sequence [N, T, F] read whole: an embedding's output, or a recurrent
 * layer's Y batch first (the layer then returns every step). NULL with
 * the error set for anything else. */
static imp_value *seq_whole(imp *im, const char *what)
{
    imp_value *x = seq_value(im, 0);
    if (!x)
        return NULL;
    if (x->kind != IMP_SEQ && x->kind != IMP_RNN_Y_NTU) {
        imp_fail(im, "only %s of a sequence [N, T, F] (an embedding's or a recurrent layer's "
                 "output, batch first) is supported, not of %s", what, imp_kind_name(x->kind));
        return NULL;
    }
    return x->kind == IMP_RNN_Y_NTU && seq_mode(im, x->layer, true) != 0 ? NULL : x;
}

int imp_op_gather(imp *im)
{
    static const char *const known[] = {"axis", NULL};
    if (imp_attrs_known(im, known) != 0)
        return -1;
    imp_value *data = seq_value(im, 0), *idx = data ? seq_value(im, 1) : NULL;
    if (!idx)
        return -1;
    if (idx->kind == IMP_TOKENS)
        return seq_embedding(im, idx);
    imp_value x = *data;
    if (x.kind == IMP_SHAPE)
        return seq_bind(im, 0, IMP_SHAPE, IMP_DERIVED, 0, NULL, 0, 0);
    int64_t axis = imp_attr_int(im, "axis", 0), i = 0;
    if (!seq_scalar_index(im, 1, &i))
        return imp_fail(im, "only a constant scalar index is supported on %s",
                        imp_kind_name(x.kind));
    long steps = x.dim[0];
    bool last_step = i == -1 || (steps > 0 && i == steps - 1);
    switch (x.kind) {
    case IMP_RNN_H: /* Y_h [layers x dirs, N, U]: only the last layer's entries */
        if (axis != 0 || i < -(x.hbase + x.dirs) || i >= x.hbase + x.dirs)
            break;
        i = (i < 0 ? i + x.hbase + x.dirs : i) - x.hbase;
        if (i < 0)
            return imp_fail(im, "only the last layer's entries of a stacked h_n are supported "
                            "(the engine's lower layers return every step)");
        if (x.dirs == 1)
            return seq_last(im, &x);
        return seq_bind(im, 0, IMP_RNN_H_DIR, x.layer, 1, x.dim, x.dirs, (int)i);
    case IMP_RNN_Y_TNU: /* [T, N, U] */
        if (axis == 0 && last_step)
            return seq_last(im, &x);
        break;
    case IMP_RNN_Y_NTU: /* [N, T, U] */
        if (axis == 1 && last_step)
            return seq_last(im, &x);
        break;
    default:
        break;
    }
    return imp_fail(im, "only Y_h[-1], a direction of Y_h, or the last step of Y (out[:, -1]) "
                    "is supported on %s, not index %lld on axis %lld", imp_kind_name(x.kind),
                    (long long)i, (long long)axis);
}

int imp_op_transpose(imp *im)
{
    static const char *const known[] = {"perm", NULL};
    imp_value *x = seq_value(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    int64_t perm[4];
    int np = imp_attr_ints(im, "perm", perm, 4);
    bool swap = np == 3 && perm[0] == 1 && perm[1] == 0 && perm[2] == 2;
    imp_value v = *x;
    /* A bidirectional Y [T, 2, N, U] to [T, N, 2, U], before the reshape
     * that puts each step's two directions side by side. */
    if (np == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 1 && perm[3] == 3 &&
        v.kind == IMP_RNN_Y && v.dirs == 2)
        return seq_bind(im, 0, IMP_RNN_Y_TNDU, v.layer, v.rank, v.dim, v.dirs, 0);
    static const imp_kind pairs[4][2] = {{IMP_SEQ, IMP_SEQ_TMAJOR},
                                         {IMP_SEQ_TMAJOR, IMP_SEQ},
                                         {IMP_RNN_Y_TNU, IMP_RNN_Y_NTU},
                                         {IMP_RNN_Y_NTU, IMP_RNN_Y_TNU}};
    for (int p = 0; p < 4 && swap; p++)
        if (v.kind == pairs[p][0])
            return seq_bind(im, 0, pairs[p][1], v.layer, v.rank, v.dim, v.dirs, v.dir);
    return imp_fail(im, "only swapping the batch and time axes (perm [1, 0, 2]) of a sequence, "
                    "or a bidirectional Y's [0, 2, 1, 3], is supported, here on %s",
                    imp_kind_name(v.kind));
}

int imp_op_squeeze(imp *im)
{
    static const char *const known[] = {"axes", NULL};
    imp_value *x = seq_value(im, 0);
    int64_t axis = -99;
    if (!x || imp_attrs_known(im, known) != 0 || seq_squeeze_axis(im, &axis) != 0)
        return -1;
    imp_value v = *x;
    if (v.kind == IMP_RNN_Y && v.dirs == 1 && axis == 1) /* [T, 1, N, U] -> [T, N, U] */
        return seq_bind(im, 0, IMP_RNN_Y_TNU, v.layer, 2, v.dim, 1, 0);
    if (v.kind == IMP_RNN_H && v.dirs == 1 && v.hbase == 0 && axis == 0) /* [1, N, U] */
        return seq_last(im, &v);
    return imp_fail(im, "only the direction axis of a one-direction LSTM/GRU's Y or Y_h may be "
                    "squeezed, not axis %lld of %s", (long long)axis, imp_kind_name(v.kind));
}

/* Shape, and Unsqueeze on a shape: ints an initial state's shape is built
 * from (the engine makes its own zero state). */
int imp_op_shape(imp *im)
{
    static const char *const known[] = {"start", "end", NULL};
    imp_value *x = seq_value(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    if (x->layer == IMP_CONST)
        return imp_fail(im, "the shape of a constant is not supported");
    return seq_bind(im, 0, IMP_SHAPE, IMP_DERIVED, 0, NULL, 0, 0);
}

int imp_op_unsqueeze(imp *im)
{
    static const char *const known[] = {"axes", NULL};
    imp_value *x = seq_value(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    if (x->kind != IMP_SHAPE)
        return imp_fail(im, "only an unsqueeze of shape values (an initial state's) is "
                        "supported, not of %s", imp_kind_name(x->kind));
    return seq_bind(im, 0, IMP_SHAPE, IMP_DERIVED, 0, NULL, 0, 0);
}

int imp_op_constant_of_shape(imp *im)
{
    static const char *const known[] = {"value", NULL};
    imp_value *x = seq_value(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    const Onnx__AttributeProto *a = imp_attr(im, "value");
    float f = 0.0f;
    int64_t i = 0;
    bool zero = !a || (a->t && imp_const_count(a->t) == 1 &&
                       (imp_const_f32(a->t, 0, &f) ? f == 0.0f
                                                   : imp_const_i64(a->t, 0, &i) && i == 0));
    if (!zero || (x->kind != IMP_SHAPE && x->layer != IMP_CONST))
        return imp_fail(im, "only zeros (an LSTM/GRU's initial state) are supported");
    return seq_bind(im, 0, IMP_ZEROS, IMP_DERIVED, 0, NULL, 0, 0);
}

/* Slice of zeros: a stacked layer's initial state, cut from the zeros
 * PyTorch makes for all its layers. */
int imp_op_slice(imp *im)
{
    imp_value *x = seq_value(im, 0);
    if (!x)
        return -1;
    if (x->kind != IMP_ZEROS && x->kind != IMP_SHAPE)
        return imp_fail(im, "only a slice of an initial state's zeros is supported, not of %s",
                        imp_kind_name(x->kind));
    return seq_bind(im, 0, x->kind, IMP_DERIVED, 0, NULL, 0, 0);
}

/* Y_h of stacked layers concatenated (PyTorch's h_n, num_layers > 1),
 * lowest layer first: a Y_h of the last layer with the entries before it
 * counted, so h_n[-1] is still the last layer's last step. */
static int seq_stack_h(imp *im)
{
    int base = 0;
    imp_value last = {0};
    for (size_t k = 0; k < im->node->n_input; k++) {
        imp_value *v = seq_value(im, (int)k);
        if (!v)
            return -1;
        if (v->kind != IMP_RNN_H || (k > 0 && v->layer <= last.layer))
            return imp_fail(im, "only the Y_h of stacked layers, lowest first, may be "
                            "concatenated with a Y_h (input %zu is %s)", k,
                            imp_kind_name(v->kind));
        base += k > 0 ? last.hbase + last.dirs : 0;
        last = *v;
    }
    if (imp_attr_int(im, "axis", 0) != 0)
        return imp_fail(im, "stacked Y_h are supported concatenated on axis 0 only");
    if (seq_bind(im, 0, IMP_RNN_H, last.layer, last.rank, last.dim, last.dirs, 0) != 0)
        return -1;
    im->v[im->nv - 1].hbase = base + last.hbase;
    return 0;
}

/* Concat of shape values (a shape), of stacked layers' Y_h, or of a
 * bidirectional Y_h's forward and backward directions on the features:
 * the engine's bidirectional, merge_mode concat. 1: none of them,
 * op_concat maps it. */
int imp_op_seq_concat(imp *im)
{
    bool shape = false, dirs = false, stack = false;
    for (size_t k = 0; k < im->node->n_input; k++) {
        imp_value *v = imp_find(im, im->node->input[k]);
        shape = shape || (v && v->kind == IMP_SHAPE);
        dirs = dirs || (v && v->kind == IMP_RNN_H_DIR);
        stack = stack || (v && v->kind == IMP_RNN_H);
    }
    if (shape)
        return seq_bind(im, 0, IMP_SHAPE, IMP_DERIVED, 0, NULL, 0, 0);
    if (!dirs && !stack)
        return 1;
    static const char *const known[] = {"axis", NULL};
    if (imp_attrs_known(im, known) != 0)
        return -1;
    if (stack)
        return seq_stack_h(im);
    imp_value *f = seq_value(im, 0), *b = f && im->node->n_input == 2 ? seq_value(im, 1) : NULL;
    int64_t axis = imp_attr_int(im, "axis", 0);
    if (!b || f->kind != IMP_RNN_H_DIR || b->kind != IMP_RNN_H_DIR || f->layer != b->layer ||
        f->dir != 0 || b->dir != 1 || (axis != 1 && axis != -1))
        return imp_fail(im, "only Y_h's forward and backward directions of one layer, in that "
                        "order, concatenated on the features (axis 1) are supported");
    long d[1] = {2 * f->dim[0]};
    return seq_bind(im, 0, IMP_PLAIN, f->layer, 1, d, 0, 0);
}

/* ---- LSTM, GRU --------------------------------------------------------- */

typedef struct seq_rnn {
    bool lstm;
    int dirs, gates;
    long f, units;
    const Onnx__TensorProto *w, *r, *b;
} seq_rnn;

/* ONNX's gate block for each of the engine's gates. */
static int seq_onnx_gate(bool lstm, int gate)
{
    static const int from_onnx[4] = {0, 2, 3, 1}; /* i, f, c, o from i, o, f, c */
    return lstm ? from_onnx[gate] : gate;
}

static int seq_check(imp *im, const Onnx__TensorProto *c, const char *what, long d0, long d1,
                     long d2, int rank)
{
    long want[3] = {d0, d1, d2};
    bool ok = c->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && (int)c->n_dims == rank &&
              imp_const_count(c) >= 0;
    for (int r = 0; ok && r < rank; r++)
        ok = (long)c->dims[r] == want[r];
    if (!ok)
        return rank == 3 ? imp_fail(im, "%s must be float32 [%ld, %ld, %ld]", what, d0, d1, d2)
                         : imp_fail(im, "%s must be float32 [%ld, %ld]", what, d0, d1);
    return 0;
}

/* An initial state: absent, a ConstantOfShape 0, or a constant of zeros. */
static int seq_zero_state(imp *im, int k, const char *what)
{
    if (!seq_has_input(im, k))
        return 0;
    imp_value *v = seq_value(im, k);
    if (!v)
        return -1;
    bool zero = v->kind == IMP_ZEROS;
    if (v->layer == IMP_CONST) {
        long n = imp_const_count(v->init);
        float f = 0.0f;
        zero = n >= 0;
        for (long i = 0; zero && i < n; i++)
            zero = imp_const_f32(v->init, i, &f) && f == 0.0f;
    }
    return zero ? 0 : imp_fail(im, "%s must be zeros (the engine starts each sequence from "
                               "a zero state)", what);
}

/* The engine's kernel [rows, G] from ONNX's [dirs, G, rows], direction d. */
static void seq_kernel(const seq_rnn *q, const Onnx__TensorProto *c, int d, long rows,
                       float *dst)
{
    long g_all = q->gates * q->units;
    for (int g = 0; g < q->gates; g++) {
        long from = seq_onnx_gate(q->lstm, g) * q->units;
        for (long u = 0; u < q->units; u++)
            for (long r = 0; r < rows; r++)
                imp_const_f32(c, (d * g_all + from + u) * rows + r,
                              &dst[r * g_all + g * q->units + u]);
    }
}

/* The engine's bias from ONNX's [dirs, 2G] (input then recurrent): an
 * LSTM's [G] is their sum, the GRU's (reset after) [2, G] keeps both. */
static void seq_bias(const seq_rnn *q, int d, float *dst)
{
    long g_all = q->gates * q->units;
    for (int half = 0; half < 2; half++)
        for (int g = 0; g < q->gates; g++)
            for (long u = 0; u < q->units; u++) {
                long at = (q->lstm ? 0 : half * g_all) + g * q->units + u;
                float v = 0.0f;
                if (q->b)
                    imp_const_f32(q->b, d * 2 * g_all + half * g_all +
                                  seq_onnx_gate(q->lstm, g) * q->units + u, &v);
                dst[at] = (q->lstm && half ? dst[at] : 0.0f) + v;
            }
}

static int seq_rnn_weights(imp *im, const seq_rnn *q, int l)
{
    static const char *const one[3] = {"kernel", "recurrent_kernel", "bias"};
    static const char *const two[2][3] = {
        {"forward_kernel", "forward_recurrent_kernel", "forward_bias"},
        {"backward_kernel", "backward_recurrent_kernel", "backward_bias"}};
    const char *type = q->dirs == 2 ? "bidirectional" : q->lstm ? "lstm" : "gru";
    long g = q->gates * q->units;
    for (int d = 0; d < q->dirs; d++) {
        const char *const *n = q->dirs == 2 ? two[d] : one;
        long kd[2] = {q->f, g}, rd[2] = {q->units, g}, bd[2] = {2, g};
        float *k, *r, *b;
        if (imp_weight_alloc(im, l, type, n[0], 2, kd, &k) != 0 ||
            imp_weight_alloc(im, l, type, n[1], 2, rd, &r) != 0)
            return -1;
        int brank = q->lstm ? 1 : 2;
        if (imp_weight_alloc(im, l, type, n[2], brank, q->lstm ? &bd[1] : bd, &b) != 0)
            return -1;
        if (!k)
            continue;
        seq_kernel(q, q->w, d, q->f, k);
        seq_kernel(q, q->r, d, q->units, r);
        seq_bias(q, d, b);
    }
    return 0;
}

/* hidden_size, direction, layout, linear_before_reset: the attributes
 * mapped; any other (activations, clip, input_forget) is refused. */
static int seq_rnn_attrs(imp *im, seq_rnn *q)
{
    static const char *const lstm[] = {"hidden_size", "direction", "layout", NULL};
    static const char *const gru[] = {"hidden_size", "direction", "layout",
                                      "linear_before_reset", NULL};
    if (imp_attrs_known(im, q->lstm ? lstm : gru) != 0)
        return -1;
    const Onnx__AttributeProto *dir = imp_attr(im, "direction");
    size_t dl = dir ? dir->s.len : 7;
    const char *ds = dir ? (const char *)dir->s.data : "forward";
    if (dl == 7 && memcmp(ds, "forward", 7) == 0)
        q->dirs = 1;
    else if (dl == 13 && memcmp(ds, "bidirectional", 13) == 0)
        q->dirs = 2;
    else
        return imp_fail(im, "direction %.*s is not supported (forward and bidirectional are)",
                        (int)(dl < 20 ? dl : 20), ds ? ds : "");
    if (imp_attr_int(im, "layout", 0) != 0)
        return imp_fail(im, "layout 1 is not supported (the time-major layout 0 is)");
    if (!q->lstm && imp_attr_int(im, "linear_before_reset", 0) != 1)
        return imp_fail(im, "linear_before_reset 0 is not supported (1 is, as PyTorch's GRU)");
    q->units = (long)imp_attr_int(im, "hidden_size", 0);
    if (q->units < 1 || q->units > (1L << 16))
        return imp_fail(im, "hidden_size must be in 1..65536");
    return 0;
}

int imp_op_rnn(imp *im, bool lstm)
{
    seq_rnn q = {.lstm = lstm, .gates = lstm ? 4 : 3};
    if (seq_rnn_attrs(im, &q) != 0)
        return -1;
    imp_value *x = seq_value(im, 0);
    if (!x)
        return -1;
    if (x->kind != IMP_SEQ_TMAJOR && x->kind != IMP_RNN_Y_TNU)
        return imp_fail(im, "X must be a time-major sequence [T, N, F] (an embedding's output "
                        "transposed, or a layer below's Y), not %s", imp_kind_name(x->kind));
    imp_value xv = *x;
    if (xv.kind == IMP_RNN_Y_TNU && seq_mode(im, xv.layer, true) != 0)
        return -1;
    q.f = xv.dim[1];
    long g = q.gates * q.units;
    if (!(q.w = imp_const(im, 1)) || !(q.r = imp_const(im, 2)) ||
        (seq_has_input(im, 3) && !(q.b = imp_const(im, 3))))
        return -1;
    if (seq_check(im, q.w, "W", q.dirs, g, q.f, 3) != 0 ||
        seq_check(im, q.r, "R", q.dirs, g, q.units, 3) != 0 ||
        (q.b && seq_check(im, q.b, "B", q.dirs, 2 * g, 0, 2) != 0))
        return -1;
    if (seq_has_input(im, 4))
        return imp_fail(im, "sequence_lens is not supported (the engine takes each sample's "
                        "length from its trailing zero ids)");
    if (seq_zero_state(im, 5, "initial_h") != 0 ||
        (lstm && seq_zero_state(im, 6, "initial_c") != 0))
        return -1;
    if (lstm && seq_has_input(im, 7))
        return imp_fail(im, "peepholes (P) are not supported");
    json_t *cell = json_pack("{s:s,s:I}", "type", lstm ? "lstm" : "gru", "units",
                             (json_int_t)q.units);
    json_t *layer = q.dirs == 1 || !cell ? cell
                    : json_pack("{s:s,s:o,s:s}", "type", "bidirectional", "layer", cell,
                                "merge_mode", "concat");
    const imp_value *in[1] = {&xv};
    int l = imp_add_layer(im, layer, in, 1);
    if (l < 0 || seq_rnn_weights(im, &q, l) != 0)
        return -1;
    long yd[2] = {xv.dim[0], q.units}, hd[1] = {q.units};
    if (seq_bind(im, 0, IMP_RNN_Y, l, 2, yd, q.dirs, 0) != 0 ||
        seq_bind(im, 1, IMP_RNN_H, l, 1, hd, q.dirs, 0) != 0)
        return -1;
    return lstm ? seq_bind(im, 2, IMP_RNN_C, l, 1, hd, q.dirs, 0) : 0;
}

/* ---- whole sequences: a stacked layer's input, per step, over time ---- */

/* Reshape of a bidirectional Y [T, N, 2, U] to [T, N, 2U] ([0, 0, -1]):
 * each step's forward and backward outputs side by side, as the engine's
 * bidirectional concatenates them. 1: not a sequence's, op_reshape maps it. */
int imp_op_seq_reshape(imp *im)
{
    imp_value *x = imp_find(im, im->node->input[0]);
    if (!x || x->kind != IMP_RNN_Y_TNDU)
        return 1;
    const Onnx__TensorProto *s = imp_const(im, 1);
    if (!s)
        return -1;
    int64_t d[3] = {-9, -9, -9};
    bool ok = imp_const_count(s) == 3;
    for (int k = 0; ok && k < 3; k++)
        ok = imp_const_i64(s, k, &d[k]);
    imp_value v = *x;
    long units = v.dim[v.rank - 1];
    if (!ok || d[0] != 0 || d[1] != 0 || (d[2] != -1 && d[2] != 2 * units))
        return imp_fail(im, "only the reshape of a bidirectional Y [T, N, 2, U] to [T, N, 2U] "
                        "(shape [0, 0, -1]) is supported");
    long dim[2] = {v.dim[0], 2 * units};
    return seq_bind(im, 0, IMP_RNN_Y_TNU, v.layer, 2, dim, v.dirs, 0);
}

/* MatMul of a whole sequence by a constant [F, units]: PyTorch's
 * nn.Linear on [N, T, F], the engine's dense per step (a tagger); the
 * bias is the Add after it (onnx_ops.c's op_add). 1: not a sequence's. */
int imp_op_seq_matmul(imp *im)
{
    imp_value *x0 = imp_find(im, im->node->input[0]);
    if (!x0 || (x0->kind != IMP_SEQ && x0->kind != IMP_RNN_Y_NTU))
        return 1;
    static const char *const none[] = {NULL};
    imp_value *x = imp_attrs_known(im, none) == 0 ? seq_whole(im, "a MatMul") : NULL;
    const Onnx__TensorProto *w = x ? imp_const(im, 1) : NULL;
    if (!w)
        return -1;
    imp_value xv = *x;
    if (w->n_dims != 2 || (long)w->dims[0] != xv.dim[1] || w->dims[1] < 1)
        return imp_fail(im, "only a sequence [N, T, %ld] times a constant [%ld, units] is "
                        "supported", xv.dim[1], xv.dim[1]);
    long units = (long)w->dims[1];
    const imp_value *in[1] = {&xv};
    int l = imp_add_layer(im, json_pack("{s:s,s:I,s:b}", "type", "dense", "units",
                                        (json_int_t)units, "use_bias", 0), in, 1);
    long wd[2] = {xv.dim[1], units}, od[2] = {xv.dim[0], units};
    if (l < 0 || imp_weight(im, l, "dense", "weight", w, 2, wd, false) != 0 ||
        seq_bind(im, 0, IMP_STEPS, l, 2, od, 0, 0) != 0)
        return -1;
    im->last_type_dense_nobias = imp_consumers(im, im->node->output[0]) == 1 ? l : -1;
    return 0;
}

/* ReduceMean over time (axes [1], keepdims 0) of a whole sequence: the
 * engine's global_avgpool1d, which averages each sample's real steps
 * (docs/interchange.md: equal to PyTorch's mean where no id is padding). */
int imp_op_reduce_mean(imp *im)
{
    static const char *const known[] = {"axes", "keepdims", NULL};
    if (imp_attrs_known(im, known) != 0)
        return -1;
    int64_t axes[2];
    int n = imp_attr_ints(im, "axes", axes, 2);
    if (n != 1 || (axes[0] != 1 && axes[0] != -2) || imp_attr_int(im, "keepdims", 1) != 0 ||
        seq_has_input(im, 1))
        return imp_fail(im, "only a mean over time (axes [1], keepdims 0) is supported");
    imp_value *x = seq_whole(im, "a mean");
    if (!x)
        return -1;
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    int l = imp_add_layer(im, json_pack("{s:s}", "type", "global_avgpool1d"), in, 1);
    long d[1] = {xv.dim[1]};
    return l < 0 ? -1 : seq_bind(im, 0, IMP_PLAIN, l, 1, d, 0, 0);
}
