/* pool1d.c — maxpool1d and avgpool1d: windows along time (pool_size,
 * strides default pool_size, padding valid|same), channels last, masked:
 * a window pools only its sample's real steps, so padding never wins a
 * max nor counts in a mean.
 *
 * Pooling shortens each sequence by its own amount: a sample of L real
 * steps has pool1d_out_length(L) output steps (backend.h). The model
 * computes those lengths for the layers after from this layer's
 * geometry (layer_pool1d_desc) at every batch load, and this layer reads
 * its input's lengths from l->lengths. */
#include "layers/layer.h"

#include <stdio.h>

bool layer_pool1d_desc(const spec_layer *s, pool1d_desc *d)
{
    if (s->type != LAYER_MAXPOOL1D && s->type != LAYER_AVGPOOL1D)
        return false;
    *d = (pool1d_desc){
        .steps = s->in_shape.dim[0],
        .out_steps = s->out_shape.dim[0],
        .c = s->in_shape.dim[1],
        .kernel = s->kernel[0],
        .stride = s->stride[0],
        .pad_before = s->pad[0],
        .valid = s->padding == PAD_VALID,
        .mode = s->type == LAYER_MAXPOOL1D ? POOL_MAX : POOL_AVG,
    };
    return true;
}

/* The window at this batch's steps. */
static pool1d_desc pool1d_layer_desc(const layer *l)
{
    pool1d_desc d;
    layer_pool1d_desc(l->spec, &d);
    d.steps = layer_steps(l);
    d.out_steps = layer_out_steps(l);
    return d;
}

static int pool1d_setup(layer *l, backend *be, char *err, size_t errlen)
{
    pool1d_desc d;
    if (!be->pool1d_forward || !be->pool1d_backward) {
        snprintf(err, errlen, "sequence models run on the CPU backend in this version");
        return -1;
    }
    if (!layer_pool1d_desc(l->spec, &d) || l->spec->in_shape.rank != 2 ||
        l->out_size != (long)d.out_steps * d.c || d.stride < 1 || d.kernel < 1) {
        snprintf(err, errlen, "%s: bad geometry", spec_layer_type_name(l->spec->type));
        return -1;
    }
    return 0;
}

static void pool1d_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    pool1d_desc d = pool1d_layer_desc(l);
    be->pool1d_forward(be, &d, batch, l->lengths, l->x[0], l->y);
}

static void pool1d_backward(layer *l, backend *be, int batch)
{
    pool1d_desc d = pool1d_layer_desc(l);
    be->pool1d_backward(be, &d, batch, l->lengths, l->x[0], l->y, l->dy, l->dx[0],
                        l->dx_accumulate[0]);
}

const layer_ops layer_pool1d_ops = {
    .setup = pool1d_setup,
    .forward = pool1d_forward,
    .backward = pool1d_backward,
};
