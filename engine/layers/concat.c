/* concat.c — channel concatenation of inputs with the same spatial size
 * (rank-1 inputs concatenate their features; sequences, channels last,
 * join their features step by step: one "sample" of the op per step). */
#include "layers/layer.h"

#include <stdio.h>

/* Channels of input i: its size over the output's spatial size. */
static long concat_spatial(const layer *l)
{
    const spec_shape *o = &l->spec->out_shape;
    return o->rank == 3 ? (long)o->dim[1] * o->dim[2] : 1;
}

/* Op rows per sample: a sequence's steps, else 1. */
static int concat_steps(const layer *l)
{
    const spec_shape *o = &l->spec->out_shape;
    return o->rank == 2 ? o->dim[0] : 1;
}

static int concat_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    long spatial = concat_spatial(l), total = 0;
    for (int i = 0; i < l->n_in; i++) {
        if (l->x_size[i] % spatial != 0) {
            snprintf(err, errlen, "concat: input %d has %ld values per sample, not a multiple "
                     "of the spatial size %ld", i, l->x_size[i], spatial);
            return -1;
        }
        total += l->x_size[i];
    }
    if (total != l->out_size) {
        snprintf(err, errlen, "concat: inputs sum to %ld values per sample, output has %ld",
                 total, l->out_size);
        return -1;
    }
    return 0;
}

static void concat_channels(const layer *l, int *c_in)
{
    long spatial = concat_spatial(l);
    for (int i = 0; i < l->n_in; i++)
        c_in[i] = (int)(l->x_size[i] / spatial / concat_steps(l));
}

/* Op rows of the batch: this batch's steps of each sample on a sequence. */
static int concat_rows(const layer *l, int batch)
{
    return batch * (l->spec->out_shape.rank == 2 ? layer_out_steps(l) : 1);
}

static void concat_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    int c_in[SPEC_MAX_INPUTS];
    concat_channels(l, c_in);
    be->concat_forward(be, concat_rows(l, batch), l->n_in, c_in, concat_spatial(l), l->x, l->y);
}

static void concat_backward(layer *l, backend *be, int batch)
{
    int c_in[SPEC_MAX_INPUTS];
    concat_channels(l, c_in);
    be->concat_backward(be, concat_rows(l, batch), l->n_in, c_in, concat_spatial(l), l->dy, l->dx,
                        l->dx_accumulate);
}

const layer_ops layer_concat_ops = {
    .setup = concat_setup,
    .forward = concat_forward,
    .backward = concat_backward,
};
