/* checkpoint.h — checkpoints/ckpt.bin of a single-process run: everything
 * a resumed run needs to continue bit-identically — parameters, batchnorm
 * state, optimizer state, the schedule state, the history so far, and the
 * position in the data (epoch, step within it, global step, and the
 * partial sums of the epoch in progress).
 *
 * Layout (little-endian x86 host order; written and read by the same
 * engine): "PUNCHCK1", u64 version, u64 spec hash, the checkpoint_head
 * fields, schedule_state bytes, n_history epoch_records, params, state,
 * optimizer floats, then a u32 CRC-32 of all that precedes it. */
#ifndef PUNCH_CHECKPOINT_H
#define PUNCH_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "model/model.h"
#include "train/runlog.h"
#include "optim/optim.h"
#include "optim/schedule.h"
#include "jobspec/spec.h"

typedef struct train_position {
    int64_t epoch;          /* epoch in progress, 0-based */
    int64_t step;           /* steps of it already taken */
    int64_t global_step;    /* steps since the start of training */
    int64_t samples;        /* samples of this epoch already seen */
    int64_t terms;          /* their loss terms (model_loss_terms): the
                               divisor of loss_sum and sums */
    double loss_sum;        /* this epoch's partial sums */
    batch_metrics sums;
    double elapsed_s;       /* training time of this epoch so far */
} train_position;

/* A hash of everything in the spec that shapes the run (not its name,
 * resources or epoch count), so a checkpoint is never resumed into a
 * different job. */
uint64_t checkpoint_spec_hash(const job_spec *spec);

/* Write DIR/checkpoints/ckpt.bin atomically. */
int checkpoint_save(const char *dir, uint64_t spec_hash, const train_position *pos,
                    const schedule_state *sched, const run_history *hist, model *m,
                    const optimizer *opt, char *err, size_t errlen);

/* Read DIR/checkpoints/ckpt.bin into the given objects. Returns 1 when
 * there is no checkpoint, 0 when loaded, -1 + message when it is corrupt,
 * truncated, or belongs to another job. */
int checkpoint_load(const char *dir, uint64_t spec_hash, train_position *pos,
                    schedule_state *sched, run_history *hist, model *m, optimizer *opt,
                    char *err, size_t errlen);

/* Read only the optimizer state of the checkpoint file at path (another
 * run's, any spec: PBT's exploit carries its donor's momenta into a run
 * with explored hyperparameters) into opt. The model and optimizer must
 * have the sizes the checkpoint was written with. 0, or -1 + message
 * naming the file (missing, corrupt, or of another model or optimizer). */
int checkpoint_load_optimizer(const char *path, const model *m, optimizer *opt, char *err,
                              size_t errlen);

#endif
