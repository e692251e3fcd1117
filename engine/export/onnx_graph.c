/* onnx_graph.c — building an ONNX graph in protobuf-c's structs
 * (onnx_graph.h). Pointer arrays grow by doubling; every block is
 * recorded in the arena so one call frees the whole graph. */
#include "export/onnx_graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

#define ONNX_ELEM_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define ONNX_ELEM_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static void *graph_keep(onnx_graph *g, void *p)
{
    if (!p) {
        g->failed = true;
        return NULL;
    }
    if (g->n_owned == g->cap_owned) {
        size_t cap = g->cap_owned ? 2 * g->cap_owned : 256;
        void **o = realloc(g->owned, cap * sizeof *o);
        if (!o) {
            free(p);
            g->failed = true;
            return NULL;
        }
        g->owned = o;
        g->cap_owned = cap;
    }
    g->owned[g->n_owned++] = p;
    return p;
}

static void *graph_alloc(onnx_graph *g, size_t size)
{
    return g->failed ? NULL : graph_keep(g, calloc(1, size ? size : 1));
}

static char *graph_strdup(onnx_graph *g, const char *s)
{
    return g->failed ? NULL : graph_keep(g, strdup(s));
}

/* Append p to the pointer array *arr of *n entries and capacity *cap; the
 * array itself is not in the arena (freed by onnx_graph_free). */
static bool graph_push(onnx_graph *g, void ***arr, size_t *n, size_t *cap, void *p)
{
    if (g->failed || !p)
        return g->failed = true, false;
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        void **a = realloc(*arr, c * sizeof *a);
        if (!a)
            return g->failed = true, false;
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
    return true;
}

void onnx_graph_init(onnx_graph *g, const char *name)
{
    memset(g, 0, sizeof *g);
    onnx__graph_proto__init(&g->proto);
    g->proto.name = graph_strdup(g, name);
}

void onnx_graph_free(onnx_graph *g)
{
    for (size_t i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    free(g->owned);
    free(g->proto.node);
    free(g->proto.initializer);
    free(g->proto.input);
    free(g->proto.output);
    memset(g, 0, sizeof *g);
}

const char *onnx_graph_name(onnx_graph *g, const char *stem)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s_%d", stem, g->counter++);
    return graph_strdup(g, buf);
}

Onnx__NodeProto *onnx_graph_node(onnx_graph *g, const char *op_type, const char *const *inputs,
                                 int n_inputs, const char *output)
{
    Onnx__NodeProto *n = graph_alloc(g, sizeof *n);
    char **in = graph_alloc(g, (size_t)n_inputs * sizeof *in);
    char **out = graph_alloc(g, sizeof *out);
    if (!n || !in || !out)
        return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_inputs; i++)
        in[i] = graph_strdup(g, inputs[i] ? inputs[i] : "");
    out[0] = (char *)(output ? graph_strdup(g, output) : onnx_graph_name(g, op_type));
    n->op_type = graph_strdup(g, op_type);
    n->name = out[0] ? graph_strdup(g, out[0]) : NULL;
    n->n_input = (size_t)n_inputs;
    n->input = in;
    n->n_output = 1;
    n->output = out;
    size_t n_node = g->proto.n_node;
    if (!graph_push(g, (void ***)&g->proto.node, &n_node, &g->cap_node, n))
        return NULL;
    g->proto.n_node = n_node;
    return g->failed ? NULL : n;
}

const char *onnx_node_out(const Onnx__NodeProto *n)
{
    return n && n->n_output >= 1 && n->output[0] ? n->output[0] : "";
}

static Onnx__AttributeProto *node_attr(onnx_graph *g, Onnx__NodeProto *n, const char *name,
                                       Onnx__AttributeProto__AttributeType type)
{
    if (!n || g->failed)
        return NULL;
    Onnx__AttributeProto *a = graph_alloc(g, sizeof *a);
    Onnx__AttributeProto **arr = graph_alloc(g, (n->n_attribute + 1) * sizeof *arr);
    if (!a || !arr)
        return NULL;
    onnx__attribute_proto__init(a);
    a->name = graph_strdup(g, name);
    a->has_type = true;
    a->type = type;
    /* Nodes carry a handful of attributes: a fresh array each time keeps
     * every block in the arena. */
    if (n->n_attribute)
        memcpy(arr, n->attribute, n->n_attribute * sizeof *arr);
    arr[n->n_attribute++] = a;
    n->attribute = arr;
    return a;
}

void onnx_node_int(onnx_graph *g, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = node_attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) {
        a->has_i = true;
        a->i = v;
    }
}

void onnx_node_float(onnx_graph *g, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a =
        node_attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) {
        a->has_f = true;
        a->f = v;
    }
}

void onnx_node_ints(onnx_graph *g, Onnx__NodeProto *n, const char *name, const int64_t *v,
                    int count)
{
    Onnx__AttributeProto *a = node_attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *copy = a ? graph_alloc(g, (size_t)count * sizeof *copy) : NULL;
    if (copy) {
        memcpy(copy, v, (size_t)count * sizeof *copy);
        a->n_ints = (size_t)count;
        a->ints = copy;
    }
}

void onnx_node_string(onnx_graph *g, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a =
        node_attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *copy = a ? graph_strdup(g, v) : NULL;
    if (copy) {
        a->has_s = true;
        a->s.data = (uint8_t *)copy;
        a->s.len = strlen(copy);
    }
}

const char *onnx_node_add_output(onnx_graph *g, Onnx__NodeProto *n)
{
    if (!n || g->failed)
        return "";
    char **out = graph_alloc(g, (n->n_output + 1) * sizeof *out);
    const char *name = out ? onnx_graph_name(g, n->op_type) : NULL;
    if (!name)
        return "";
    memcpy(out, n->output, n->n_output * sizeof *out);
    out[n->n_output++] = (char *)name;
    n->output = out;
    return name;
}

static Onnx__TensorProto *graph_tensor(onnx_graph *g, const char *name, const int64_t *dims,
                                       int rank, int32_t type)
{
    Onnx__TensorProto *t = graph_alloc(g, sizeof *t);
    int64_t *d = graph_alloc(g, (size_t)rank * sizeof *d);
    if (!t || !d)
        return NULL;
    onnx__tensor_proto__init(t);
    memcpy(d, dims, (size_t)rank * sizeof *d);
    t->n_dims = (size_t)rank;
    t->dims = d;
    t->has_data_type = true;
    t->data_type = type;
    t->name = graph_strdup(g, name);
    size_t n_init = g->proto.n_initializer;
    if (!graph_push(g, (void ***)&g->proto.initializer, &n_init, &g->cap_init, t))
        return NULL;
    g->proto.n_initializer = n_init;
    return g->failed ? NULL : t;
}

static size_t dims_count(const int64_t *dims, int rank)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

const char *onnx_graph_floats(onnx_graph *g, const char *name, const int64_t *dims, int rank,
                              const float *data)
{
    Onnx__TensorProto *t = graph_tensor(g, name, dims, rank, ONNX_ELEM_FLOAT);
    size_t n = dims_count(dims, rank);
    /* raw_data (little-endian, as ONNX defines it) rather than float_data:
     * one copy to pack and one to parse, where a packed repeated field is
     * walked value by value by protobuf-c and by Python's protobuf. */
    unsigned char *raw = t ? graph_alloc(g, n * 4) : NULL;
    if (!raw)
        return "";
    io_floats_to_le(raw, data, n);
    t->has_raw_data = true;
    t->raw_data.len = n * 4;
    t->raw_data.data = raw;
    return t->name;
}

const char *onnx_graph_int64s(onnx_graph *g, const char *name, const int64_t *dims, int rank,
                              const int64_t *data)
{
    Onnx__TensorProto *t = graph_tensor(g, name, dims, rank, ONNX_ELEM_INT64);
    size_t n = dims_count(dims, rank);
    int64_t *copy = t ? graph_alloc(g, n * sizeof *copy) : NULL;
    if (!copy)
        return "";
    memcpy(copy, data, n * sizeof *copy);
    t->n_int64_data = n;
    t->int64_data = copy;
    return t->name;
}

/* A value info [N, dims...] of element type elem. */
static Onnx__ValueInfoProto *graph_value_info(onnx_graph *g, const char *name,
                                              const int64_t *dims, int rank, int32_t elem)
{
    Onnx__ValueInfoProto *v = graph_alloc(g, sizeof *v);
    Onnx__TypeProto *tp = graph_alloc(g, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = graph_alloc(g, sizeof *tt);
    Onnx__TensorShapeProto *sh = graph_alloc(g, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dv = graph_alloc(g, (size_t)(rank + 1) * sizeof *dv);
    if (!v || !tp || !tt || !sh || !dv)
        return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i <= rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = graph_alloc(g, sizeof *d);
        if (!d)
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        if (i == 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = graph_strdup(g, "N");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i - 1];
        }
        dv[i] = d;
    }
    sh->n_dim = (size_t)rank + 1;
    sh->dim = dv;
    tt->has_elem_type = true;
    tt->elem_type = elem;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = graph_strdup(g, name);
    v->type = tp;
    return g->failed ? NULL : v;
}

void onnx_graph_input(onnx_graph *g, const char *name, const int64_t *dims, int rank)
{
    size_t cap = g->proto.n_input;
    Onnx__ValueInfoProto *v = graph_value_info(g, name, dims, rank, ONNX_ELEM_FLOAT);
    if (v && graph_push(g, (void ***)&g->proto.input, &g->proto.n_input, &cap, v))
        return;
}

void onnx_graph_output(onnx_graph *g, const char *name, const int64_t *dims, int rank)
{
    size_t cap = g->proto.n_output;
    Onnx__ValueInfoProto *v = graph_value_info(g, name, dims, rank, ONNX_ELEM_FLOAT);
    if (v && graph_push(g, (void ***)&g->proto.output, &g->proto.n_output, &cap, v))
        return;
}

void onnx_graph_input_int64(onnx_graph *g, const char *name, const int64_t *dims, int rank)
{
    size_t cap = g->proto.n_input;
    Onnx__ValueInfoProto *v = graph_value_info(g, name, dims, rank, ONNX_ELEM_INT64);
    if (v && graph_push(g, (void ***)&g->proto.input, &g->proto.n_input, &cap, v))
        return;
}
