/* onnx_ops_norm.c — LayerNormalization and GELU on flat [N, F] tensors
 * (onnx_import_internal.h). GELU is not a layer of its own in the engine
 * but a dense activation, so it is fused into the dense layer that
 * computes its input, which must have no activation and no other reader:
 * opset 20's Gelu, or the subgraph PyTorch exports before it,
 * Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), matched node by node
 * with its constants checked, so nothing else passes for a GELU. */
#include "onnx/onnx_ops.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int imp_op_layer_norm(imp *im)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    int64_t axis = imp_attr_int(im, "axis", -1);
    if (x->rank != 1 || (axis != -1 && axis != 1))
        return imp_fail(im, "only a normalisation over the features of a flat [N, F] tensor "
                        "is supported");
    if (im->node->n_input < 3)
        return imp_fail(im, "needs its scale and bias (B) inputs");
    for (size_t k = 1; k < im->node->n_output; k++)
        if (im->node->output[k][0] && imp_consumers(im, im->node->output[k]) > 0)
            return imp_fail(im, "its Mean and InvStdDev outputs must be unused");
    const Onnx__TensorProto *scale = imp_const(im, 1);
    const Onnx__TensorProto *bias = scale ? imp_const(im, 2) : NULL;
    if (!bias)
        return -1;
    float eps = imp_attr_float(im, "epsilon", 1e-5f);
    if (!(eps > 0.0f && eps < 1.0f))
        return imp_fail(im, "epsilon must be in (0, 1)");
    imp_value xv = *x;
    const imp_value *in[1] = {&xv};
    int l = imp_add_layer(im, json_pack("{s:s,s:f}", "type", "layer_norm", "epsilon",
                                        (double)eps), in, 1);
    long d[1] = {xv.dim[0]};
    if (l < 0 || imp_weight(im, l, "layer_norm", "gamma", scale, 1, d, false) != 0 ||
        imp_weight(im, l, "layer_norm", "beta", bias, 1, d, false) != 0)
        return -1;
    return imp_bind(im, l, xv.rank, xv.dim);
}

/* x's dense layer takes activation `act`; the GELU's output is bound to it. */
static int gelu_fuse(imp *im, const imp_value *x, const char *act, const char *output)
{
    json_t *layer = x->layer >= 0 ? json_array_get(im->layers, (size_t)x->layer) : NULL;
    const char *type = layer ? json_string_value(json_object_get(layer, "type")) : NULL;
    if (!type || strcmp(type, "dense") != 0 || json_object_get(layer, "activation") ||
        x->layer != im->n_layers - 1)
        return imp_fail(im, "a GELU is supported only right after a Gemm or MatMul (a dense "
                        "layer), as its activation");
    json_object_set_new(layer, "activation", json_string(act));
    imp_value xv = *x;
    return imp_bind_name(im, output, xv.layer, xv.rank, xv.dim);
}

int imp_op_gelu(imp *im)
{
    static const char *const known[] = {"approximate", NULL};
    imp_value *x = imp_input(im, 0);
    if (!x || imp_attrs_known(im, known) != 0)
        return -1;
    const Onnx__AttributeProto *a = imp_attr(im, "approximate");
    const char *mode = a && a->has_s ? (const char *)a->s.data : "none";
    size_t len = a && a->has_s ? a->s.len : 4;
    bool tanh_form = len == 4 && memcmp(mode, "tanh", 4) == 0;
    if (!tanh_form && !(len == 4 && memcmp(mode, "none", 4) == 0))
        return imp_fail(im, "approximate must be \"none\" or \"tanh\"");
    if (imp_consumers(im, im->node->input[0]) != 1)
        return imp_fail(im, "its input has other readers");
    return gelu_fuse(im, x, tanh_form ? "gelu" : "gelu_exact", im->node->output[0]);
}

/* Whether node n's operator is op (op_type may be absent in a file). */
static bool pattern_is(const Onnx__NodeProto *n, const char *op)
{
    return n && n->op_type && strcmp(n->op_type, op) == 0;
}

/* The one node reading `name` (NULL when none or several). */
static const Onnx__NodeProto *pattern_reader(const imp *im, const char *name)
{
    const Onnx__NodeProto *found = NULL;
    for (size_t n = 0; n < im->g->n_node; n++) {
        const Onnx__NodeProto *node = im->g->node[n];
        for (size_t k = 0; k < node->n_input; k++)
            if (strcmp(node->input[k], name) == 0) {
                if (found && found != node)
                    return NULL;
                found = node;
            }
    }
    return found;
}

/* A scalar float constant named `name`: an initializer or a Constant
 * node's value, wherever it is in the graph. */
static bool pattern_scalar(const imp *im, const char *name, float *v)
{
    const Onnx__TensorProto *c = NULL;
    for (size_t i = 0; i < im->g->n_initializer && !c; i++)
        if (im->g->initializer[i]->name && strcmp(im->g->initializer[i]->name, name) == 0)
            c = im->g->initializer[i];
    for (size_t n = 0; n < im->g->n_node && !c; n++) {
        const Onnx__NodeProto *node = im->g->node[n];
        if (pattern_is(node, "Constant") && node->n_output == 1 &&
            strcmp(node->output[0], name) == 0 && node->n_attribute == 1 &&
            node->attribute[0]->t)
            c = node->attribute[0]->t;
    }
    return c && imp_const_count(c) == 1 && imp_const_f32(c, 0, v);
}

/* Node n is op with two inputs, one of them `from`; the other is *other. */
static bool pattern_step(const Onnx__NodeProto *n, const char *op, const char *from,
                         const char **other)
{
    if (!pattern_is(n, op) || n->n_input != 2 || n->n_output != 1)
        return false;
    bool first = strcmp(n->input[0], from) == 0;
    if (!first && strcmp(n->input[1], from) != 0)
        return false;
    *other = n->input[first ? 1 : 0];
    return true;
}

static bool near(float v, float want)
{
    return fabsf(v - want) <= 1e-6f * fabsf(want);
}

int imp_op_div(imp *im)
{
    const Onnx__NodeProto *div = im->node;
    imp_value *x = imp_input(im, 0);
    float c;
    if (!x || div->n_input != 2 || div->n_output != 1 ||
        !pattern_scalar(im, div->input[1], &c) || !near(c, 1.41421356f))
        return imp_fail(im, "Div is supported only as x / sqrt(2) in the Erf form of GELU");
    const Onnx__NodeProto *erf = pattern_reader(im, div->output[0]);
    const Onnx__NodeProto *add = pattern_is(erf, "Erf") && erf->n_output == 1 &&
                                         erf->n_input == 1
                                     ? pattern_reader(im, erf->output[0])
                                     : NULL;
    const char *one = NULL, *other = NULL, *half = NULL;
    float v1, v2;
    if (!pattern_step(add, "Add", add ? erf->output[0] : "", &one) ||
        !pattern_scalar(im, one, &v1) || v1 != 1.0f)
        return imp_fail(im, "Div is supported only as x / sqrt(2) in the Erf form of GELU");
    const Onnx__NodeProto *mul = pattern_reader(im, add->output[0]);
    if (!pattern_step(mul, "Mul", add->output[0], &other) || strcmp(other, div->input[0]) != 0)
        return imp_fail(im, "Div is supported only as x / sqrt(2) in the Erf form of GELU");
    const Onnx__NodeProto *mul2 = pattern_reader(im, mul->output[0]);
    if (!pattern_step(mul2, "Mul", mul->output[0], &half) || !pattern_scalar(im, half, &v2) ||
        v2 != 0.5f)
        return imp_fail(im, "Div is supported only as x / sqrt(2) in the Erf form of GELU");
    /* x feeds the Div and the Mul only. */
    if (imp_consumers(im, div->input[0]) != 2)
        return imp_fail(im, "the GELU's input has other readers");
    im->skip[0] = erf;
    im->skip[1] = add;
    im->skip[2] = mul;
    im->skip[3] = mul2;
    im->n_skip = 4;
    return gelu_fuse(im, x, "gelu_exact", mul2->output[0]);
}
