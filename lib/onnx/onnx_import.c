/* onnx_import.c — an ONNX file read under limits, decoded by protobuf-c,
 * and walked node by node (onnx_import.h): the values the graph computes,
 * the constants, the weights, the layers. The mapping of each operator is
 * onnx_ops.c's. */
#include "onnx/onnx_import_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_file.h"

void onnx_limits_default(onnx_limits *lim)
{
    lim->max_file_bytes = (size_t)512 << 20;
    lim->max_nodes = 20000;
    lim->max_initializer_bytes = (size_t)512 << 20;
    lim->max_dim = 1L << 24;
}

bool onnx_path_is_model(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

void onnx_model_clear(onnx_model *m)
{
    json_decref(m->model);
    tensorfile_free(m->tensors, m->n_tensors);
    memset(m, 0, sizeof *m);
}

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

static imp_value *imp_new_value(imp *im, const char *name)
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
    for (long i = 0; i < want; i++) {
        long src = i;
        if (transpose2) /* t is [d0, d1]; c is [d1, d0] */
            src = (i % dims[1]) * dims[0] + i / dims[1];
        imp_const_f32(c, src, &t->data[i]);
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

/* ---- the graph ------------------------------------------------------------ */

static bool imp_is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0)
            return true;
    return false;
}

/* The one real graph input: float32 [N, F] or [N, C, H, W]. */
static int imp_graph_input(imp *im, json_t **shape)
{
    const Onnx__GraphProto *g = im->g;
    const Onnx__ValueInfoProto *in = NULL;
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || imp_is_initializer(g, g->input[i]->name))
            continue;
        if (in) {
            snprintf(im->err, im->errlen, "the graph has more than one input (\"%.80s\", "
                     "\"%.80s\"); a model takes one", in->name, g->input[i]->name);
            return -1;
        }
        in = g->input[i];
    }
    if (!in) {
        snprintf(im->err, im->errlen, "the graph has no input");
        return -1;
    }
    const Onnx__TypeProto *t = in->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
        t->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
        !t->tensor_type->shape) {
        snprintf(im->err, im->errlen, "input \"%.80s\": expected a float32 tensor of known shape",
                 in->name);
        return -1;
    }
    const Onnx__TensorShapeProto *s = t->tensor_type->shape;
    if (s->n_dim != 2 && s->n_dim != 4) {
        snprintf(im->err, im->errlen, "input \"%.80s\": expected [N, features] or "
                 "[N, C, H, W], got rank %zu", in->name, s->n_dim);
        return -1;
    }
    imp_value *v = imp_new_value(im, in->name);
    if (!v) {
        snprintf(im->err, im->errlen, "out of memory");
        return -1;
    }
    v->layer = -1;
    v->rank = (int)s->n_dim - 1;
    *shape = json_array();
    for (size_t d = 1; d < s->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = s->dim[d];
        if (dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
            dim->dim_value < 1 || dim->dim_value > im->lim->max_dim) {
            snprintf(im->err, im->errlen, "input \"%.80s\": dimension %zu must be a number in "
                     "1..%ld (only the batch may be symbolic)", in->name, d, im->lim->max_dim);
            return -1;
        }
        v->dim[d - 1] = (long)dim->dim_value;
        json_array_append_new(*shape, json_integer(dim->dim_value));
    }
    return 0;
}

static int imp_constants(imp *im)
{
    size_t bytes = 0;
    for (size_t i = 0; i < im->g->n_initializer; i++) {
        const Onnx__TensorProto *c = im->g->initializer[i];
        if (c->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
            snprintf(im->err, im->errlen, "initializer \"%.80s\" is stored outside the file "
                     "(external data); save the model as one file", c->name ? c->name : "");
            return -1;
        }
        bytes += c->raw_data.len + 4 * c->n_float_data + 8 * c->n_int64_data;
        if (bytes > im->lim->max_initializer_bytes) {
            snprintf(im->err, im->errlen, "the initializers hold more than %zu bytes (the "
                     "import's limit)", im->lim->max_initializer_bytes);
            return -1;
        }
        imp_value *v = c->name ? imp_new_value(im, c->name) : NULL;
        if (!v) {
            snprintf(im->err, im->errlen, c->name ? "out of memory" : "an unnamed initializer");
            return -1;
        }
        v->layer = IMP_CONST;
        v->init = c;
    }
    return 0;
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

static int imp_output(imp *im, onnx_model *out)
{
    const Onnx__GraphProto *g = im->g;
    if (g->n_output != 1) {
        snprintf(im->err, im->errlen, "the graph has %zu outputs; a model has one", g->n_output);
        return -1;
    }
    imp_value *v = imp_find(im, g->output[0]->name ? g->output[0]->name : "");
    if (!v || v->layer < 0 || v->layer != im->n_layers - 1) {
        snprintf(im->err, im->errlen, "output \"%.80s\" must be computed by the graph's last "
                 "layer", g->output[0]->name ? g->output[0]->name : "");
        return -1;
    }
    if (v->rank != 1) {
        snprintf(im->err, im->errlen, "output \"%.80s\" must be [N, outputs]; flatten it in "
                 "the graph", g->output[0]->name);
        return -1;
    }
    out->outputs = v->dim[0];
    json_t *last = json_array_get(im->layers, (size_t)im->n_layers - 1);
    const char *type = json_string_value(json_object_get(last, "type"));
    out->logits = !type || strcmp(type, "softmax") != 0;
    return 0;
}

static int imp_walk(imp *im, onnx_model *out)
{
    json_t *shape = NULL;
    if ((long)im->g->n_node > im->lim->max_nodes) {
        snprintf(im->err, im->errlen, "the graph has %zu nodes, more than the import's limit "
                 "of %ld", im->g->n_node, im->lim->max_nodes);
        return -1;
    }
    if (imp_graph_input(im, &shape) != 0 || imp_constants(im) != 0) {
        json_decref(shape);
        return -1;
    }
    im->layers = json_array();
    out->model = json_pack("{s:o,s:O}", "input", shape, "layers", im->layers);
    if (!out->model) {
        snprintf(im->err, im->errlen, "out of memory");
        return -1;
    }
    for (size_t n = 0; n < im->g->n_node; n++) {
        im->node = im->g->node[n];
        bool done = false;
        for (int k = 0; k < im->n_skip; k++)
            done = done || im->skip[k] == im->node;
        if (!done && imp_op(im) != 0)
            return -1;
    }
    im->node = NULL;
    if (im->n_layers == 0) {
        snprintf(im->err, im->errlen, "the graph computes nothing the engine has a layer for");
        return -1;
    }
    return imp_output(im, out);
}

static int imp_check_opset(const Onnx__ModelProto *m, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *dom = m->opset_import[i]->domain;
        if (dom && dom[0] && strcmp(dom, "ai.onnx") != 0) {
            snprintf(err, errlen, "operator set \"%.60s\" is not supported (only the default "
                     "ai.onnx domain)", dom);
            return -1;
        }
    }
    return 0;
}

int onnx_import_buffer(const uint8_t *buf, size_t len, const onnx_limits *lim,
                       bool want_weights, onnx_model *out, char *err, size_t errlen)
{
    onnx_limits dflt;
    if (!lim) {
        onnx_limits_default(&dflt);
        lim = &dflt;
    }
    memset(out, 0, sizeof *out);
    if (len > lim->max_file_bytes) {
        snprintf(err, errlen, "the file has %zu bytes, more than the import's limit of %zu",
                 len, lim->max_file_bytes);
        return -1;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m || !m->graph) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        snprintf(err, errlen, "not an ONNX model (the protobuf does not decode as a "
                 "ModelProto with a graph)");
        return -1;
    }
    imp im = {.g = m->graph, .lim = lim, .want_weights = want_weights, .err = err,
              .last_type_dense_nobias = -1,
              .errlen = errlen};
    int rc = imp_check_opset(m, err, errlen) == 0 ? imp_walk(&im, out) : -1;
    json_decref(im.layers);
    free(im.v);
    if (rc == 0) {
        out->tensors = im.t;
        out->n_tensors = im.nt;
    } else {
        tensorfile_free(im.t, im.nt);
        json_decref(out->model);
        memset(out, 0, sizeof *out);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}

int onnx_import_file(const char *path, const onnx_limits *lim, bool want_weights,
                     onnx_model *out, char *err, size_t errlen)
{
    onnx_limits dflt;
    if (!lim) {
        onnx_limits_default(&dflt);
        lim = &dflt;
    }
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size > lim->max_file_bytes) {
        close(fd);
        snprintf(err, errlen, "%s: %lld bytes, more than the import's limit of %zu", path,
                 (long long)st.st_size, lim->max_file_bytes);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len + 1);
    size_t got = 0;
    while (buf && got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != len) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
        return -1;
    }
    int rc = onnx_import_buffer(buf, len, lim, want_weights, out, err, errlen);
    free(buf);
    return rc;
}
