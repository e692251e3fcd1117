/* schedule.h — PyDTNN's learning-rate schedules and callbacks, driven once
 * per epoch by the trainer: warm_up, early_stopping, reduce_lr_on_plateau,
 * reduce_lr_every_nepochs, model_checkpoint.
 *
 * Semantics (schedule.c has the details and where they depart from PyDTNN):
 * a monitor containing "accuracy" improves upwards, any other downwards, by
 * more than min_delta; patience counts epochs without improvement; a
 * reduction multiplies lr by factor, clamped to min_lr; warm-up owns the
 * rate during its ramp and reductions take effect once it has ended. */
#ifndef PUNCH_SCHEDULE_H
#define PUNCH_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "jobspec/spec.h"

/* Per-callback arrays are indexed like spec_training.schedules. */
typedef struct schedule_state {
    double lr;              /* the learning rate for the next epoch */
    double base_lr;         /* optimizer.learning_rate: where warm-up ends */
    int best_epoch[SPEC_MAX_SCHEDULES]; /* 0-based epoch of best[], -1 = none yet */
    double best[SPEC_MAX_SCHEDULES];    /* best monitored value so far (±inf at first) */
    int wait[SPEC_MAX_SCHEDULES];       /* epochs since the last improvement
                                           (plateau: or the last reduction) */
    bool stop;              /* early stopping fired: end training after this epoch
                               (best_epoch[i] says which epoch's weights were best) */
} schedule_state;

/* The values an epoch produced, by name: "loss", "accuracy", "val_loss",
 * "val_accuracy", ... A missing monitored value (no validation set) makes
 * that callback fall back from "val_X" to "X"; when neither is present the
 * callback does nothing that epoch (model_checkpoint saves periodically).
 * The names are borrowed; only the first 16 entries are read. */
typedef struct epoch_metrics {
    const char *names[16];
    double values[16];
    int n;
} epoch_metrics;

void schedule_init(schedule_state *st, const spec_training *t);

/* Before epoch `epoch` (0-based): sets st->lr (warm-up ramps linearly from
 * init_lr at epoch 0 to base_lr at epoch warmup_epochs). Returns st->lr,
 * the rate to hand to optim_step for every step of this epoch. */
double schedule_epoch_begin(schedule_state *st, const spec_training *t, int epoch);

/* After epoch `epoch`: updates plateau/every-n reductions and early
 * stopping (st->stop, also set once t->stop_metric reaches
 * t->stop_threshold: training.stop_at_loss), and returns true when model_checkpoint says to save
 * a checkpoint now (every every_epochs epochs; with a monitor, only when
 * it improved). An empty monitor ("") means none. */
bool schedule_epoch_end(schedule_state *st, const spec_training *t, int epoch,
                        const epoch_metrics *m);

/* The per-step rates, of the step after `steps_done` optimizer steps of a
 * run of `run_steps` (the default end of cosine's decay; 0 = unknown),
 * where lr is the epoch's rate (schedule_epoch_begin). Every trainer
 * applies them per optimizer step of its own (allreduce: per global step;
 * the others per worker), counting optimizer steps, not micro-batches
 * (schedule_opt_steps).
 * - training.warm_up_batches (PyDTNN's --warm_up_batches): lr / N,
 *   2 lr / N, ... up to lr over the first N steps, then lr.
 * - the cosine schedule, nanoGPT's get_lr(it) with it = steps_done:
 *     it < W:  lr * (it + 1) / (W + 1)           (W = warmup_steps)
 *     it > D:  min_lr                            (D = decay_steps or run_steps)
 *     else:    min_lr + 0.5 * (1 + cos(pi * (it - W) / (D - W))) * (lr - min_lr). */
float schedule_step_lr(const spec_training *t, uint64_t steps_done, uint64_t run_steps,
                       float lr);

/* Optimizer steps taken before micro-batch `step` of 0-based epoch `epoch`
 * with `accum` micro-batches per step (training.grad_accum_steps), when an
 * epoch has steps_per_epoch micro-batches and its last, partial group
 * steps too (ceil(steps_per_epoch / accum) steps an epoch). With
 * epoch = epochs and step = 0 it is the run's total. Derived from the
 * checkpointed position, so a resumed run counts on exactly. */
uint64_t schedule_opt_steps(long epoch, long step, long steps_per_epoch, int accum);

/* Checkpointing: the whole state is plain data (memcpy-able); restoring it
 * and calling schedule_epoch_begin for the next epoch continues exactly as
 * an uninterrupted run. */

#endif
