/* dense.c — fully connected layer: y = act(x @ W + b) on the flattened
 * input. W is (in, out), the layout of the weight files and of the GEMM. */
#include "layers/dense.h"

#include <stdio.h>

static int dense_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    long in = l->in_size, out = l->spec->units;
    if (out <= 0 || l->out_size != out) {
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
    long in = l->in_size, out = l->out_size;
    double limit = layer_init_limit(in, out);
    for (long i = 0; i < in * out; i++)
        params[i] = rng_symmetric(r, limit);
    if (l->spec->use_bias)
        for (long i = 0; i < out; i++)
            params[l->tensors[1].offset + i] = 0.0f;
}

static void dense_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    long in = l->in_size, out = l->out_size;
    const float *bias = l->spec->use_bias ? l->params + l->tensors[1].offset : NULL;
    be->dense_forward(be, batch, (int)in, (int)out, l->x[0], l->params, bias, l->act, l->y);
}

static void dense_backward(layer *l, backend *be, int batch)
{
    long in = l->in_size, out = l->out_size;
    if (l->act != ACT_NONE)
        be->activation_backward(be, l->act, batch, out, l->y, l->dy, l->dy, false);
    float *db = l->spec->use_bias ? l->grads + l->tensors[1].offset : NULL;
    be->dense_backward(be, batch, (int)in, (int)out, l->x[0], l->params, l->dy, l->dx[0],
                       l->dx_accumulate[0], l->grads, db);
}

bool layer_dense_backward_update(layer *l, backend *be, int batch,
                                 void (*update)(void *ctx, long begin, long end), void *ctx)
{
    if (!be->dense_backward_update)
        return false;
    long in = l->in_size, out = l->out_size;
    if (l->act != ACT_NONE)
        be->activation_backward(be, l->act, batch, out, l->y, l->dy, l->dy, false);
    float *db = l->spec->use_bias ? l->grads + l->tensors[1].offset : NULL;
    be->dense_backward_update(be, batch, (int)in, (int)out, l->x[0], l->params, l->dy,
                              l->dx[0], l->dx_accumulate[0], l->grads, db, update, ctx);
    return true;
}

const layer_ops layer_dense_ops = {
    .setup = dense_setup,
    .init = dense_init,
    .forward = dense_forward,
    .backward = dense_backward,
};
