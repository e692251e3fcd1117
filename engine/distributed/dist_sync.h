/* dist_sync.h — what the synchronous trainers share: the end-of-epoch
 * schedule, gathered sums, the final weights. */
#ifndef PUNCH_DIST_SYNC_H
#define PUNCH_DIST_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "distributed/dist_ctx.h"
#include "distributed/dist_eval.h"

/* The schedule's end-of-epoch step on the given metrics (rank 0 of the
 * synchronous trainers, the parameter server). Returns true when a
 * model_checkpoint callback says to save the weights now. */
bool dist_schedule_end(dist_ctx *c, int epoch, const dist_sums *train, bool has_val,
                       const dist_sums *val);
/* After an epoch: rank 0 runs the schedule on the global metrics and
 * broadcasts its state and *save (model_checkpoint's verdict), so every
 * rank uses the same rate, stops together and joins in a save. Returns
 * true when early stopping fired. */
bool dist_sync_schedule(dist_ctx *c, int epoch, const dist_sums *train, bool has_val,
                        const dist_sums *val, bool *save);
/* Gather each rank's sums to rank 0 (per_worker: size entries there) and
 * return their total on rank 0. */
dist_sums dist_gather_sums(dist_ctx *c, const dist_sums *mine, dist_sums *per_worker);
/* Rank 0 records every rank's communication and training seconds. */
void dist_sync_report_times(dist_ctx *c);
/* Rank 0, at the end of a synchronous run: weights.safetensors and
 * weights.npz from this rank's model, then the "end" event with the test
 * sums (when the job has a test set). Ends the job on failure. */
void dist_sync_write_final(dist_ctx *c, const dist_sums *test);
/* Abort unless every rank holds bit-identical parameters. */
void dist_check_identical(dist_ctx *c, uint64_t step);

#endif
