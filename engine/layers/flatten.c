/* flatten.c — (C, H, W) to (C*H*W): the memory is already in that order,
 * so the layer only copies (and the gradient flows back unchanged). */
#include "layers/layer.h"

static int flatten_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)l;
    (void)be;
    (void)err;
    (void)errlen;
    return 0;
}

static void flatten_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    be->copy(be, l->y, l->x[0], batch * l->out_size);
}

static void flatten_backward(layer *l, backend *be, int batch)
{
    layer_pass_gradient(be, l->dy, l->dx[0], l->dx_accumulate[0], batch * l->out_size);
}

const layer_ops layer_flatten_ops = {
    .setup = flatten_setup,
    .forward = flatten_forward,
    .backward = flatten_backward,
};
