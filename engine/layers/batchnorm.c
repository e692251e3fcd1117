/* batchnorm.c — batch normalisation per channel (per feature for rank-1
 * inputs): batch statistics in training, running statistics in inference.
 * Parameters gamma, beta; state running_mean, running_var (saved with the
 * weights); aux keeps this step's mean and 1/std for the backward pass. */
#include "layers/layer.h"

#include <stdio.h>

static int batchnorm_setup(layer *l, backend *be, char *err, size_t errlen)
{
    const spec_shape *in = &l->spec->in_shape;
    batchnorm_desc *d = &l->desc.bn;
    *d = (batchnorm_desc){
        .max_batch = l->max_batch,
        .c = in->dim[0],
        .spatial = in->rank == 3 ? in->dim[1] * in->dim[2] : 1,
        .epsilon = l->spec->epsilon > 0.0f ? l->spec->epsilon : 1e-5f,
        .momentum = l->spec->momentum,
    };
    long ws = be->batchnorm_prepare(be, d);
    if (ws < 0) {
        snprintf(err, errlen, "batchnorm: backend %s cannot run this layer", be->name);
        return -1;
    }
    long c = d->c;
    l->workspace_floats = ws;
    l->n_params = 2 * c;
    l->n_state = 2 * c;
    l->aux_floats = 2 * c;
    layer_add_tensor(l, "gamma", false, 0, 1, c, 0, 0, 0);
    layer_add_tensor(l, "beta", false, layer_param_align(c), 1, c, 0, 0, 0);
    layer_add_tensor(l, "running_mean", true, 0, 1, c, 0, 0, 0);
    layer_add_tensor(l, "running_var", true, c, 1, c, 0, 0, 0);
    return 0;
}

static void batchnorm_init(const layer *l, float *params, float *state, rng *r)
{
    (void)r;
    long c = l->desc.bn.c;
    for (long i = 0; i < c; i++) {
        params[i] = 1.0f;     /* gamma */
        params[l->tensors[1].offset + i] = 0.0f; /* beta */
        state[i] = 0.0f;      /* running mean */
        state[c + i] = 1.0f;  /* running var */
    }
}

static void batchnorm_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)seed;
    const batchnorm_desc *d = &l->desc.bn;
    long c = d->c;
    const float *beta = l->params + l->tensors[1].offset;
    if (training)
        be->batchnorm_forward_train(be, d, batch, l->x[0], l->params, beta,
                                    l->state, l->state + c, l->aux, l->aux + c, l->y,
                                    l->workspace);
    else
        be->batchnorm_forward_eval(be, d, batch, l->x[0], l->params, beta, l->state,
                                   l->state + c, l->y);
}

static void batchnorm_backward(layer *l, backend *be, int batch)
{
    const batchnorm_desc *d = &l->desc.bn;
    long c = d->c;
    float *dbeta = l->grads + l->tensors[1].offset;
    be->batchnorm_backward(be, d, batch, l->x[0], l->dy, l->params, l->aux, l->aux + c,
                           l->dx[0], l->dx_accumulate[0], l->grads, dbeta,
                           l->workspace);
}

static void batchnorm_release(layer *l, backend *be)
{
    be->batchnorm_release(be, &l->desc.bn);
}

const layer_ops layer_batchnorm_ops = {
    .setup = batchnorm_setup,
    .init = batchnorm_init,
    .forward = batchnorm_forward,
    .backward = batchnorm_backward,
    .release = batchnorm_release,
};
