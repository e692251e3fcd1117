/* position.c — positions added to a sequence {T, F}: positional_embedding,
 * a learned table {max_length, F} whose first T rows are added (GPT-2's
 * wpe, nanoGPT's learned positions), and sinusoidal_position, the fixed
 * sine/cosine table of "Attention is all you need":
 *   P[t, 2i] = sin(t / 10000^(2i/F)), P[t, 2i+1] = cos(t / 10000^(2i/F)).
 * Only a sample's real steps get the table, so padding stays zero; the
 * table's gradient sums dy over the real steps of every sample, sample by
 * sample in order (deterministic). */
#include "layers/layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* U(-0.05, 0.05), as the embedding layer (Keras's "uniform"). */
#define POSITION_INIT_LIMIT 0.05

static int position_steps(const layer *l)
{
    return l->spec->in_shape.dim[0];
}

static int position_features(const layer *l)
{
    return l->spec->in_shape.dim[1];
}

static int position_length(const layer *l, int n)
{
    return l->lengths ? l->lengths[n] : layer_steps(l);
}

static int positional_embedding_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    const spec_layer *s = l->spec;
    if (s->in_shape.rank != 2 || s->max_length < s->in_shape.dim[0]) {
        snprintf(err, errlen, "positional_embedding: needs a sequence no longer than "
                 "max_length");
        return -1;
    }
    l->n_params = (long)s->max_length * position_features(l);
    layer_add_tensor(l, "embeddings", false, 0, 2, s->max_length, position_features(l), 0, 0);
    return 0;
}

static void positional_embedding_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    for (long i = 0; i < l->n_params; i++)
        params[i] = rng_symmetric(r, POSITION_INIT_LIMIT);
}

/* y = x + table at every real step. */
static void position_add(layer *l, backend *be, int batch, const float *table)
{
    long per = (long)layer_steps(l) * position_features(l);
    be->copy(be, l->y, l->x[0], batch * per);
    for (int n = 0; n < batch; n++)
        be->axpy(be, (long)position_length(l, n) * position_features(l), 1.0f, table,
                 l->y + n * per);
}

static void positional_embedding_forward(layer *l, backend *be, int batch, bool training,
                                         uint64_t seed)
{
    (void)training;
    (void)seed;
    position_add(l, be, batch, l->params);
}

static void positional_embedding_backward(layer *l, backend *be, int batch)
{
    long per = (long)layer_steps(l) * position_features(l);
    be->zero(be, l->grads, l->n_params);
    for (int n = 0; n < batch; n++)
        be->axpy(be, (long)position_length(l, n) * position_features(l), 1.0f, l->dy + n * per,
                 l->grads);
    layer_pass_gradient(be, l->dy, l->dx[0], l->dx_accumulate[0], batch * per);
}

static int sinusoidal_position_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    if (l->spec->in_shape.rank != 2) {
        snprintf(err, errlen, "sinusoidal_position: needs a sequence input");
        return -1;
    }
    int steps = position_steps(l), f = position_features(l);
    l->host_table = malloc((size_t)steps * (size_t)f * sizeof *l->host_table);
    if (!l->host_table) {
        snprintf(err, errlen, "sinusoidal_position: out of memory");
        return -1;
    }
    for (int t = 0; t < steps; t++)
        for (int c = 0; c < f; c++) {
            double angle = t / pow(10000.0, (double)(c - c % 2) / f);
            l->host_table[(long)t * f + c] = (float)(c % 2 ? cos(angle) : sin(angle));
        }
    l->aux_floats = (long)steps * f; /* the table on the device */
    return 0;
}

static void sinusoidal_position_forward(layer *l, backend *be, int batch, bool training,
                                        uint64_t seed)
{
    (void)training;
    (void)seed;
    /* Uploaded each time: aux belongs to this layer alone but init never
     * sees it, and the copy is T x F beside the batch's B x T x F. */
    be->upload(be, l->aux, l->host_table, l->aux_floats);
    position_add(l, be, batch, l->aux);
}

static void sinusoidal_position_backward(layer *l, backend *be, int batch)
{
    layer_pass_gradient(be, l->dy, l->dx[0], l->dx_accumulate[0],
                        batch * layer_y_floats(l));
}

static void sinusoidal_position_release(layer *l, backend *be)
{
    (void)be;
    free(l->host_table);
    l->host_table = NULL;
}

const layer_ops layer_positional_embedding_ops = {
    .setup = positional_embedding_setup,
    .init = positional_embedding_init,
    .forward = positional_embedding_forward,
    .backward = positional_embedding_backward,
};

const layer_ops layer_sinusoidal_position_ops = {
    .setup = sinusoidal_position_setup,
    .forward = sinusoidal_position_forward,
    .backward = sinusoidal_position_backward,
    .release = sinusoidal_position_release,
};
