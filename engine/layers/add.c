/* add.c — residual sum of two or more inputs of the same shape. Each input
 * receives the whole output gradient. */
#include "layers/layer.h"

#include <stdio.h>

static int add_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    for (int i = 0; i < l->n_in; i++) {
        if (l->x_size[i] != l->out_size) {
            snprintf(err, errlen, "add: input %d has %ld values per sample, expected %ld", i,
                     l->x_size[i], l->out_size);
            return -1;
        }
    }
    return 0;
}

static void add_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    long n = batch * layer_y_floats(l);
    be->copy(be, l->y, l->x[0], n);
    for (int i = 1; i < l->n_in; i++)
        be->axpy(be, n, 1.0f, l->x[i], l->y);
}

static void add_backward(layer *l, backend *be, int batch)
{
    for (int i = 0; i < l->n_in; i++)
        layer_pass_gradient(be, l->dy, l->dx[i], l->dx_accumulate[i],
                            batch * layer_y_floats(l));
}

const layer_ops layer_add_ops = {
    .setup = add_setup,
    .forward = add_forward,
    .backward = add_backward,
};
