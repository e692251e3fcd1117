/* batch_steps.h — a sequence batch runs at its own steps (model.c's
 * internal helpers; batch_steps.c says how). */
#ifndef PUNCH_BATCH_STEPS_H
#define PUNCH_BATCH_STEPS_H

#include "model/model.h"

/* Whether every layer of m that reads a sequence can run it at fewer
 * steps than data.max_length (layer_runs_short). */
bool batch_steps_allowed(const model *m);

/* After the loaded batch's lengths (m->lengths, m->out_lengths) are set
 * and its staged input (m->host_x, full-length rows) is zeroed past them:
 * the batch's steps, each layer's steps and out_steps, and the input
 * packed at those steps. Before the upload. */
void batch_steps_set(model *m, int batch);

/* A per-step model's last output, packed at the batch's steps, spread out
 * to the full T rows the loss, the metrics and predictions read (zeros
 * past), and its gradient packed back before the last layer's backward. */
void batch_steps_unpack_output(model *m, int batch);
void batch_steps_pack_output_grad(model *m, int batch);

#endif
