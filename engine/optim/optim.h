/* optim.h — optimizers over one flat parameter buffer: SGD (momentum,
 * Nesterov, decay), RMSprop, Adam, Nadam, with the Keras defaults. One call
 * updates every parameter of the model, so a distributed trainer averages
 * the gradient buffer once and steps once. */
#ifndef PUNCH_OPTIM_H
#define PUNCH_OPTIM_H

#include <stddef.h>

#include "spec.h"

typedef struct optimizer optimizer;

/* Allocates the state for n parameters (zeroed). NULL on allocation failure. */
optimizer *optim_create(const spec_optimizer *cfg, long n);
void optim_free(optimizer *o);

/* One update: params -= f(grads) at learning rate lr (the schedule's
 * current rate; the optimizer applies its own `decay` on top, from its
 * iteration count). Adds weight_decay * params to the gradient first. */
void optim_step(optimizer *o, float *params, const float *grads, long n, float lr);

/* Iterations taken so far. */
long optim_iterations(const optimizer *o);

/* Checkpointing: the state (slots plus iteration count) as one flat float
 * buffer of optim_state_floats() floats, restorable bit-exactly. */
long optim_state_floats(const optimizer *o);
void optim_state_save(const optimizer *o, float *dst);
void optim_state_load(optimizer *o, const float *src);

#endif
