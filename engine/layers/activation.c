/* activation.c — relu, sigmoid, tanh and softmax as layers of their own
 * (the same functions dense and conv2d fuse). Softmax is over the
 * flattened features of a sample. The backward pass uses the output y. */
#include "layers/layer.h"

static int activation_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    (void)err;
    (void)errlen;
    (void)l;
    return 0;
}

static void activation_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    be->activation_forward(be, l->act, batch, layer_y_floats(l), l->x[0], l->y);
}

static void activation_backward(layer *l, backend *be, int batch)
{
    if (!l->dx[0])
        return;
    be->activation_backward(be, l->act, batch, layer_y_floats(l), l->y, l->dy, l->dx[0],
                            l->dx_accumulate[0]);
}

const layer_ops layer_activation_ops = {
    .setup = activation_setup,
    .forward = activation_forward,
    .backward = activation_backward,
};
