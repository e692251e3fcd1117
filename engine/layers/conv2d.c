/* conv2d.c — 2-D convolution (stride, same/valid padding, dilation,
 * groups) with fused bias and activation. W is (filters, channels /
 * groups, kh, kw). */
#include "layers/layer.h"

#include <stdio.h>

static int conv2d_setup(layer *l, backend *be, char *err, size_t errlen)
{
    const spec_layer *s = l->spec;
    if (s->in_shape.rank != 3 || s->out_shape.rank != 3) {
        snprintf(err, errlen, "conv2d needs a (channels, height, width) input");
        return -1;
    }
    conv2d_desc *d = &l->desc.conv;
    *d = (conv2d_desc){
        .max_batch = l->max_batch,
        .c = s->in_shape.dim[0], .h = s->in_shape.dim[1], .w = s->in_shape.dim[2],
        .k = s->filters, .kh = s->kernel[0], .kw = s->kernel[1],
        .stride_h = s->stride[0] > 0 ? s->stride[0] : 1,
        .stride_w = s->stride[1] > 0 ? s->stride[1] : 1,
        .dil_h = s->dilation[0] > 0 ? s->dilation[0] : 1,
        .dil_w = s->dilation[1] > 0 ? s->dilation[1] : 1,
        .oh = s->out_shape.dim[1], .ow = s->out_shape.dim[2],
        .groups = s->groups > 0 ? s->groups : 1,
    };
    if (s->padding == PAD_SAME) {
        d->pad_top = s->pad[0];
        d->pad_left = s->pad[1];
        d->pad_bottom = layer_pad_after(d->h, d->oh, d->kh, d->stride_h, d->dil_h, d->pad_top);
        d->pad_right = layer_pad_after(d->w, d->ow, d->kw, d->stride_w, d->dil_w, d->pad_left);
    }
    if (s->out_shape.dim[0] != d->k) {
        snprintf(err, errlen, "conv2d: %d filters but output has %d channels", d->k,
                 s->out_shape.dim[0]);
        return -1;
    }
    long ws = be->conv2d_prepare(be, d);
    if (ws < 0) {
        snprintf(err, errlen, "conv2d: backend %s cannot run this convolution", be->name);
        return -1;
    }
    int cg = d->c / d->groups;
    long wsize = (long)d->k * cg * d->kh * d->kw;
    l->workspace_floats = ws;
    l->n_params = wsize + (s->use_bias ? d->k : 0);
    layer_add_tensor(l, "weight", false, 0, 4, d->k, cg, d->kh, d->kw);
    if (s->use_bias)
        layer_add_tensor(l, "bias", false, layer_param_align(wsize), 1, d->k, 0, 0, 0);
    return 0;
}

static void conv2d_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    const conv2d_desc *d = &l->desc.conv;
    /* Each filter sees c / groups channels; each input feeds k / groups. */
    long area = (long)d->kh * d->kw;
    long wsize = d->k * (d->c / d->groups) * area;
    double limit = layer_init_limit(d->c / d->groups * area, d->k / d->groups * area);
    for (long i = 0; i < wsize; i++)
        params[i] = rng_symmetric(r, limit);
    if (l->spec->use_bias)
        for (long i = 0; i < d->k; i++)
            params[l->tensors[1].offset + i] = 0.0f;
}

static const float *conv2d_bias(const layer *l)
{
    return l->spec->use_bias ? l->params + l->tensors[1].offset : NULL;
}

static void conv2d_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    spec_activation act = l->act == ACT_SOFTMAX ? ACT_NONE : l->act;
    be->conv2d_forward(be, &l->desc.conv, batch, l->x[0], l->params, conv2d_bias(l), act,
                       l->y, l->workspace);
    /* Softmax over a conv output means over its flattened features. */
    if (l->act == ACT_SOFTMAX)
        be->activation_forward(be, ACT_SOFTMAX, batch, l->out_size, l->y, l->y);
}

static void conv2d_backward(layer *l, backend *be, int batch)
{
    const conv2d_desc *d = &l->desc.conv;
    if (l->act != ACT_NONE)
        be->activation_backward(be, l->act, batch, l->out_size, l->y, l->dy, l->dy, false);
    float *db = l->spec->use_bias ? l->grads + l->tensors[1].offset : NULL;
    be->conv2d_backward(be, d, batch, l->x[0], l->params, l->dy, l->dx[0],
                        l->dx_accumulate[0], l->grads, db, l->workspace);
}

static void conv2d_release(layer *l, backend *be)
{
    be->conv2d_release(be, &l->desc.conv);
}

const layer_ops layer_conv2d_ops = {
    .setup = conv2d_setup,
    .init = conv2d_init,
    .forward = conv2d_forward,
    .backward = conv2d_backward,
    .release = conv2d_release,
};
