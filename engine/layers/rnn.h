/* rnn.h — one direction of a recurrent layer, shared by the lstm and gru
 * layers (rnn.c) and bidirectional (bidirectional.c): its descriptor, its
 * three tensors and their Keras initialisation. */
#ifndef PUNCH_LAYER_RNN_H
#define PUNCH_LAYER_RNN_H

#include <stdbool.h>
#include <stddef.h>

#include "layers/layer.h"

/* Fill d for a `cell` (LAYER_LSTM or LAYER_GRU) over the layer's input and
 * prepare it on the backend. Returns the workspace floats, or -1 with a
 * message (the backend has no recurrent ops, or cannot prepare). */
long layer_rnn_prepare(layer *l, backend *be, rnn_desc *d, spec_layer_type cell,
                       bool go_backwards, bool time_order, char *err, size_t errlen);

/* Record kernel, recurrent_kernel and bias (named by `names`) from param
 * offset `offset` (aligned); returns the offset after them. The tensors
 * are l->tensors[first .. first + 2]. */
long layer_rnn_add_tensors(layer *l, const rnn_desc *d, long offset,
                           const char *const names[3]);

/* Keras's initialisation of one direction whose tensors start at
 * l->tensors[first]: kernel Glorot uniform, recurrent kernel orthogonal,
 * bias zero (lstm: forget gate 1). */
void layer_rnn_init(const layer *l, const rnn_desc *d, int first, float *params, rng *r);

/* Direction k's descriptor at this batch's steps (layer_steps). */
rnn_desc layer_rnn_desc(const layer *l, int k);

/* The direction's tensors as pointers into params (or grads). */
void layer_rnn_tensors(const layer *l, int first, float *base, float **w, float **r,
                       float **b);

#endif
