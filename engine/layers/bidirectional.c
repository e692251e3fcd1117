/* bidirectional.c — Keras's Bidirectional: an lstm or gru run forward and a
 * copy with its own weights run backward over each sample's real steps,
 * the backward half's sequence put back into time order, the two merged by
 * merge_mode (concat | sum | ave | mul). Tensors forward_kernel,
 * forward_recurrent_kernel, forward_bias, then backward_*.
 *
 * concat needs no extra memory: each direction writes its half of y
 * directly (rows of 2U). The other modes keep both directions' outputs in
 * aux (mul's gradient needs each to scale the other's). */
#include "layers/rnn.h"

#include <stdio.h>

/* Floats of one direction's output for `batch` samples. */
/* One direction's output floats for `batch` samples of `steps` steps. */
static long bidir_dir_size(const layer *l, int batch, int steps)
{
    const rnn_desc *d = &l->desc.rnn[0];
    return (long)batch * (d->return_sequences ? (long)steps * d->units : d->units);
}

static int bidir_setup(layer *l, backend *be, char *err, size_t errlen)
{
    static const char *const fwd[3] = {"forward_kernel", "forward_recurrent_kernel",
                                       "forward_bias"};
    static const char *const bwd[3] = {"backward_kernel", "backward_recurrent_kernel",
                                       "backward_bias"};
    const spec_layer *s = l->spec;
    if (s->rnn != LAYER_LSTM && s->rnn != LAYER_GRU) {
        snprintf(err, errlen, "bidirectional: the inner layer must be an lstm or a gru");
        return -1;
    }
    if (s->merge_mode == MERGE_MUL && !be->mul) {
        snprintf(err, errlen, "bidirectional: not available on the %s backend yet", be->name);
        return -1;
    }
    long ws0 = layer_rnn_prepare(l, be, &l->desc.rnn[0], s->rnn, false, false, err, errlen);
    if (ws0 < 0)
        return -1;
    long ws1 = layer_rnn_prepare(l, be, &l->desc.rnn[1], s->rnn, true, true, err, errlen);
    if (ws1 < 0) {
        if (be->rnn_release)
            be->rnn_release(be, &l->desc.rnn[0]);
        return -1;
    }
    long ws = ws0 > ws1 ? ws0 : ws1;
    long dir = bidir_dir_size(l, l->max_batch, l->desc.rnn[0].steps);
    bool apart = s->merge_mode != MERGE_CONCAT;
    l->aux_floats = l->desc.rnn[0].aux_floats + l->desc.rnn[1].aux_floats +
                    (apart ? 2 * dir : 0);
    /* mul's backward builds each direction's dy next to the rnn workspace. */
    l->workspace_floats = ws + (s->merge_mode == MERGE_MUL ? 2 * dir : 0);
    l->n_params = s->n_params;
    long off = layer_rnn_add_tensors(l, &l->desc.rnn[0], 0, fwd);
    layer_rnn_add_tensors(l, &l->desc.rnn[1], off, bwd);
    return 0;
}

static void bidir_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    layer_rnn_init(l, &l->desc.rnn[0], 0, params, r);
    layer_rnn_init(l, &l->desc.rnn[1], 3, params, r);
}

/* Where each direction's aux, and (merge modes other than concat) its
 * output, live in the layer's aux. */
static void bidir_buffers(const layer *l, int batch, float *aux[2], float *out[2])
{
    long a0 = l->desc.rnn[0].aux_floats, a1 = l->desc.rnn[1].aux_floats;
    aux[0] = l->aux;
    aux[1] = l->aux + a0;
    out[0] = l->aux + a0 + a1;
    out[1] = out[0] + bidir_dir_size(l, batch, layer_steps(l));
}

static void bidir_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    (void)training;
    (void)seed;
    int U = l->spec->units;
    float *aux[2], *out[2];
    bidir_buffers(l, batch, aux, out);
    bool concat = l->spec->merge_mode == MERGE_CONCAT;
    for (int k = 0; k < 2; k++) {
        rnn_desc d = layer_rnn_desc(l, k);
        float *w, *r, *b;
        layer_rnn_tensors(l, 3 * k, l->params, &w, &r, &b);
        float *y = concat ? l->y + k * U : out[k];
        be->rnn_forward(be, &d, batch, l->lengths, l->x[0], w, r, b, y,
                        concat ? 2 * U : U, aux[k], l->workspace);
    }
    if (concat)
        return;
    long n = bidir_dir_size(l, batch, layer_steps(l));
    switch (l->spec->merge_mode) {
    case MERGE_MUL:
        be->mul(be, n, out[0], out[1], l->y, false);
        break;
    case MERGE_AVE:
    case MERGE_SUM:
        be->copy(be, l->y, out[0], n);
        be->axpy(be, n, 1.0f, out[1], l->y);
        if (l->spec->merge_mode == MERGE_AVE)
            be->scale(be, n, 0.5f, l->y);
        break;
    case MERGE_CONCAT:
        break;
    }
}

static void bidir_backward(layer *l, backend *be, int batch)
{
    int U = l->spec->units;
    float *aux[2], *out[2];
    bidir_buffers(l, batch, aux, out);
    spec_merge_mode mode = l->spec->merge_mode;
    long n = bidir_dir_size(l, batch, layer_steps(l));
    const float *dy[2] = {l->dy, l->dy};
    int ldy = U;
    if (mode == MERGE_CONCAT) {
        dy[1] = l->dy + U;
        ldy = 2 * U;
    } else if (mode == MERGE_AVE) {
        be->scale(be, n, 0.5f, l->dy);
    } else if (mode == MERGE_MUL) {
        /* Past the rnn workspace, which backward uses for itself. The
         * products at padding steps are never read. */
        long ws = l->workspace_floats -
                  2 * bidir_dir_size(l, l->max_batch, l->desc.rnn[0].steps);
        float *d0 = l->workspace + ws, *d1 = d0 + n;
        be->mul(be, n, l->dy, out[1], d0, false);
        be->mul(be, n, l->dy, out[0], d1, false);
        dy[0] = d0;
        dy[1] = d1;
    }
    for (int k = 0; k < 2; k++) {
        rnn_desc d = layer_rnn_desc(l, k);
        float *w, *r, *b, *dw, *dr, *db;
        layer_rnn_tensors(l, 3 * k, l->params, &w, &r, &b);
        layer_rnn_tensors(l, 3 * k, l->grads, &dw, &dr, &db);
        bool acc = k == 0 ? l->dx_accumulate[0] : true;
        be->rnn_backward(be, &d, batch, l->lengths, l->x[0], w, r, dy[k], ldy,
                         l->dx[0], acc, dw, dr, db, aux[k], l->workspace);
    }
}

static void bidir_release(layer *l, backend *be)
{
    for (int k = 0; k < 2; k++)
        if (be->rnn_release && l->desc.rnn[k].impl)
            be->rnn_release(be, &l->desc.rnn[k]);
}

const layer_ops layer_bidirectional_ops = {
    .setup = bidir_setup,
    .init = bidir_init,
    .forward = bidir_forward,
    .backward = bidir_backward,
    .release = bidir_release,
};
