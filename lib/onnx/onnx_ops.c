/* onnx_ops.c — each ONNX operator mapped onto the engine's layers
 * (onnx_import.h). The engine keeps a sample as {features} or
 * {C, H, W}, ONNX's NCHW without the batch, so weights copy over as they
 * are, but for Gemm's transB (a transpose into dense's [in, out]).
 * Padding maps only where it is the engine's own: none (valid) or the
 * engine's "same" (ceil(in / stride) outputs, the odd row and column at
 * the far edge, as ONNX's SAME_UPPER); any other is refused naming the
 * node rather than trained differently from the graph. */
#include "onnx/onnx_ops.h"

#include <stdio.h>
#include <string.h>

static long shape_size(const imp_value *v)
{
    long n = 1;
    for (int r = 0; r < v->rank; r++)
        n *= v->dim[r];
    return n;
}

/* A one-input layer without options; flatten makes the shape flat. */
static int unary_layer(imp *im, const imp_value *x, const char *type)
{
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    int l = imp_add_layer(im, json_pack("{s:s}", "type", type), in, 1);
    long flat[1] = {shape_size(&xv)};
    if (l < 0)
        return -1;
    return strcmp(type, "flatten") == 0 ? imp_bind(im, l, 1, flat)
                                        : imp_bind(im, l, xv.rank, xv.dim);
}

static int op_unary(imp *im, const char *type)
{
    static const char *const none[] = {NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, none) != 0)
        return -1;
    return unary_layer(im, x, type);
}

static int op_identity(imp *im)
{
    static const char *const known[] = {"ratio", "seed", NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    /* Dropout's ratio and training_mode inputs are constants; the mask output
     * must be unused. */
    if (im->node->n_output > 1 && im->node->output[1][0] &&
        imp_consumers(im, im->node->output[1]) > 0)
        return imp_fail(im, "its mask output is used; only the data output is supported");
    return imp_alias(im, x);
}

static int op_softmax(imp *im)
{
    static const char *const known[] = {"axis", NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    int64_t axis = imp_attr_int(im, "axis", -1);
    if (x->rank != 1 || (axis != 1 && axis != -1))
        return imp_fail(im, "only a softmax over the features of a flat [N, F] tensor is "
                        "supported");
    return unary_layer(im, x, "softmax");
}

static int op_flatten(imp *im)
{
    static const char *const known[] = {"axis", NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    if (imp_attr_int(im, "axis", 1) != 1)
        return imp_fail(im, "only axis 1 (keep the batch) is supported");
    if (x->rank == 1)
        return imp_alias(im, x);
    return unary_layer(im, x, "flatten");
}

/* Reshape to [N, -1] / [N, features] (or [0, -1]): a flatten. */
static int op_reshape(imp *im)
{
    static const char *const known[] = {"allowzero", NULL};
    imp_value *x = imp_input(im, 0);
    const Onnx__TensorProto *s = x ? imp_const(im, 1) : NULL;
    if (!s || imp_attrs_known(im, known) != 0)
        return -1;
    int64_t a = 0, b = 0;
    bool flat = imp_const_count(s) == 2 && imp_const_i64(s, 0, &a) && imp_const_i64(s, 1, &b) &&
                (a == -1 || a == 0 || a == 1) && (b == -1 || b == shape_size(x));
    if (!flat)
        return imp_fail(im, "only a reshape to [N, -1] (a flatten) is supported");
    if (x->rank == 1)
        return imp_alias(im, x);
    return unary_layer(im, x, "flatten");
}

static int dense_layer(imp *im, imp_value x, long out, const Onnx__TensorProto *w, bool trans,
                       const Onnx__TensorProto *b)
{
    if (x.rank != 1)
        return imp_fail(im, "its input must be flat [N, F]; flatten it first");
    const imp_value *in[1] = {&x};
    int l = imp_add_layer(im, json_pack("{s:s,s:I,s:b}", "type", "dense", "units",
                                        (json_int_t)out, "use_bias", b != NULL), in, 1);
    long wd[2] = {x.dim[0], out}, bd[1] = {out};
    if (l < 0 || imp_weight(im, l, "dense", "weight", w, 2, wd, trans) != 0 ||
        (b && imp_weight(im, l, "dense", "bias", b, 1, bd, false) != 0))
        return -1;
    return imp_bind(im, l, 1, bd);
}

static int op_gemm(imp *im)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    imp_value *x = imp_input(im, 0);
    const Onnx__TensorProto *w = x ? imp_const(im, 1) : NULL;
    if (!w || imp_attrs_known(im, known) != 0)
        return -1;
    const Onnx__TensorProto *b = im->node->n_input > 2 ? imp_const(im, 2) : NULL;
    if (im->node->n_input > 2 && !b)
        return -1;
    if (imp_attr_float(im, "alpha", 1.0f) != 1.0f || imp_attr_float(im, "beta", 1.0f) != 1.0f ||
        imp_attr_int(im, "transA", 0) != 0)
        return imp_fail(im, "alpha and beta other than 1, or transA, are not supported");
    bool trans = imp_attr_int(im, "transB", 0) != 0;
    if (w->n_dims != 2)
        return imp_fail(im, "B must be a matrix");
    long out = (long)w->dims[trans ? 0 : 1], in = (long)w->dims[trans ? 1 : 0];
    if (x->rank != 1 || in != x->dim[0])
        return imp_fail(im, "B is %ld x %ld but the input has %ld features", (long)w->dims[0],
                        (long)w->dims[1], shape_size(x));
    if (b && imp_const_count(b) != out)
        return imp_fail(im, "C must hold one bias per output (%ld)", out);
    return dense_layer(im, *x, out, w, trans, b);
}

/* MatMul by a constant [in, out]: a dense without bias, which a following
 * Add of a constant [out] completes (PyTorch's nn.Linear on 3-d inputs and
 * older exporters write Linear so). */
static int op_matmul(imp *im)
{
    static const char *const none[] = {NULL};
    imp_value *x = imp_input(im, 0);
    const Onnx__TensorProto *w = x ? imp_const(im, 1) : NULL;
    if (!w || imp_attrs_known(im, none) != 0)
        return -1;
    if (w->n_dims != 2 || x->rank != 1 || (long)w->dims[0] != x->dim[0])
        return imp_fail(im, "only a flat [N, F] input times a constant [F, units] matrix is "
                        "supported");
    if (dense_layer(im, *x, (long)w->dims[1], w, false, NULL) != 0)
        return -1;
    imp_value *y = imp_find(im, im->node->output[0]);
    im->last_type_dense_nobias = imp_consumers(im, y->name) == 1 ? y->layer : -1;
    return 0;
}

/* The node's first n inputs copied into xs, with in[k] = &xs[k] for
 * imp_add_layer (copies: im->v may move as values are added);
 * -1 when one is missing. */
static int imp_inputs(imp *im, int n, imp_value *xs, const imp_value **in)
{
    for (int k = 0; k < n; k++) {
        const imp_value *v = imp_input(im, k);
        if (!v)
            return -1;
        xs[k] = *v;
        in[k] = &xs[k];
    }
    return 0;
}

/* Add: a residual sum of two computed tensors, or the bias of the MatMul
 * just before. */
static int op_add(imp *im)
{
    static const char *const none[] = {NULL};
    if (imp_attrs_known(im, none) != 0)
        return -1;
    if (im->node->n_input < 2)
        return imp_fail(im, "needs at least two inputs");
    imp_value *a = imp_find(im, im->node->input[0]);
    imp_value *b = imp_find(im, im->node->input[1]);
    if (!a || !b)
        return imp_fail(im, "an input is not computed before it");
    if (a->layer == IMP_CONST) {
        imp_value *t = a;
        a = b;
        b = t;
    }
    if (b->layer == IMP_CONST && im->node->n_input == 2) {
        int l = im->last_type_dense_nobias;
        long units = a->rank > 0 ? a->dim[a->rank - 1] : 0; /* per step: {T, units} */
        if (l < 0 || a->layer != l || imp_const_count(b->init) != units)
            return imp_fail(im, "adding a constant is supported only as the bias of the "
                            "MatMul just before it");
        json_t *layer = json_array_get(im->layers, (size_t)l);
        json_object_set_new(layer, "use_bias", json_true());
        long bd[1] = {units};
        imp_value av = *a;
        im->last_type_dense_nobias = -1;
        if (imp_weight(im, l, "dense", "bias", b->init, 1, bd, false) != 0 ||
            imp_alias(im, &av) != 0)
            return -1;
        im->v[im->nv - 1].kind = av.kind;
        return 0;
    }
    imp_value xs[SPEC_MAX_INPUTS_IMP];
    const imp_value *in[SPEC_MAX_INPUTS_IMP];
    int n = (int)im->node->n_input;
    if (n > SPEC_MAX_INPUTS_IMP)
        return imp_fail(im, "at most %d inputs are supported", SPEC_MAX_INPUTS_IMP);
    if (imp_inputs(im, n, xs, in) != 0)
        return -1;
    for (int k = 1; k < n; k++)
        if (xs[k].rank != xs[0].rank || memcmp(xs[k].dim, xs[0].dim, sizeof xs[k].dim) != 0)
            return imp_fail(im, "its inputs differ in shape (broadcasting is not supported)");
    int l = imp_add_layer(im, json_pack("{s:s}", "type", "add"), in, n);
    return l < 0 ? -1 : imp_bind(im, l, xs[0].rank, xs[0].dim);
}

static int op_concat(imp *im)
{
    static const char *const known[] = {"axis", NULL};
    if (imp_attrs_known(im, known) != 0)
        return -1;
    int n = (int)im->node->n_input;
    if (n < 2 || n > SPEC_MAX_INPUTS_IMP)
        return imp_fail(im, "needs 2 to %d inputs", SPEC_MAX_INPUTS_IMP);
    imp_value xs[SPEC_MAX_INPUTS_IMP];
    const imp_value *in[SPEC_MAX_INPUTS_IMP];
    if (imp_inputs(im, n, xs, in) != 0)
        return -1;
    long total = 0;
    for (int k = 0; k < n; k++) {
        const imp_value *v = &xs[k];
        total += v->dim[0];
        if (v->rank != xs[0].rank ||
            (v->rank == 3 && (v->dim[1] != xs[0].dim[1] || v->dim[2] != xs[0].dim[2])))
            return imp_fail(im, "its inputs differ in shape beyond the channels");
    }
    int64_t axis = imp_attr_int(im, "axis", 1);
    if (axis != 1 && axis != -(int64_t)xs[0].rank)
        return imp_fail(im, "only axis 1 (channels or features) is supported, got %lld",
                        (long long)axis);
    int l = imp_add_layer(im, json_pack("{s:s}", "type", "concat"), in, n);
    long d[3] = {total, xs[0].dim[1], xs[0].dim[2]};
    return l < 0 ? -1 : imp_bind(im, l, xs[0].rank, d);
}

/* The window's geometry: kernel, strides, dilations, and whether pads are
 * none (valid) or the engine's same; the output extent in out. */
typedef struct window {
    int64_t k[2], s[2], d[2];
    bool same;
    long out[2];
} window;

static int window_read(imp *im, const imp_value *x, window *w, const int64_t *kernel)
{
    if (x->rank != 3)
        return imp_fail(im, "its input must be an image [N, C, H, W]");
    w->k[0] = kernel[0];
    w->k[1] = kernel[1];
    w->s[0] = w->s[1] = w->d[0] = w->d[1] = 1;
    int64_t pads[4] = {0, 0, 0, 0};
    if (imp_attr_ints(im, "strides", w->s, 2) > 2 || imp_attr_ints(im, "dilations", w->d, 2) > 2 ||
        imp_attr_ints(im, "pads", pads, 4) > 4)
        return imp_fail(im, "only 2-d windows are supported");
    const Onnx__AttributeProto *ap = imp_attr(im, "auto_pad");
    const char *auto_pad = ap && ap->s.len ? (const char *)ap->s.data : "NOTSET";
    size_t alen = ap ? ap->s.len : 6;
    bool upper = alen == 10 && memcmp(auto_pad, "SAME_UPPER", 10) == 0;
    if (!(alen == 6 && memcmp(auto_pad, "NOTSET", 6) == 0) && !upper &&
        !(alen == 5 && memcmp(auto_pad, "VALID", 5) == 0))
        return imp_fail(im, "auto_pad %.*s is not supported (NOTSET, VALID, SAME_UPPER are)",
                        (int)(alen < 20 ? alen : 20), auto_pad);
    for (int a = 0; a < 2; a++) {
        if (w->k[a] < 1 || w->s[a] < 1 || w->d[a] < 1 || w->k[a] > 1024 || w->s[a] > 1024 ||
            w->d[a] > 1024)
            return imp_fail(im, "kernel, strides and dilations must be in 1..1024");
    }
    /* The engine's same: ceil(in / stride) outputs, lead = total / 2. */
    bool zero = true, same = true;
    for (int a = 0; a < 2; a++) {
        long in = x->dim[1 + a], span = (w->k[a] - 1) * w->d[a] + 1;
        long out = (in + w->s[a] - 1) / w->s[a];
        long total = (out - 1) * w->s[a] + span - in;
        if (total < 0)
            total = 0;
        zero = zero && pads[a] == 0 && pads[a + 2] == 0;
        same = same && pads[a] == total / 2 && pads[a + 2] == total - total / 2;
        w->out[a] = out;
    }
    w->same = upper || (!zero && same);
    if (!w->same && !zero)
        return imp_fail(im, "pads [%lld, %lld, %lld, %lld] are neither none nor the engine's "
                        "\"same\" (ceil(in / stride) outputs, any odd pad at the end)",
                        (long long)pads[0], (long long)pads[1], (long long)pads[2],
                        (long long)pads[3]);
    for (int a = 0; a < 2 && !w->same; a++) {
        long in = x->dim[1 + a], span = (w->k[a] - 1) * w->d[a] + 1;
        w->out[a] = in >= span ? (in - span) / w->s[a] + 1 : 0;
        if (w->out[a] < 1)
            return imp_fail(im, "the window is larger than its %ld x %ld input", x->dim[1],
                            x->dim[2]);
    }
    return 0;
}

static int op_conv(imp *im)
{
    static const char *const known[] = {"kernel_shape", "strides", "dilations", "pads",
                                        "group", "auto_pad", NULL};
    imp_value *x = imp_input(im, 0);
    const Onnx__TensorProto *wt = x ? imp_const(im, 1) : NULL;
    if (!wt || imp_attrs_known(im, known) != 0)
        return -1;
    const Onnx__TensorProto *b = im->node->n_input > 2 && im->node->input[2][0]
                                     ? imp_const(im, 2) : NULL;
    if (im->node->n_input > 2 && im->node->input[2][0] && !b)
        return -1;
    if (wt->n_dims != 4)
        return imp_fail(im, "only 2-d convolutions are supported (W of rank %zu)", wt->n_dims);
    int64_t group = imp_attr_int(im, "group", 1);
    long k = (long)wt->dims[0], c = x->rank == 3 ? x->dim[0] : 0;
    window w;
    int64_t kernel[2] = {wt->dims[2], wt->dims[3]};
    if (window_read(im, x, &w, kernel) != 0)
        return -1;
    if (group < 1 || c % group != 0 || k % group != 0 || (long)wt->dims[1] != c / group)
        return imp_fail(im, "W is [%lld, %lld, ...] but the input has %ld channels in %lld "
                        "groups", (long long)wt->dims[0], (long long)wt->dims[1], c,
                        (long long)group);
    if (b && imp_const_count(b) != k)
        return imp_fail(im, "B must hold one bias per filter (%ld)", k);
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    json_t *layer = json_pack("{s:s,s:I,s:[I,I],s:[I,I],s:[I,I],s:s,s:I,s:b}", "type", "conv2d",
                              "filters", (json_int_t)k, "kernel", (json_int_t)w.k[0],
                              (json_int_t)w.k[1], "stride", (json_int_t)w.s[0],
                              (json_int_t)w.s[1], "dilation", (json_int_t)w.d[0],
                              (json_int_t)w.d[1], "padding", w.same ? "same" : "valid",
                              "groups", (json_int_t)group, "use_bias", b != NULL);
    int l = imp_add_layer(im, layer, in, 1);
    long wd[4] = {k, c / group, (long)w.k[0], (long)w.k[1]}, bd[1] = {k};
    if (l < 0 || imp_weight(im, l, "conv2d", "weight", wt, 4, wd, false) != 0 ||
        (b && imp_weight(im, l, "conv2d", "bias", b, 1, bd, false) != 0))
        return -1;
    long od[3] = {k, w.out[0], w.out[1]};
    return imp_bind(im, l, 3, od);
}

static int op_pool(imp *im, bool max)
{
    static const char *const known[] = {"kernel_shape", "strides", "pads", "auto_pad",
                                        "ceil_mode", "count_include_pad", "dilations",
                                        "storage_order", NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    if (im->node->n_output > 1 && im->node->output[1][0])
        return imp_fail(im, "the Indices output is not supported");
    int64_t kernel[2] = {0, 0};
    if (imp_attr_ints(im, "kernel_shape", kernel, 2) != 2)
        return imp_fail(im, "only 2-d windows (kernel_shape of 2) are supported");
    if (imp_attr_int(im, "ceil_mode", 0) != 0)
        return imp_fail(im, "ceil_mode 1 is not supported");
    window w;
    if (window_read(im, x, &w, kernel) != 0)
        return -1;
    if (w.d[0] != 1 || w.d[1] != 1)
        return imp_fail(im, "dilated pooling is not supported");
    if (!max && w.same && imp_attr_int(im, "count_include_pad", 0) != 0)
        return imp_fail(im, "count_include_pad 1 with padding is not supported (the engine "
                        "leaves padding out of an average)");
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    json_t *layer = json_pack("{s:s,s:[I,I],s:[I,I],s:s}", "type", max ? "maxpool2d" : "avgpool2d",
                              "pool", (json_int_t)w.k[0], (json_int_t)w.k[1], "stride",
                              (json_int_t)w.s[0], (json_int_t)w.s[1], "padding",
                              w.same ? "same" : "valid");
    int l = imp_add_layer(im, layer, in, 1);
    long od[3] = {xv.dim[0], w.out[0], w.out[1]};
    return l < 0 ? -1 : imp_bind(im, l, 3, od);
}

static int op_global_pool(imp *im, bool max)
{
    static const char *const none[] = {NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, none) != 0)
        return -1;
    if (x->rank != 3)
        return imp_fail(im, "its input must be an image [N, C, H, W]");
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    json_t *layer = json_pack("{s:s,s:[I,I]}", "type", max ? "maxpool2d" : "avgpool2d", "pool",
                              (json_int_t)xv.dim[1], (json_int_t)xv.dim[2]);
    int l = imp_add_layer(im, layer, in, 1);
    long od[3] = {xv.dim[0], 1, 1};
    return l < 0 ? -1 : imp_bind(im, l, 3, od);
}

static int op_batchnorm(imp *im)
{
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "spatial",
                                        NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    if (imp_attr_int(im, "training_mode", 0) != 0 || im->node->n_output > 1)
        return imp_fail(im, "training_mode is not supported (export the model in eval mode)");
    const Onnx__TensorProto *c[4];
    for (int k = 0; k < 4; k++)
        if (!(c[k] = imp_const(im, k + 1)))
            return -1;
    float eps = imp_attr_float(im, "epsilon", 1e-5f);
    float momentum = imp_attr_float(im, "momentum", 0.9f);
    if (!(eps > 0.0f && eps < 1.0f) || !(momentum >= 0.0f && momentum < 1.0f))
        return imp_fail(im, "epsilon must be in (0, 1) and momentum in [0, 1)");
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    int l = imp_add_layer(im, json_pack("{s:s,s:f,s:f}", "type", "batchnorm", "epsilon",
                                        (double)eps, "momentum", (double)momentum), in, 1);
    static const char *const names[4] = {"gamma", "beta", "running_mean", "running_var"};
    long d[1] = {xv.dim[0]};
    for (int k = 0; k < 4 && l >= 0; k++)
        if (imp_weight(im, l, "batchnorm", names[k], c[k], 1, d, false) != 0)
            return -1;
    return l < 0 ? -1 : imp_bind(im, l, xv.rank, xv.dim);
}

/* A Constant node: its value becomes a constant of the graph. */
static int op_constant(imp *im)
{
    const Onnx__AttributeProto *a = imp_attr(im, "value");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t ||
        im->node->n_attribute != 1 || im->node->n_output != 1)
        return imp_fail(im, "only a Constant with a tensor \"value\" is supported");
    if (imp_const_count(a->t) < 0)
        return imp_fail(im, "its value must be float32, int64 or int32 data in the file");
    if (imp_bind(im, IMP_CONST, 0, NULL) != 0)
        return -1;
    imp_find(im, im->node->output[0])->init = a->t;
    return 0;
}

static int op_relu(imp *im) { return op_unary(im, "relu"); }
static int op_sigmoid(imp *im) { return op_unary(im, "sigmoid"); }
static int op_tanh(imp *im) { return op_unary(im, "tanh"); }
static int op_maxpool(imp *im) { return op_pool(im, true); }
static int op_avgpool(imp *im) { return op_pool(im, false); }
static int op_global_maxpool(imp *im) { return op_global_pool(im, true); }
static int op_global_avgpool(imp *im) { return op_global_pool(im, false); }
static int op_lstm(imp *im) { return imp_op_rnn(im, true); }
static int op_gru(imp *im) { return imp_op_rnn(im, false); }

/* Concat, Reshape, MatMul: a sequence's pattern first (1: not one), else
 * the plain tensor's mapping. */
static int op_concat_any(imp *im)
{
    int rc = imp_op_seq_concat(im);
    return rc == 1 ? op_concat(im) : rc;
}

static int op_reshape_any(imp *im)
{
    int rc = imp_op_seq_reshape(im);
    return rc == 1 ? op_reshape(im) : rc;
}

static int op_matmul_any(imp *im)
{
    int rc = imp_op_seq_matmul(im);
    return rc == 1 ? op_matmul(im) : rc;
}

int imp_op(imp *im)
{
    const char *op = im->node->op_type ? im->node->op_type : "";
    if (im->node->domain && im->node->domain[0] && strcmp(im->node->domain, "ai.onnx") != 0)
        return imp_fail(im, "operator domain \"%.60s\" is not supported", im->node->domain);
    if (strcmp(op, "MatMul") != 0 && strcmp(op, "Add") != 0)
        im->last_type_dense_nobias = -1;
    static const struct {
        const char *op;
        int (*map)(imp *);
    } ops[] = {
        {"Relu", op_relu}, {"Sigmoid", op_sigmoid}, {"Tanh", op_tanh},
        {"Identity", op_identity}, {"Dropout", op_identity}, {"Softmax", op_softmax},
        {"Flatten", op_flatten}, {"Reshape", op_reshape_any}, {"Gemm", op_gemm},
        {"MatMul", op_matmul_any}, {"Add", op_add}, {"Sum", op_add},
        {"Concat", op_concat_any}, {"Conv", op_conv}, {"MaxPool", op_maxpool},
        {"AveragePool", op_avgpool}, {"GlobalAveragePool", op_global_avgpool},
        {"GlobalMaxPool", op_global_maxpool}, {"BatchNormalization", op_batchnorm},
        {"Constant", op_constant}, {"LayerNormalization", imp_op_layer_norm},
        {"Gelu", imp_op_gelu}, {"Div", imp_op_div}, {"Gather", imp_op_gather},
        {"Transpose", imp_op_transpose}, {"Squeeze", imp_op_squeeze}, {"Shape", imp_op_shape},
        {"Unsqueeze", imp_op_unsqueeze}, {"ConstantOfShape", imp_op_constant_of_shape},
        {"Slice", imp_op_slice}, {"ReduceMean", imp_op_reduce_mean}, {"LSTM", op_lstm},
        {"GRU", op_gru}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].op) == 0)
            return ops[i].map(im);
    snprintf(im->err, im->errlen, "node \"%.80s\" (%.40s) is not supported",
             im->node->name && im->node->name[0] ? im->node->name
             : im->node->n_output ? im->node->output[0] : "", op);
    return -1;
}
