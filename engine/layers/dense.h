/* dense.h — what the model calls on a dense layer beyond its layer_ops:
 * the backward pass with the optimizer step fused into it. */
#ifndef PUNCH_LAYER_DENSE_H
#define PUNCH_LAYER_DENSE_H

#include <stdbool.h>

#include "layers/layer.h"

/* The layer's backward (as layer_dense_ops.backward), calling
 * update(ctx, begin, end) on ranges of its parameter block [0, n_params)
 * as soon as their gradients are final and the old weights are no longer
 * read (backend dense_backward_update). Returns false, having done
 * nothing, when the backend has no such op. */
bool layer_dense_backward_update(layer *l, backend *be, int batch,
                                 void (*update)(void *ctx, long begin, long end), void *ctx);

#endif
