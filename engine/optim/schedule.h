/* schedule.h — PyDTNN's learning-rate schedules and callbacks, driven once
 * per epoch by the trainer: warm_up, early_stopping, reduce_lr_on_plateau,
 * reduce_lr_every_nepochs, model_checkpoint. */
#ifndef PUNCH_SCHEDULE_H
#define PUNCH_SCHEDULE_H

#include <stdbool.h>

#include "spec.h"

typedef struct schedule_state {
    double lr;              /* the learning rate for the next epoch */
    double base_lr;         /* optimizer.learning_rate */
    int best_epoch[SPEC_MAX_SCHEDULES];
    double best[SPEC_MAX_SCHEDULES];
    int wait[SPEC_MAX_SCHEDULES];
    bool stop;              /* early stopping fired */
} schedule_state;

/* The values an epoch produced, by name: "loss", "accuracy", "val_loss",
 * "val_accuracy", ... A missing monitored value (no validation set) makes
 * that callback fall back from "val_X" to "X". */
typedef struct epoch_metrics {
    const char *names[16];
    double values[16];
    int n;
} epoch_metrics;

void schedule_init(schedule_state *st, const spec_training *t);

/* Before epoch `epoch` (0-based): sets st->lr (warm-up ramps linearly from
 * init_lr to base_lr over warmup_epochs). Returns st->lr. */
double schedule_epoch_begin(schedule_state *st, const spec_training *t, int epoch);

/* After epoch `epoch`: updates plateau/every-n reductions and early
 * stopping (st->stop), and returns true when model_checkpoint says to save
 * a checkpoint now (every every_epochs epochs; with a monitor, only when
 * it improved). */
bool schedule_epoch_end(schedule_state *st, const spec_training *t, int epoch,
                        const epoch_metrics *m);

/* Checkpointing: the whole state is plain data (memcpy-able). */

#endif
