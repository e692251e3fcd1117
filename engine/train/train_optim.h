/* train_optim.h — the single trainer's optimizer: on a host backend the
 * host optimizer, fused into the backward pass (model_backward_step); on a
 * device backend the device optimizer (gpu.h's gpu_optim), so a step moves
 * nothing between host and device.
 *
 * Checkpoints keep optim.h's layout either way: `host` is the checkpoint's
 * view of the state. On a device it is filled from the device before a
 * checkpoint is written (train_optim_pull) and copied to the device after
 * one is read (train_optim_push): once per checkpoint, never per step. So
 * a checkpoint written on the CPU resumes on a GPU and the other way round,
 * and warm starts and --resume work as they did. */
#ifndef PUNCH_TRAIN_OPTIM_H
#define PUNCH_TRAIN_OPTIM_H

#include <stddef.h>

#include "gpu/gpu.h"
#include "model/model.h"
#include "optim/optim.h"

typedef struct train_optim {
    optimizer *host;    /* steps on host backends; the checkpoint's state */
    gpu_optim *dev;     /* device backends: steps; NULL on the host */
} train_optim;

/* The optimizer of `cfg` for m's parameters on m's backend. -1 + message
 * on failure (t is then safe to close). */
int train_optim_open(train_optim *t, model *m, const spec_optimizer *cfg, char *err,
                     size_t errlen);
void train_optim_close(train_optim *t);

/* Backward pass of the loaded batch, then one step at rate lr. */
void train_optim_backward_step(train_optim *t, model *m, int batch, float lr);

/* Device state -> t->host, before t->host is checkpointed. -1 + message
 * on failure. A no-op on the host. */
int train_optim_pull(train_optim *t, char *err, size_t errlen);

/* t->host -> device, after a checkpoint was loaded into t->host (already
 * validated by checkpoint_load). -1 + message on failure. A no-op on the
 * host. */
int train_optim_push(train_optim *t, char *err, size_t errlen);

#endif
