/* embedding.c — token ids to vectors: y[n, t] = embeddings[id[n, t]], the
 * first layer of a model on {"tokens": V}. The ids arrive as floats, one
 * per step (exact below 2^24); model_load_batch has already refused any id
 * outside [0, V) or not whole, so the gather never leaves the table.
 *
 * mask_zero (Keras's flag) says that id 0 is padding. Here the padding is
 * already known before the model runs: each sample's length comes with the
 * data (the npz/CTF/text loaders cut a sequence's trailing zeros into its
 * length), and every layer, loss and metric skips the steps past it. So
 * the flag records the data's convention and changes nothing in this
 * layer: an id 0 inside a sequence's real steps is an ordinary row. */
#include "layers/layer.h"

#include <stdio.h>

/* Keras's embeddings_initializer "uniform": U(-0.05, 0.05). */
#define EMBEDDING_INIT_LIMIT 0.05

static int embedding_setup(layer *l, backend *be, char *err, size_t errlen)
{
    const spec_layer *s = l->spec;
    if (!be->embedding_forward || !be->embedding_backward) {
        snprintf(err, errlen, "sequence models run on the CPU backend in this version");
        return -1;
    }
    if (s->in_shape.rank != 2 || s->in_shape.dim[1] != 1 || s->input_dim < 1 ||
        l->out_size != (long)s->in_shape.dim[0] * s->output_dim) {
        snprintf(err, errlen, "embedding: needs token ids {steps, 1} and an output of "
                 "steps x output_dim");
        return -1;
    }
    l->n_params = (long)s->input_dim * s->output_dim;
    layer_add_tensor(l, "embeddings", false, 0, 2, s->input_dim, s->output_dim, 0, 0);
    return 0;
}

static void embedding_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    for (long i = 0; i < l->n_params; i++)
        params[i] = rng_symmetric(r, EMBEDDING_INIT_LIMIT);
}

static void embedding_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    const spec_layer *s = l->spec;
    be->embedding_forward(be, batch, layer_steps(l), s->output_dim, l->lengths, l->x[0],
                          l->params, l->y);
}

/* The ids are piecewise constant: their gradient is zero, wanted only
 * when something else (a test) asks for it. */
static void embedding_backward(layer *l, backend *be, int batch)
{
    const spec_layer *s = l->spec;
    be->embedding_backward(be, batch, layer_steps(l), s->input_dim, s->output_dim,
                           l->lengths, l->x[0], l->dy, l->grads);
    if (l->tied_grad)
        be->axpy(be, l->n_params, 1.0f, l->tied_grad, l->grads);
    if (l->dx[0] && !l->dx_accumulate[0])
        be->zero(be, l->dx[0], (long)batch * layer_x_floats(l, 0));
}

const layer_ops layer_embedding_ops = {
    .setup = embedding_setup,
    .init = embedding_init,
    .forward = embedding_forward,
    .backward = embedding_backward,
};
