/* layer_norm.c — layer normalisation over the last axis: each step of a
 * sequence {T, F} (or each flat sample {F}) is normalised over its F
 * features and scaled and shifted by learned gamma and beta (Keras's and
 * PyTorch's LayerNormalization; epsilon defaults to PyTorch's 1e-5, the
 * value nanoGPT and GPT-2 use, where Keras uses 1e-3). Padding steps hold
 * zeros, normalise to beta, and are zeroed by the model after the
 * forward; their dy is zero, so they add nothing to the gradients. */
#include "layers/layer.h"

#include <stdio.h>

/* Rows per sample and features per row. */
static int layer_norm_steps(const layer *l)
{
    return l->spec->in_shape.rank == 2 ? l->spec->in_shape.dim[0] : 1;
}

static int layer_norm_features(const layer *l)
{
    return (int)(l->in_size / layer_norm_steps(l));
}

/* Rows of the batch: this batch's steps of each sample on a sequence. */
static long layer_norm_rows(const layer *l, int batch)
{
    return (long)batch * (l->spec->in_shape.rank == 2 ? layer_steps(l) : 1);
}

static int layer_norm_setup(layer *l, backend *be, char *err, size_t errlen)
{
    if (!be->layer_norm_forward || !be->layer_norm_backward) {
        snprintf(err, errlen, "layer_norm runs on the CPU backend in this version");
        return -1;
    }
    long f = layer_norm_features(l);
    l->n_params = 2 * f;
    l->aux_floats = 2L * l->max_batch * layer_norm_steps(l); /* mean, rstd per row */
    layer_add_tensor(l, "gamma", false, 0, 1, f, 0, 0, 0);
    layer_add_tensor(l, "beta", false, layer_param_align(f), 1, f, 0, 0, 0);
    return 0;
}

static void layer_norm_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    (void)r;
    long f = layer_norm_features(l);
    for (long i = 0; i < f; i++) {
        params[i] = 1.0f;
        params[l->tensors[1].offset + i] = 0.0f;
    }
}

static void layer_norm_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    long rows = layer_norm_rows(l, batch);
    be->layer_norm_forward(be, rows, layer_norm_features(l), l->spec->epsilon, l->x[0],
                           l->params, l->params + l->tensors[1].offset, l->y, l->aux);
}

static void layer_norm_backward(layer *l, backend *be, int batch)
{
    long rows = layer_norm_rows(l, batch);
    be->layer_norm_backward(be, rows, layer_norm_features(l), l->x[0], l->params, l->aux,
                            l->dy, l->dx[0], l->dx_accumulate[0], l->grads,
                            l->grads + l->tensors[1].offset);
}

const layer_ops layer_layer_norm_ops = {
    .setup = layer_norm_setup,
    .init = layer_norm_init,
    .forward = layer_norm_forward,
    .backward = layer_norm_backward,
};
