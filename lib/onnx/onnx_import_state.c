/* onnx_import_state.c — the importer's state as the operator mappers
 * (onnx_ops*.c) and the graph walk (onnx_import.c) use it: the values the
 * graph computes, its constants, the weights copied under the engine's
 * names, the layers appended, the node's attributes, and errors naming the
 * node. It calls neither, so lib/onnx's calls run one way: onnx_import.c
 * -> onnx_ops*.c -> this file. */
#include "onnx/onnx_import_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

int imp_fail(imp *im, const char *fmt, ...)
{
    size_t used = 0;
    if (im->node)
        used = (size_t)snprintf(im->err, im->errlen, "node \"%.80s\" (%.40s): ",
                                im->node->name && im->node->name[0] ? im->node->name
                                : im->node->n_output ? im->node->output[0] : "",
                                im->node->op_type ? im->node->op_type : "");
    if (used < im->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(im->err + used, im->errlen - used, fmt, ap);
        va_end(ap);
    }
    return -1;
}

imp_value *imp_find(imp *im, const char *name)
{
    for (int i = im->nv - 1; i >= 0; i--)
        if (strcmp(im->v[i].name, name) == 0)
            return &im->v[i];
    return NULL;
}

imp_value *imp_new_value(imp *im, const char *name)
{
    if (im->nv == im->capv) {
        int cap = im->capv ? 2 * im->capv : 64;
        imp_value *v = realloc(im->v, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        im->v = v;
        im->capv = cap;
    }
    imp_value *v = &im->v[im->nv++];
    memset(v, 0, sizeof *v);
    v->name = name;
    return v;
}

const char *imp_kind_name(imp_kind kind)
{
    static const char *const names[] = {
        [IMP_PLAIN] = "a tensor",
        [IMP_TOKENS] = "the token ids (only an embedding's Gather reads them)",
        [IMP_SEQ] = "a sequence [N, T, F]",
        [IMP_SEQ_TMAJOR] = "a time-major sequence [T, N, F]",
        [IMP_RNN_Y] = "a recurrent layer's Y (its last step, or all steps batch first)",
        [IMP_RNN_Y_TNU] = "a recurrent layer's Y (its last step, or all steps batch first)",
        [IMP_RNN_Y_NTU] = "a recurrent layer's Y [N, T, U] (its last step, a per-step MatMul, "
                          "the next LSTM/GRU or a mean over time)",
        [IMP_RNN_Y_TNDU] = "a bidirectional Y [T, N, 2, U] (only its reshape to [T, N, 2U])",
        [IMP_RNN_H] = "a recurrent layer's Y_h (only Y_h[-1] is supported)",
        [IMP_RNN_H_DIR] = "one direction of a bidirectional Y_h (only the two concatenated, "
                          "forward first, are supported)",
        [IMP_RNN_C] = "an LSTM's cell state Y_c (not supported)",
        [IMP_SHAPE] = "a shape (only an initial state's ConstantOfShape reads it)",
        [IMP_ZEROS] = "zeros of a computed shape (only an initial state is supported)",
        [IMP_STEPS] = "a per-step result [N, T, F] (only a bias Add, or the graph's output)",
    };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

imp_value *imp_input(imp *im, int k)
{
    if (k >= (int)im->node->n_input || !im->node->input[k][0]) {
        imp_fail(im, "input %d is missing", k);
        return NULL;
    }
    imp_value *v = imp_find(im, im->node->input[k]);
    if (!v) {
        imp_fail(im, "input \"%.80s\" is not computed before it", im->node->input[k]);
        return NULL;
    }
    if (v->layer == IMP_CONST) {
        imp_fail(im, "input %d (\"%.80s\") is a constant; only a computed tensor is supported "
                 "there", k, v->name);
        return NULL;
    }
    if (v->kind != IMP_PLAIN) {
        imp_fail(im, "input %d (\"%.80s\") is %s, which this operator is not supported on",
                 k, v->name, imp_kind_name(v->kind));
        return NULL;
    }
    return v;
}

const Onnx__TensorProto *imp_const(imp *im, int k)
{
    if (k >= (int)im->node->n_input || !im->node->input[k][0]) {
        imp_fail(im, "input %d is missing", k);
        return NULL;
    }
    imp_value *v = imp_find(im, im->node->input[k]);
    if (!v || v->layer != IMP_CONST) {
        imp_fail(im, "input %d (\"%.80s\") must be an initializer or a Constant", k,
                 im->node->input[k]);
        return NULL;
    }
    return v->init;
}

int imp_bind(imp *im, int layer, int rank, const long *dim)
{
    if (im->node->n_output < 1)
        return imp_fail(im, "has no output");
    return imp_bind_name(im, im->node->output[0], layer, rank, dim);
}

int imp_bind_name(imp *im, const char *name, int layer, int rank, const long *dim)
{
    imp_value *v = imp_new_value(im, name);
    if (!v)
        return imp_fail(im, "out of memory");
    v->layer = layer;
    v->rank = rank;
    for (int r = 0; r < rank; r++)
        v->dim[r] = dim[r];
    return 0;
}

int imp_alias(imp *im, const imp_value *src)
{
    imp_value copy = *src;
    return imp_bind(im, copy.layer, copy.rank, copy.dim);
}

int imp_add_layer(imp *im, json_t *layer, const imp_value *const *inputs, int n)
{
    if (!layer)
        return imp_fail(im, "out of memory");
    int index = im->n_layers;
    bool plain = n == 1 && inputs[0]->layer == index - 1;
    if (!plain) {
        json_t *a = json_array();
        for (int k = 0; k < n; k++)
            json_array_append_new(a, json_integer(inputs[k]->layer));
        json_object_set_new(layer, "inputs", a);
    }
    if (json_array_append_new(im->layers, layer) != 0)
        return imp_fail(im, "out of memory");
    im->n_layers++;
    return index;
}

long imp_const_count(const Onnx__TensorProto *c)
{
    if (c->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return -1;
    long n = 1;
    for (size_t i = 0; i < c->n_dims; i++) {
        if (c->dims[i] < 0 || c->dims[i] > (1L << 31))
            return -1;
        n *= (long)c->dims[i];
        if (n > (1L << 31))
            return -1;
    }
    size_t have;
    switch (c->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        have = c->raw_data.len ? c->raw_data.len / 4 : c->n_float_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        have = c->raw_data.len ? c->raw_data.len / 8 : c->n_int64_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        have = c->raw_data.len ? c->raw_data.len / 4 : c->n_int32_data;
        break;
    default:
        return -1;
    }
    return (long)have == n ? n : -1;
}

bool imp_const_i64(const Onnx__TensorProto *c, long i, int64_t *out)
{
    if (c->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        if (c->raw_data.len) {
            *out = (int64_t)io_get_le64(c->raw_data.data + 8 * i);
            return true;
        }
        *out = c->int64_data[i];
        return true;
    }
    if (c->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        *out = c->raw_data.len ? (int32_t)io_get_le32(c->raw_data.data + 4 * i)
                               : c->int32_data[i];
        return true;
    }
    return false;
}

bool imp_const_f32(const Onnx__TensorProto *c, long i, float *out)
{
    if (c->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return false;
    if (c->raw_data.len) {
        uint32_t u = io_get_le32(c->raw_data.data + 4 * i);
        memcpy(out, &u, 4);
    } else {
        *out = c->float_data[i];
    }
    return true;
}

int imp_weight_alloc(imp *im, int layer, const char *type, const char *param, int rank,
                     const long *dims, float **data)
{
    *data = NULL;
    long want = 1;
    for (int r = 0; r < rank; r++)
        want *= dims[r];
    if (!im->want_weights)
        return 0;
    if (im->nt == im->capt) {
        int cap = im->capt ? 2 * im->capt : 16;
        tensor_entry *t = realloc(im->t, (size_t)cap * sizeof *t);
        if (!t)
            return imp_fail(im, "out of memory");
        im->t = t;
        im->capt = cap;
    }
    tensor_entry *t = &im->t[im->nt];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%d.%s.%s", layer, type, param);
    t->rank = rank;
    for (int r = 0; r < rank; r++)
        t->dims[r] = dims[r];
    t->data = malloc((size_t)(want > 0 ? want : 1) * sizeof *t->data);
    if (!t->data)
        return imp_fail(im, "out of memory");
    im->nt++;
    *data = t->data;
    return 0;
}

int imp_weight(imp *im, int layer, const char *type, const char *param,
               const Onnx__TensorProto *c, int rank, const long *dims, bool transpose2)
{
    long want = 1;
    for (int r = 0; r < rank; r++)
        want *= dims[r];
    long n = imp_const_count(c);
    if (n < 0 || c->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return imp_fail(im, "initializer \"%.80s\" must hold float32 data in the file",
                        c->name ? c->name : "");
    if (n != want)
        return imp_fail(im, "initializer \"%.80s\" has %ld values, the %s %s needs %ld",
                        c->name ? c->name : "", n, type, param, want);
    float *data;
    if (imp_weight_alloc(im, layer, type, param, rank, dims, &data) != 0)
        return -1;
    for (long i = 0; data && i < want; i++) {
        long src = i;
        if (transpose2) /* t is [d0, d1]; c is [d1, d0] */
            src = (i % dims[1]) * dims[0] + i / dims[1];
        imp_const_f32(c, src, &data[i]);
    }
    return 0;
}

const Onnx__AttributeProto *imp_attr(const imp *im, const char *name)
{
    for (size_t i = 0; i < im->node->n_attribute; i++)
        if (im->node->attribute[i]->name && strcmp(im->node->attribute[i]->name, name) == 0)
            return im->node->attribute[i];
    return NULL;
}

int imp_attrs_known(imp *im, const char *const *known)
{
    for (size_t i = 0; i < im->node->n_attribute; i++) {
        const char *name = im->node->attribute[i]->name ? im->node->attribute[i]->name : "";
        bool ok = false;
        for (int k = 0; known[k] && !ok; k++)
            ok = strcmp(known[k], name) == 0;
        if (!ok)
            return imp_fail(im, "attribute %.60s is not supported", name);
    }
    return 0;
}

int64_t imp_attr_int(const imp *im, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = imp_attr(im, name);
    return a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT ? a->i : dflt;
}

float imp_attr_float(const imp *im, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = imp_attr(im, name);
    return a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ? a->f : dflt;
}

int imp_attr_ints(const imp *im, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = imp_attr(im, name);
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return 0;
    int n = (int)(a->n_ints < (size_t)max ? a->n_ints : (size_t)max);
    for (int i = 0; i < n; i++)
        out[i] = a->ints[i];
    return a->n_ints > (size_t)max ? max + 1 : n;
}

int imp_consumers(const imp *im, const char *name)
{
    int count = 0;
    for (size_t n = 0; n < im->g->n_node; n++)
        for (size_t k = 0; k < im->g->node[n]->n_input; k++)
            count += strcmp(im->g->node[n]->input[k], name) == 0;
    for (size_t o = 0; o < im->g->n_output; o++)
        count += im->g->output[o]->name && strcmp(im->g->output[o]->name, name) == 0;
    return count;
}
