/* rnn.c — the lstm and gru layers: Keras's cells over a sequence
 * {T, F} -> {T, U} (return_sequences) or {U} (the state at each sample's
 * last real step), run in one backend call per pass so a whole-sequence
 * kernel (cuDNN's RNN API) can take over. On the model's token ids
 * (spec token_vocab = V) each id is a one-hot row of F = V features the
 * backend gathers (rnn_desc.one_hot). Tensors as Keras saves them:
 * kernel (F, G), recurrent_kernel (U, G), bias (G) (gru reset_after: (2, G),
 * input then recurrent), G = 4U (gates i, f, c, o) or 3U (z, r, h). */
#include "layers/rnn.h"

#include <math.h>
#include <stdio.h>

long layer_rnn_prepare(layer *l, backend *be, rnn_desc *d, spec_layer_type cell,
                       bool go_backwards, bool time_order, char *err, size_t errlen)
{
    const spec_layer *s = l->spec;
    const char *name = spec_layer_type_name(s->type);
    if (s->in_shape.rank != 2) {
        snprintf(err, errlen, "%s: needs a sequence input", name);
        return -1;
    }
    if (!be->rnn_prepare || !be->rnn_forward || !be->rnn_backward) {
        snprintf(err, errlen, "%s: not available on the %s backend yet", name, be->name);
        return -1;
    }
    *d = (rnn_desc){
        .mode = cell == LAYER_LSTM ? RNN_LSTM : RNN_GRU,
        .max_batch = l->max_batch,
        .steps = s->in_shape.dim[0],
        .in = s->token_vocab > 0 ? s->token_vocab : s->in_shape.dim[1],
        .units = s->units,
        .go_backwards = go_backwards,
        .reset_after = cell == LAYER_GRU && s->reset_after,
        .return_sequences = s->return_sequences,
        .time_order = time_order,
        .one_hot = s->token_vocab > 0,
    };
    long ws = be->rnn_prepare(be, d);
    if (ws < 0)
        snprintf(err, errlen, "%s: backend %s cannot run this layer (out of memory?)", name,
                 be->name);
    return ws;
}

long layer_rnn_add_tensors(layer *l, const rnn_desc *d, long offset,
                           const char *const names[3])
{
    long F = d->in, U = d->units, G = (d->mode == RNN_LSTM ? 4 : 3) * U;
    layer_add_tensor(l, names[0], false, offset, 2, F, G, 0, 0);
    offset = layer_param_align(offset + F * G);
    layer_add_tensor(l, names[1], false, offset, 2, U, G, 0, 0);
    offset = layer_param_align(offset + U * G);
    if (d->mode == RNN_GRU && d->reset_after)
        layer_add_tensor(l, names[2], false, offset, 2, 2, G, 0, 0);
    else
        layer_add_tensor(l, names[2], false, offset, 1, G, 0, 0, 0);
    return layer_param_align(offset + (d->reset_after ? 2 : 1) * G);
}

rnn_desc layer_rnn_desc(const layer *l, int k)
{
    rnn_desc d = l->desc.rnn[k];
    d.steps = layer_steps(l);
    return d;
}

void layer_rnn_tensors(const layer *l, int first, float *base, float **w, float **r,
                       float **b)
{
    *w = base + l->tensors[first].offset;
    *r = base + l->tensors[first + 1].offset;
    *b = base + l->tensors[first + 2].offset;
}

static double rnn_normal(rng *r)
{
    /* Box-Muller; 1 - u keeps the logarithm finite. */
    double u1 = 1.0 - rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Keras's Orthogonal for a (rows, cols) matrix with rows <= cols: rows
 * orthonormal. Modified Gram-Schmidt on normal rows, in place, with double
 * sums, so it needs no scratch memory and depends only on the rng. */
static void rnn_orthogonal(float *m, long rows, long cols, rng *r)
{
    for (long i = 0; i < rows; i++) {
        float *v = m + i * cols;
        double norm = 0.0;
        do {
            for (long c = 0; c < cols; c++)
                v[c] = (float)rnn_normal(r);
            for (long k = 0; k < i; k++) {
                const float *q = m + k * cols;
                double dot = 0.0;
                for (long c = 0; c < cols; c++)
                    dot += (double)v[c] * q[c];
                for (long c = 0; c < cols; c++)
                    v[c] = (float)(v[c] - dot * q[c]);
            }
            norm = 0.0;
            for (long c = 0; c < cols; c++)
                norm += (double)v[c] * v[c];
        } while (norm < 1e-12); /* a draw inside the span: draw again */
        double inv = 1.0 / sqrt(norm);
        for (long c = 0; c < cols; c++)
            v[c] = (float)(v[c] * inv);
    }
}

void layer_rnn_init(const layer *l, const rnn_desc *d, int first, float *params, rng *r)
{
    long F = d->in, U = d->units, G = (d->mode == RNN_LSTM ? 4 : 3) * U;
    float *w, *rk, *b;
    layer_rnn_tensors(l, first, params, &w, &rk, &b);
    double limit = layer_init_limit(F, G);
    for (long i = 0; i < F * G; i++)
        w[i] = rng_symmetric(r, limit);
    rnn_orthogonal(rk, U, G, r);
    long nb = layer_tensor_size(&l->tensors[first + 2]);
    for (long i = 0; i < nb; i++)
        b[i] = 0.0f;
    /* unit_forget_bias: remember by default early in training. */
    if (d->mode == RNN_LSTM)
        for (long u = 0; u < U; u++)
            b[U + u] = 1.0f;
}

static int rnn_setup(layer *l, backend *be, char *err, size_t errlen)
{
    static const char *const names[3] = {"kernel", "recurrent_kernel", "bias"};
    rnn_desc *d = &l->desc.rnn[0];
    long ws = layer_rnn_prepare(l, be, d, l->spec->type, l->spec->go_backwards, false, err,
                                errlen);
    if (ws < 0)
        return -1;
    l->workspace_floats = ws;
    l->aux_floats = d->aux_floats;
    l->n_params = l->spec->n_params;
    layer_rnn_add_tensors(l, d, 0, names);
    return 0;
}

static void rnn_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    layer_rnn_init(l, &l->desc.rnn[0], 0, params, r);
}

static void rnn_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    rnn_desc d = layer_rnn_desc(l, 0);
    float *w, *r, *b;
    layer_rnn_tensors(l, 0, l->params, &w, &r, &b);
    be->rnn_forward(be, &d, batch, l->lengths, l->x[0], w, r, b, l->y, d.units, l->aux,
                    l->workspace);
}

static void rnn_backward(layer *l, backend *be, int batch)
{
    rnn_desc d = layer_rnn_desc(l, 0);
    float *w, *r, *b, *dw, *dr, *db;
    layer_rnn_tensors(l, 0, l->params, &w, &r, &b);
    layer_rnn_tensors(l, 0, l->grads, &dw, &dr, &db);
    be->rnn_backward(be, &d, batch, l->lengths, l->x[0], w, r, l->dy, d.units, l->dx[0],
                     l->dx_accumulate[0], dw, dr, db, l->aux, l->workspace);
}

static void rnn_release(layer *l, backend *be)
{
    if (be->rnn_release && l->desc.rnn[0].impl)
        be->rnn_release(be, &l->desc.rnn[0]);
}

const layer_ops layer_lstm_ops = {
    .setup = rnn_setup,
    .init = rnn_init,
    .forward = rnn_forward,
    .backward = rnn_backward,
    .release = rnn_release,
};

const layer_ops layer_gru_ops = {
    .setup = rnn_setup,
    .init = rnn_init,
    .forward = rnn_forward,
    .backward = rnn_backward,
    .release = rnn_release,
};
