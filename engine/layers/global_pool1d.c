/* global_pool1d.c — global_maxpool1d and global_avgpool1d: a sequence
 * {T, F} to one vector {F} over each sample's real steps only, so padding
 * never wins a max nor counts in a mean (Keras's masked pooling). */
#include "layers/layer.h"

#include <stdio.h>

static pool_mode global_pool1d_mode(const layer *l)
{
    return l->spec->type == LAYER_GLOBAL_MAXPOOL1D ? POOL_MAX : POOL_AVG;
}

static int global_pool1d_setup(layer *l, backend *be, char *err, size_t errlen)
{
    const spec_shape *in = &l->spec->in_shape;
    if (!be->global_pool1d_forward || !be->global_pool1d_backward) {
        snprintf(err, errlen, "sequence models run on the CPU backend in this version");
        return -1;
    }
    if (in->rank != 2 || l->out_size != in->dim[1]) {
        snprintf(err, errlen, "%s: needs a sequence input and an output of its features",
                 spec_layer_type_name(l->spec->type));
        return -1;
    }
    return 0;
}

static void global_pool1d_forward(layer *l, backend *be, int batch, bool training,
                                  uint64_t seed)
{
    (void)training;
    (void)seed;
    const spec_shape *in = &l->spec->in_shape;
    be->global_pool1d_forward(be, global_pool1d_mode(l), batch, layer_steps(l), in->dim[1],
                              l->lengths, l->x[0], l->y);
}

static void global_pool1d_backward(layer *l, backend *be, int batch)
{
    const spec_shape *in = &l->spec->in_shape;
    be->global_pool1d_backward(be, global_pool1d_mode(l), batch, layer_steps(l), in->dim[1],
                               l->lengths, l->x[0], l->y, l->dy, l->dx[0],
                               l->dx_accumulate[0]);
}

const layer_ops layer_global_pool1d_ops = {
    .setup = global_pool1d_setup,
    .forward = global_pool1d_forward,
    .backward = global_pool1d_backward,
};
