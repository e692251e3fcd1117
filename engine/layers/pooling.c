/* pooling.c — max and average 2-D pooling (window, stride, same/valid
 * padding): one file because they share geometry and differ only in the
 * backend's mode. Also the graph fusion of a relu into the max pooling
 * that follows it (layer_fuse_relu_maxpool): the pool then applies the
 * activation (l->act == ACT_RELU) and keeps each window's argmax in aux. */
#include "layers/layer.h"

#include <stdio.h>

static int pool_setup(layer *l, backend *be, pool_mode mode, char *err, size_t errlen)
{
    const spec_layer *s = l->spec;
    if (s->in_shape.rank != 3 || s->out_shape.rank != 3) {
        snprintf(err, errlen, "pooling needs a (channels, height, width) input");
        return -1;
    }
    pool2d_desc *d = &l->desc.pool;
    *d = (pool2d_desc){
        .max_batch = l->max_batch,
        .c = s->in_shape.dim[0], .h = s->in_shape.dim[1], .w = s->in_shape.dim[2],
        .kh = s->kernel[0], .kw = s->kernel[1],
        .stride_h = s->stride[0] > 0 ? s->stride[0] : s->kernel[0],
        .stride_w = s->stride[1] > 0 ? s->stride[1] : s->kernel[1],
        .oh = s->out_shape.dim[1], .ow = s->out_shape.dim[2],
        .mode = mode,
    };
    if (s->padding == PAD_SAME) {
        d->pad_top = s->pad[0];
        d->pad_left = s->pad[1];
        d->pad_bottom = layer_pad_after(d->h, d->oh, d->kh, d->stride_h, 1, d->pad_top);
        d->pad_right = layer_pad_after(d->w, d->ow, d->kw, d->stride_w, 1, d->pad_left);
    }
    long ws = be->pool2d_prepare(be, d);
    if (ws < 0) {
        snprintf(err, errlen, "pooling: backend %s cannot run this pooling", be->name);
        return -1;
    }
    l->workspace_floats = ws;
    return 0;
}

static int maxpool_setup(layer *l, backend *be, char *err, size_t errlen)
{
    return pool_setup(l, be, POOL_MAX, err, errlen);
}

static int avgpool_setup(layer *l, backend *be, char *err, size_t errlen)
{
    return pool_setup(l, be, POOL_AVG, err, errlen);
}

static void pool_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    if (l->act == ACT_RELU) {
        be->relu_maxpool_forward(be, &l->desc.pool, batch, l->x[0], l->y, (uint8_t *)l->aux);
        return;
    }
    be->pool2d_forward(be, &l->desc.pool, batch, l->x[0], l->y);
}

static void pool_backward(layer *l, backend *be, int batch)
{
    if (!l->dx[0])
        return;
    if (l->act == ACT_RELU) {
        be->relu_maxpool_backward(be, &l->desc.pool, batch, (const uint8_t *)l->aux, l->y,
                                  l->dy, l->dx[0], l->dx_accumulate[0]);
        return;
    }
    be->pool2d_backward(be, &l->desc.pool, batch, l->x[0], l->y, l->dy, l->dx[0],
                        l->dx_accumulate[0]);
}

static void pool_release(layer *l, backend *be)
{
    be->pool2d_release(be, &l->desc.pool);
}

const layer_ops layer_maxpool2d_ops = {
    .setup = maxpool_setup,
    .forward = pool_forward,
    .backward = pool_backward,
    .release = pool_release,
};

const layer_ops layer_avgpool2d_ops = {
    .setup = avgpool_setup,
    .forward = pool_forward,
    .backward = pool_backward,
    .release = pool_release,
};

/* Whether any layer but `reader` reads layer src's output. */
static bool fuse_other_reader(const layer *layers, int n, int src, int reader)
{
    for (int i = 0; i < n; i++) {
        if (i == reader)
            continue;
        for (int k = 0; k < layers[i].n_in; k++)
            if (layers[i].spec->inputs[k] == src)
                return true;
    }
    return false;
}

int layer_fuse_relu_maxpool(layer *layers, int n, backend *be)
{
    if (!be->relu_maxpool_forward || !be->relu_maxpool_backward)
        return 0;
    int fused = 0;
    for (int i = 0; i < n; i++) {
        layer *p = &layers[i];
        const pool2d_desc *d = &p->desc.pool;
        if (p->spec->type != LAYER_MAXPOOL2D || p->n_in != 1 || p->act != ACT_NONE ||
            d->kh * d->kw > 256)
            continue;
        int src = p->spec->inputs[0];
        if (src < 0 || src >= i)
            continue;
        layer *c = &layers[src];
        /* Only the conv's own fused relu: its output then has no other
         * reader that would need the activation applied. */
        if (c->spec->type != LAYER_CONV2D || c->act != ACT_RELU ||
            fuse_other_reader(layers, n, src, i))
            continue;
        c->act = ACT_NONE;
        p->act = ACT_RELU;
        p->aux_floats = ((long)p->max_batch * p->out_size + 3) / 4; /* argmax bytes */
        fused++;
    }
    return fused;
}
