/* conv1d.c — 1-d convolution along time, channels last (Keras's Conv1D):
 * x (batch, T, F), weight "kernel" [kernel_size, F, filters] (Keras's
 * layout, which is also the (K*F, filters) matrix of the im2col GEMM),
 * "bias" [filters], an optional fused activation; strides, dilation and
 * padding valid|same|causal.
 *
 * Lengths: a sample of L real steps has conv1d_out_length(L) output steps
 * (backend.h): Keras's output length for that sequence on its own. With
 * stride 1 and padding same or causal that is L, and nothing changes for
 * the layers after; otherwise the model computes every sample's new
 * length at each batch load (layer_seq_length) for the layers after.
 * Near a sample's end a window reads zeros past its real steps, as it
 * would if the sample stood alone in a batch of its own length. */
#include "layers/layer.h"

#include <stdio.h>

void layer_conv1d_desc(const spec_layer *s, int max_batch, conv1d_desc *d)
{
    *d = (conv1d_desc){
        .max_batch = max_batch,
        .steps = s->in_shape.dim[0],
        .out_steps = s->out_shape.dim[0],
        .c = s->in_shape.dim[1],
        .filters = s->filters,
        .kernel = s->kernel[0],
        .stride = s->stride[0],
        .dilation = s->dilation[0],
        .pad_before = s->pad[0],
        .valid = s->padding == PAD_VALID,
        .causal = s->padding == PAD_CAUSAL,
    };
}

static conv1d_desc conv1d_layer_desc(const layer *l)
{
    conv1d_desc d;
    layer_conv1d_desc(l->spec, l->max_batch, &d);
    d.steps = layer_steps(l);
    d.out_steps = layer_out_steps(l);
    return d;
}

static int conv1d_setup(layer *l, backend *be, char *err, size_t errlen)
{
    const spec_layer *s = l->spec;
    if (!be->conv1d_prepare || !be->conv1d_forward || !be->conv1d_backward) {
        snprintf(err, errlen, "sequence models run on the CPU backend in this version");
        return -1;
    }
    conv1d_desc d = conv1d_layer_desc(l);
    long ws = be->conv1d_prepare(be, &d);
    if (s->in_shape.rank != 2 || l->out_size != (long)d.out_steps * d.filters || ws < 0) {
        snprintf(err, errlen, "conv1d: bad geometry (%d steps x %d, kernel %d, %d filters)",
                 d.steps, d.c, d.kernel, d.filters);
        return -1;
    }
    long kw = (long)d.kernel * d.c * d.filters;
    l->n_params = kw + (s->use_bias ? d.filters : 0);
    l->workspace_floats = ws;
    layer_add_tensor(l, "kernel", false, 0, 3, d.kernel, d.c, d.filters, 0);
    if (s->use_bias)
        layer_add_tensor(l, "bias", false, layer_param_align(kw), 1, d.filters, 0, 0, 0);
    return 0;
}

/* Glorot uniform with Keras's fans for a convolution: the receptive field
 * times the input and the output channels. */
static void conv1d_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    const spec_layer *s = l->spec;
    long k = s->kernel[0], c = s->in_shape.dim[1], f = s->filters;
    double limit = layer_init_limit(k * c, k * f);
    for (long i = 0; i < k * c * f; i++)
        params[i] = rng_symmetric(r, limit);
    if (s->use_bias)
        for (long i = 0; i < f; i++)
            params[l->tensors[1].offset + i] = 0.0f;
}

static void conv1d_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    conv1d_desc d = conv1d_layer_desc(l);
    const float *bias = l->spec->use_bias ? l->params + l->tensors[1].offset : NULL;
    be->conv1d_forward(be, &d, batch, l->lengths, l->x[0], l->params, bias, l->act, l->y,
                       l->workspace);
}

static void conv1d_backward(layer *l, backend *be, int batch)
{
    conv1d_desc d = conv1d_layer_desc(l);
    /* What this makes of dy's padding rows the backend op zeroes. */
    if (l->act != ACT_NONE)
        be->activation_backward(be, l->act, (long)batch * d.out_steps, d.filters, l->y, l->dy,
                                l->dy, false);
    float *db = l->spec->use_bias ? l->grads + l->tensors[1].offset : NULL;
    be->conv1d_backward(be, &d, batch, l->lengths, l->x[0], l->params, l->dy, l->dx[0],
                        l->dx_accumulate[0], l->grads, db, l->workspace);
}

const layer_ops layer_conv1d_ops = {
    .setup = conv1d_setup,
    .init = conv1d_init,
    .forward = conv1d_forward,
    .backward = conv1d_backward,
};
