/* dropout.c — inverted dropout: in training each value is zeroed with
 * probability `rate` and the rest scaled by 1/(1-rate); in inference the
 * layer is the identity. The mask is drawn from the step's seed (see
 * backend_dropout_keep), so a resumed run draws the same masks. */
#include "layers/layer.h"

static int dropout_setup(layer *l, backend *be, char *err, size_t errlen)
{
    (void)be;
    (void)err;
    (void)errlen;
    l->aux_floats = (long)l->max_batch * l->out_size; /* the mask */
    return 0;
}

static void dropout_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    long n = batch * layer_y_floats(l);
    if (!training || l->spec->rate <= 0.0f) {
        be->copy(be, l->y, l->x[0], n);
        return;
    }
    be->dropout_forward(be, n, l->spec->rate, seed, l->x[0], l->aux, l->y);
}

static void dropout_backward(layer *l, backend *be, int batch)
{
    long n = batch * layer_y_floats(l);
    if (!l->dx[0])
        return;
    if (l->spec->rate <= 0.0f) {
        layer_pass_gradient(be, l->dy, l->dx[0], l->dx_accumulate[0], n);
        return;
    }
    be->dropout_backward(be, n, l->aux, l->dy, l->dx[0], l->dx_accumulate[0]);
}

const layer_ops layer_dropout_ops = {
    .setup = dropout_setup,
    .forward = dropout_forward,
    .backward = dropout_backward,
};
