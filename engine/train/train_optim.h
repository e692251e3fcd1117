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

#include <stdbool.h>
#include <stddef.h>

#include "gpu/gpu.h"
#include "model/model.h"
#include "optim/optim.h"

typedef struct train_optim {
    optimizer *host;    /* steps on host backends; the checkpoint's state */
    gpu_optim *dev;     /* device backends: steps; NULL on the host */
    grad_accum acc;     /* training.grad_accum_steps (host backends) */
    double clip_norm;   /* training.clip_norm; 0 = off */
} train_optim;

/* The optimizer of tr->optimizer for m's parameters on m's backend, with
 * tr's clipping and accumulation. -1 + message on failure (t is then safe
 * to close). */
int train_optim_open(train_optim *t, model *m, const spec_training *tr, char *err,
                     size_t errlen);
void train_optim_close(train_optim *t);

/* Backward pass of the loaded batch, added to the accumulated gradient;
 * when it completes a group of grad_accum_steps micro-batches, or `last`
 * says the epoch ends here, one step at rate lr (clipped first). */
void train_optim_backward_step(train_optim *t, model *m, int batch, float lr, bool last);

/* Whether micro-batches of an unfinished accumulation group are pending:
 * their summed gradient is not checkpointed, so the trainer stops only
 * between groups. */
bool train_optim_group_open(const train_optim *t);

/* adamw without decay_all: tells o which of m's parameters decay — the
 * parameter tensors of rank >= 2 (dense and convolution kernels, recurrent
 * matrices), not biases (any tensor named "*bias*"), normalisation scales
 * and shifts (rank 1) nor embeddings (any tensor named "*embedding*").
 * Every trainer calls it on its host optimizer. 0, or -1 when out of
 * memory; a no-op for the other optimizers and with decay_all. */
int train_optim_decay_ranges(optimizer *o, const model *m, const spec_optimizer *cfg);

/* What the device optimizers (gpu_optim) do not implement yet: adamw,
 * clip_norm and grad_accum_steps. -1 + a message naming the field when tr
 * asks for one, for trainers about to run on a device backend. */
int train_optim_device_check(const spec_training *tr, char *err, size_t errlen);

/* Device state -> t->host, before t->host is checkpointed. -1 + message
 * on failure. A no-op on the host. */
int train_optim_pull(train_optim *t, char *err, size_t errlen);

/* t->host -> device, after a checkpoint was loaded into t->host (already
 * validated by checkpoint_load). -1 + message on failure. A no-op on the
 * host. */
int train_optim_push(train_optim *t, char *err, size_t errlen);

#endif
