/* dense.c — fully connected layer: y = act(x @ W + b) on the flattened
 * input. W is (in, out), the layout of the weight files and of the GEMM.
 * On a sequence {T, F} it applies to every step (Keras): W is (F, units)
 * and the GEMM's rows are batch * T; padding rows compute bias-only
 * values that the model zeroes after the forward (model/model.c). */
#include "layers/dense.h"

#include <stdio.h>

/* Rows per sample: the steps of a sequence, 1 for a flat input. */
static int dense_steps(const layer *l)
{
    return l->spec->in_shape.rank == 2 ? l->spec->in_shape.dim[0] : 1;
}

/* GEMM rows of the batch: this batch's steps of each sample. */
static int dense_rows(const layer *l, int batch)
{
    return batch * (l->spec->in_shape.rank == 2 ? layer_steps(l) : 1);
}

/* Inputs and outputs of one row. */
static long dense_in(const layer *l)
{
    return l->in_size / dense_steps(l);
}

static long dense_out(const layer *l)
{
    return l->out_size / dense_steps(l);
}

/* GELU is not invertible, so its backward needs its input: a dense layer
 * with gelu keeps the pre-activation x @ W + b in aux and applies the
 * backend's gelu ops around the plain GEMM. */
static bool dense_gelu(const layer *l)
{
    return l->act == ACT_GELU || l->act == ACT_GELU_EXACT;
}

static int dense_setup(layer *l, backend *be, char *err, size_t errlen)
{
    long in = dense_in(l), out = l->spec->units;
    if (dense_gelu(l) && (!be->gelu_forward || !be->gelu_backward)) {
        snprintf(err, errlen, "dense: gelu runs on the CPU backend in this version");
        return -1;
    }
    if (dense_gelu(l))
        l->aux_floats = (long)l->max_batch * l->out_size;
    if (l->spec->tied) {
        /* The table's gradient {V, E}, for the embedding's backward. */
        if (dense_gelu(l) || l->spec->use_bias) {
            snprintf(err, errlen, "dense: a tied layer has no bias and no gelu");
            return -1;
        }
        l->n_params = 0;
        l->aux_floats = in * out;
        return 0;
    }
    if (out <= 0 || dense_out(l) != out) {
        snprintf(err, errlen, "dense: %ld units but output shape has %ld", out, l->out_size);
        return -1;
    }
    l->n_params = in * out + (l->spec->use_bias ? out : 0);
    layer_add_tensor(l, "weight", false, 0, 2, in, out, 0, 0);
    if (l->spec->use_bias)
        layer_add_tensor(l, "bias", false, layer_param_align(in * out), 1, out, 0, 0, 0);
    return 0;
}

static void dense_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    if (l->spec->tied)
        return; /* the embedding's table, initialised there */
    long in = dense_in(l), out = dense_out(l);
    double limit = layer_init_limit(in, out);
    for (long i = 0; i < in * out; i++)
        params[i] = rng_symmetric(r, limit);
    if (l->spec->use_bias)
        for (long i = 0; i < out; i++)
            params[l->tensors[1].offset + i] = 0.0f;
}

/* y = act(x @ E^T) with E the tied embedding's table {out, in}. */
static void dense_tied_forward(layer *l, backend *be, int rows, long in, long out)
{
    be->gemm(be, false, true, rows, (int)out, (int)in, 1.0f, l->x[0], (int)in, l->tied_weight,
             (int)in, 0.0f, l->y, (int)out);
    if (l->act != ACT_NONE)
        be->activation_forward(be, l->act, rows, out, l->y, l->y);
}

/* dx (+)= dz @ E; the table's gradient dz^T @ x into aux. */
static void dense_tied_backward(layer *l, backend *be, int rows, long in, long out)
{
    if (l->dx[0])
        be->gemm(be, false, false, rows, (int)in, (int)out, 1.0f, l->dy, (int)out,
                 l->tied_weight, (int)in, l->dx_accumulate[0] ? 1.0f : 0.0f, l->dx[0],
                 (int)in);
    be->gemm(be, true, false, (int)out, (int)in, rows, 1.0f, l->dy, (int)out, l->x[0],
             (int)in, 0.0f, l->aux, (int)in);
}

static void dense_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    long in = dense_in(l), out = dense_out(l);
    int rows = dense_rows(l, batch);
    if (l->spec->tied) {
        dense_tied_forward(l, be, rows, in, out);
        return;
    }
    const float *bias = l->spec->use_bias ? l->params + l->tensors[1].offset : NULL;
    if (dense_gelu(l)) {
        be->dense_forward(be, rows, (int)in, (int)out, l->x[0], l->params, bias, ACT_NONE,
                          l->aux);
        be->gelu_forward(be, l->act == ACT_GELU_EXACT, (long)rows * out, l->aux, l->y);
        return;
    }
    be->dense_forward(be, rows, (int)in, (int)out, l->x[0], l->params, bias, l->act, l->y);
}

/* dy becomes the gradient of the pre-activation (the backend's dense
 * backward takes that). */
static void dense_undo_activation(layer *l, backend *be, int rows, long out)
{
    if (dense_gelu(l))
        be->gelu_backward(be, l->act == ACT_GELU_EXACT, (long)rows * out, l->aux, l->dy, l->dy,
                          false);
    else if (l->act != ACT_NONE)
        be->activation_backward(be, l->act, rows, out, l->y, l->dy, l->dy, false);
}

static void dense_backward(layer *l, backend *be, int batch)
{
    long in = dense_in(l), out = dense_out(l);
    int rows = dense_rows(l, batch);
    dense_undo_activation(l, be, rows, out);
    if (l->spec->tied) {
        dense_tied_backward(l, be, rows, in, out);
        return;
    }
    float *db = l->spec->use_bias ? l->grads + l->tensors[1].offset : NULL;
    be->dense_backward(be, rows, (int)in, (int)out, l->x[0], l->params, l->dy, l->dx[0],
                       l->dx_accumulate[0], l->grads, db);
}

bool layer_dense_backward_update(layer *l, backend *be, int batch,
                                 void (*update)(void *ctx, long begin, long end), void *ctx)
{
    if (!be->dense_backward_update)
        return false;
    long in = dense_in(l), out = dense_out(l);
    int rows = dense_rows(l, batch);
    dense_undo_activation(l, be, rows, out);
    float *db = l->spec->use_bias ? l->grads + l->tensors[1].offset : NULL;
    be->dense_backward_update(be, rows, (int)in, (int)out, l->x[0], l->params, l->dy,
                              l->dx[0], l->dx_accumulate[0], l->grads, db, update, ctx);
    return true;
}

const layer_ops layer_dense_ops = {
    .setup = dense_setup,
    .init = dense_init,
    .forward = dense_forward,
    .backward = dense_backward,
};
