/* onnx_import.c — an ONNX file read under limits, decoded by protobuf-c,
 * and walked node by node (onnx_import.h): the values the graph computes,
 * the constants, the weights, the layers. The mapping of each operator is
 * onnx_ops.c's, the state they share onnx_import_state.c's. */
#include "onnx/onnx_import_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_ops.h"

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

static bool imp_is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0)
            return true;
    return false;
}

/* The graph input's type and rank, for messages. */
static bool imp_input_tokens(const Onnx__TypeProto *t)
{
    int32_t e = t->tensor_type->elem_type;
    return e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
}

/* The one real graph input: float32 [N, F] or [N, C, H, W], or token ids
 * int64 [N, T] (an embedding's Gather sets the model's {"tokens": V}). */
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
        !t->tensor_type->shape ||
        (t->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
         !imp_input_tokens(t))) {
        snprintf(im->err, im->errlen, "input \"%.80s\": expected a float32 tensor or int64 "
                 "token ids of known rank", in->name);
        return -1;
    }
    const Onnx__TensorShapeProto *s = t->tensor_type->shape;
    bool tokens = imp_input_tokens(t);
    if (tokens ? s->n_dim != 2 : s->n_dim != 2 && s->n_dim != 4) {
        snprintf(im->err, im->errlen, tokens ? "input \"%.80s\": expected token ids [N, T], "
                 "got rank %zu" : "input \"%.80s\": expected [N, features] or [N, C, H, W], "
                 "got rank %zu", in->name, s->n_dim);
        return -1;
    }
    imp_value *v = imp_new_value(im, in->name);
    if (!v) {
        snprintf(im->err, im->errlen, "out of memory");
        return -1;
    }
    v->layer = -1;
    v->rank = (int)s->n_dim - 1;
    v->kind = tokens ? IMP_TOKENS : IMP_PLAIN;
    *shape = tokens ? json_null() : json_array();
    for (size_t d = 1; d < s->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = s->dim[d];
        bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (tokens && !known)
            continue; /* the steps may be symbolic: data.max_length bounds them */
        if (!known || dim->dim_value < 1 || dim->dim_value > im->lim->max_dim) {
            snprintf(im->err, im->errlen, "input \"%.80s\": dimension %zu must be a number in "
                     "1..%ld (only the batch may be symbolic)", in->name, d, im->lim->max_dim);
            return -1;
        }
        v->dim[d - 1] = (long)dim->dim_value;
        if (!tokens)
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

static int imp_output(imp *im, onnx_model *out)
{
    const Onnx__GraphProto *g = im->g;
    if (g->n_output != 1) {
        snprintf(im->err, im->errlen, "the graph has %zu outputs; a model has one", g->n_output);
        return -1;
    }
    imp_value *v = imp_find(im, g->output[0]->name ? g->output[0]->name : "");
    if (!v || v->layer < 0 || v->layer != im->n_layers - 1 ||
        (v->kind != IMP_PLAIN && v->kind != IMP_STEPS)) {
        snprintf(im->err, im->errlen, "output \"%.80s\" must be computed by the graph's last "
                 "layer", g->output[0]->name ? g->output[0]->name : "");
        return -1;
    }
    if (v->kind != IMP_STEPS && v->rank != 1) {
        snprintf(im->err, im->errlen, "output \"%.80s\" must be [N, outputs]; flatten it in "
                 "the graph", g->output[0]->name);
        return -1;
    }
    /* A per-step output is [N, T, outputs] (data.per_step_labels). */
    out->outputs = v->kind == IMP_STEPS ? v->dim[1] : v->dim[0];
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
    im->model = out->model;
    for (size_t n = 0; n < im->g->n_node; n++) {
        im->node = im->g->node[n];
        bool done = false;
        for (int k = 0; k < im->n_skip; k++)
            done = done || im->skip[k] == im->node;
        if (!done && imp_op(im) != 0)
            return -1;
    }
    im->node = NULL;
    if (json_is_null(json_object_get(out->model, "input"))) {
        snprintf(im->err, im->errlen, "input \"%.80s\": token ids must feed a Gather from an "
                 "embedding table [V, D]", im->v[0].name);
        return -1;
    }
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
