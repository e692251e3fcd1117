/* dist_optim.h — accumulation, clipping, the per-step rate and AdamW's decay
 * ranges around every trainer's host optimizer step. */
#ifndef PUNCH_DIST_OPTIM_H
#define PUNCH_DIST_OPTIM_H

#include <stdbool.h>

#include "distributed/dist_ctx.h"

/* The learning rate this epoch's steps use, after warm-up/reductions. */
float dist_optim_epoch_lr(dist_ctx *c, int epoch);

void dist_optim_setup(dist_ctx *c);
void dist_optim_free(dist_ctx *c);
/* The rate of the optimizer step at micro-batch `step` of `epoch`. */
float dist_optim_lr(const dist_ctx *c, long epoch, long step, long steps_per_epoch, float lr);
/* After model_backward: accumulate; at a group's end (or `last`), clip and
 * step. True when it stepped. */
bool dist_optim_local_step(dist_ctx *c, float lr, bool last);
/* allreduce with grad_accum_steps > 1 on the host: backward of this rank's
 * `batch` of the micro-step's `total`, accumulated; at a group's end one
 * MPI_Allreduce of the mean, clipping and the step. True when it stepped. */
bool dist_optim_reduced_step(dist_ctx *c, int batch, long total, float lr, bool last);

#endif
