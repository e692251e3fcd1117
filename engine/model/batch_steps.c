/* batch_steps.c — a sequence batch runs at its own steps T_b, its longest
 * sample's length, instead of data.max_length T.
 *
 * The buffers stay sized for T (model_create; steps stay allocation-free)
 * but a batch's sequence tensors are packed (batch, T_b, features): the
 * per-step GEMMs (dense, the LSTM/GRU input projection, conv1d's im2col,
 * attention's projections) shrink with the rows, and every loop over time
 * stops at T_b. A layer whose output length is its own (a windowed
 * pooling, a valid or strided conv1d) runs at the output length a sample
 * of T_b steps gets (layer_seq_length), the longest of the batch's since
 * it grows with the input's. Every layer reads only real steps and writes
 * zeros past them, so the padding it no longer sees changed nothing: a
 * sample's results are those of the full-T run (the same bits, but for the
 * GEMMs that sum over rows, whose blocking follows the row count: the
 * weight gradients agree to float rounding). Random masks (dropout, the
 * attention's dropout) are drawn at the packed positions, so with dropout
 * a batch draws other (equally random, reproducible) masks than at T.
 *
 * A model with a layer laid out over all T steps (flatten, a softmax
 * layer over a whole sequence...) keeps running at T. The per-step loss
 * keeps its full-T layout (unpacked after the last layer): the targets,
 * the probabilities and what a trainer or /predict reads do not change. */
#include "model/batch_steps.h"

#include <string.h>

bool batch_steps_allowed(const model *m)
{
    for (int i = 0; i < m->n_layers; i++) {
        const spec_layer *s = &m->spec->layers[i];
        if ((s->in_shape.rank == 2 || s->out_shape.rank == 2) && !layer_runs_short(s))
            return false;
    }
    return true;
}

/* The longest length of the batch, or T when the model runs at T. */
static int batch_steps_of(const model *m, int batch)
{
    if (!m->short_steps)
        return m->steps;
    int most = 1;
    for (int r = 0; r < batch; r++)
        if (m->lengths[r] > most)
            most = m->lengths[r];
    return most;
}

/* Each layer's steps from its first input's, in layer order. */
static void batch_steps_layers(model *m, int steps)
{
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        const spec_layer *s = l->spec;
        int src = s->inputs[0];
        l->steps = s->in_shape.rank != 2 ? 0 : src < 0 ? steps : m->layers[src].out_steps;
        l->out_steps = 0;
        if (s->out_shape.rank != 2)
            continue;
        int n = l->steps > 0 ? l->steps : steps;
        layer_seq_length(s, &n);
        l->out_steps = n;
    }
}

/* Rows of `per` floats at stride `from` moved to stride `to` (to < from:
 * first to last, each row to an address at or below its own). */
static void batch_steps_pack(float *x, int batch, long from, long to, long per)
{
    for (long r = 0; r < batch; r++)
        memmove(x + r * to, x + r * from, (size_t)per * sizeof *x);
}

void batch_steps_set(model *m, int batch)
{
    int steps = batch_steps_of(m, batch);
    m->batch_steps = steps;
    m->seq_steps_run += (long)batch * steps;
    batch_steps_layers(m, steps);
    if (steps == m->steps)
        return;
    long per_step = m->in_size / m->steps;
    batch_steps_pack(m->host_x, batch, m->in_size, per_step * steps, per_step * steps);
}

void batch_steps_unpack_output(model *m, int batch)
{
    layer *last = &m->layers[m->n_layers - 1];
    if (m->out_steps == 0 || last->out_steps == m->out_steps)
        return;
    long packed = (long)last->out_steps * m->classes, full = m->n_out;
    /* Last to first: each row moves to an address at or above its own. */
    for (long r = batch - 1; r >= 0; r--) {
        memmove(last->y + r * full, last->y + r * packed, (size_t)packed * sizeof *last->y);
        memset(last->y + r * full + packed, 0, (size_t)(full - packed) * sizeof *last->y);
    }
}

void batch_steps_pack_output_grad(model *m, int batch)
{
    layer *last = &m->layers[m->n_layers - 1];
    if (m->out_steps == 0 || last->out_steps == m->out_steps)
        return;
    long packed = (long)last->out_steps * m->classes;
    batch_steps_pack(last->dy, batch, m->n_out, packed, packed);
}
