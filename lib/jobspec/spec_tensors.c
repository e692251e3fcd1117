/* spec_tensors.c — a model's weight tensors from its spec (spec_tensors.h).
 * Per layer type, the names and shapes its engine layer registers
 * (engine/layers/: layer_add_tensor), in the same order; the engine test
 * test_spec_tensors compares the two lists on every preset. */
#include "jobspec/spec_tensors.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors per layer at most (a bidirectional's six; attention's eight). */
#define SPEC_LAYER_TENSORS 8

typedef struct spec_tensor_list {
    tensor_entry *v;
    int n;
    int layer;
    const char *type;
} spec_tensor_list;

static void spec_tensor_add(spec_tensor_list *t, const char *name, int rank, long d0, long d1,
                            long d2, long d3)
{
    tensor_entry *e = &t->v[t->n++];
    snprintf(e->name, sizeof e->name, "%d.%s.%s", t->layer, t->type, name);
    e->rank = rank;
    const long dims[4] = {d0, d1, d2, d3};
    for (int i = 0; i < rank; i++)
        e->dims[i] = dims[i];
    e->data = NULL;
}

/* A recurrent cell's kernel {F, G}, recurrent kernel {U, G} and bias ({G},
 * or {2, G} for a gru with reset_after). */
static void spec_tensors_rnn(spec_tensor_list *t, const spec_layer *s, spec_layer_type cell,
                             const char *const names[3])
{
    long f = s->token_vocab > 0 ? s->token_vocab : s->in_shape.dim[1];
    long u = s->units, g = (cell == LAYER_LSTM ? 4 : 3) * u;
    spec_tensor_add(t, names[0], 2, f, g, 0, 0);
    spec_tensor_add(t, names[1], 2, u, g, 0, 0);
    if (cell == LAYER_GRU && s->reset_after)
        spec_tensor_add(t, names[2], 2, 2, g, 0, 0);
    else
        spec_tensor_add(t, names[2], 1, g, 0, 0, 0);
}

static void spec_tensors_attention(spec_tensor_list *t, const job_spec *spec,
                                   const spec_layer *s)
{
    long steps = s->in_shape.dim[0], f = s->in_shape.dim[1], h = s->heads, k = s->key_dim;
    long fkv = f;
    if (s->n_inputs == 2 && steps > 0) {
        int in = s->inputs[1];
        fkv = (in < 0 ? spec_shape_size(&spec->input)
                      : spec_shape_size(&spec->layers[in].out_shape)) / steps;
    }
    spec_tensor_add(t, "query_kernel", 3, f, h, k, 0);
    if (s->use_bias)
        spec_tensor_add(t, "query_bias", 2, h, k, 0, 0);
    spec_tensor_add(t, "key_kernel", 3, fkv, h, k, 0);
    if (s->use_bias)
        spec_tensor_add(t, "key_bias", 2, h, k, 0, 0);
    spec_tensor_add(t, "value_kernel", 3, fkv, h, k, 0);
    if (s->use_bias)
        spec_tensor_add(t, "value_bias", 2, h, k, 0, 0);
    spec_tensor_add(t, "output_kernel", 3, h, k, f, 0);
    if (s->use_bias)
        spec_tensor_add(t, "output_bias", 1, f, 0, 0, 0);
}

static void spec_tensors_layer(spec_tensor_list *t, const job_spec *spec, const spec_layer *s)
{
    static const char *const rnn[3] = {"kernel", "recurrent_kernel", "bias"};
    static const char *const fwd[3] = {"forward_kernel", "forward_recurrent_kernel",
                                       "forward_bias"};
    static const char *const bwd[3] = {"backward_kernel", "backward_recurrent_kernel",
                                       "backward_bias"};
    const spec_shape *in = &s->in_shape;
    /* Dense and layer_norm act per step of a sequence. */
    long steps = in->rank == 2 ? in->dim[0] : 1;
    long row = steps > 0 ? spec_shape_size(in) / steps : 0;
    switch (s->type) {
    case LAYER_DENSE:
        if (s->tied) /* its weight is the embedding's table */
            return;
        spec_tensor_add(t, "weight", 2, row, s->units, 0, 0);
        if (s->use_bias)
            spec_tensor_add(t, "bias", 1, s->units, 0, 0, 0);
        return;
    case LAYER_CONV2D: {
        long groups = s->groups > 0 ? s->groups : 1;
        spec_tensor_add(t, "weight", 4, s->filters, in->dim[0] / groups, s->kernel[0],
                        s->kernel[1]);
        if (s->use_bias)
            spec_tensor_add(t, "bias", 1, s->filters, 0, 0, 0);
        return;
    }
    case LAYER_CONV1D:
        spec_tensor_add(t, "kernel", 3, s->kernel[0], in->dim[1], s->filters, 0);
        if (s->use_bias)
            spec_tensor_add(t, "bias", 1, s->filters, 0, 0, 0);
        return;
    case LAYER_BATCHNORM:
        spec_tensor_add(t, "gamma", 1, in->dim[0], 0, 0, 0);
        spec_tensor_add(t, "beta", 1, in->dim[0], 0, 0, 0);
        spec_tensor_add(t, "running_mean", 1, in->dim[0], 0, 0, 0);
        spec_tensor_add(t, "running_var", 1, in->dim[0], 0, 0, 0);
        return;
    case LAYER_LAYER_NORM:
        spec_tensor_add(t, "gamma", 1, row, 0, 0, 0);
        spec_tensor_add(t, "beta", 1, row, 0, 0, 0);
        return;
    case LAYER_EMBEDDING:
        spec_tensor_add(t, "embeddings", 2, s->input_dim, s->output_dim, 0, 0);
        return;
    case LAYER_POSITIONAL_EMBEDDING:
        spec_tensor_add(t, "embeddings", 2, s->max_length, in->dim[1], 0, 0);
        return;
    case LAYER_LSTM:
    case LAYER_GRU:
        spec_tensors_rnn(t, s, s->type, rnn);
        return;
    case LAYER_BIDIRECTIONAL:
        spec_tensors_rnn(t, s, s->rnn, fwd);
        spec_tensors_rnn(t, s, s->rnn, bwd);
        return;
    case LAYER_MULTI_HEAD_ATTENTION:
        spec_tensors_attention(t, spec, s);
        return;
    default: /* no weights: activations, pools, dropout, flatten, add, concat */
        return;
    }
}

int spec_tensors(const job_spec *spec, tensor_entry **out)
{
    size_t cap = (size_t)spec->n_layers * SPEC_LAYER_TENSORS + 1;
    spec_tensor_list t = {calloc(cap, sizeof *t.v), 0, 0, NULL};
    if (!t.v)
        return -1;
    for (int i = 0; i < spec->n_layers; i++) {
        t.layer = i;
        t.type = spec_layer_type_name(spec->layers[i].type);
        spec_tensors_layer(&t, spec, &spec->layers[i]);
    }
    *out = t.v;
    return t.n;
}

int spec_tensors_compare(const tensor_entry *mine, int count, const tensor_entry *file,
                         int n_file, const char *what, const char *base, char *err,
                         size_t errlen)
{
    for (int i = 0; i < count; i++) {
        const tensor_entry *src = NULL;
        for (int k = 0; k < n_file && !src; k++)
            if (strcmp(file[k].name, mine[i].name) == 0)
                src = &file[k];
        char a[96], b[96];
        tensor_entry_shape_str(&mine[i], b, sizeof b);
        if (!src) {
            snprintf(err, errlen, "%s: %s has no tensor \"%s\" (the model's, shape %s)", what,
                     base, mine[i].name, b);
            return -1;
        }
        if (!tensor_entry_same_shape(src, &mine[i])) {
            tensor_entry_shape_str(src, a, sizeof a);
            snprintf(err, errlen, "%s: tensor \"%s\" is %s in %s but the model needs %s",
                     what, mine[i].name, a, base, b);
            return -1;
        }
    }
    return 0;
}

int spec_tensors_read_file(const char *path, tensor_entry **file, int *n_file, char *why,
                           size_t whylen)
{
    size_t len = strlen(path);
    bool npz = len >= 4 && strcmp(path + len - 4, ".npz") == 0;
    if (npz)
        return npz_read(path, file, n_file, why, whylen);
    if (safetensors_read(path, file, n_file, why, whylen) == 0)
        return 0;
    return npz_read(path, file, n_file, why, whylen);
}

int spec_tensors_check_file(const job_spec *spec, const char *path, char *err, size_t errlen)
{
    tensor_entry *file = NULL, *mine = NULL;
    int n_file = 0;
    char why[600];
    if (spec_tensors_read_file(path, &file, &n_file, why, sizeof why) != 0) {
        snprintf(err, errlen, "training.init_from: %s", why);
        return -1;
    }
    int count = spec_tensors(spec, &mine);
    int rc = -1;
    if (count < 0) {
        snprintf(err, errlen, "training.init_from: out of memory");
    } else {
        const char *slash = strrchr(path, '/');
        rc = spec_tensors_compare(mine, count, file, n_file, "training.init_from",
                                  slash ? slash + 1 : path, err, errlen);
    }
    free(mine);
    tensorfile_free(file, n_file);
    return rc;
}
