/* model.h — a model built from a validated job spec: its layers wired into
 * a graph, ONE parameter buffer and ONE gradient buffer (each layer's
 * tensors are slices of them, so an allreduce or an optimizer step moves
 * the whole model in one call), a separate state buffer for batchnorm
 * running statistics, the loss and the metrics.
 *
 * A training step is:
 *   model_load_batch(m, data, idx, batch)   host samples -> device
 *   model_forward(m, batch, true, step)     activations
 *   model_loss(m, batch, &metrics)          loss sum, output gradient
 *   model_backward(m, batch)                m->grads = d(mean loss)/d(params)
 *   model_optimizer_step(m, opt, lr)        params updated
 * (the last two fused in model_backward_step on a single trainer).
 * A distributed trainer inserts its gradient exchange on m->grads (n_params
 * floats) between model_backward and model_optimizer_step.
 *
 * Every parameter tensor starts 256 bytes aligned in the flat buffers
 * (LAYER_PARAM_ALIGN): n_params counts the buffer with its padding, which
 * stays zero (no op writes it; every optimizer keeps a zero parameter with
 * a zero gradient at zero), and n_trainable the real parameters, the count
 * a user sees. Weight files hold only the tensors (model_tensors).
 *
 * All buffers are allocated in model_create; nothing is allocated per step. */
#ifndef PUNCH_MODEL_H
#define PUNCH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "data/dataset.h"
#include "io/tensorfile.h"
#include "layers/layer.h"
#include "optim/optim.h"
#include "jobspec/spec.h"
#include "model/profile.h"

/* How the last layer meets the loss. */
typedef enum model_output_kind {
    OUTPUT_PLAIN,           /* loss on the last layer's output */
    OUTPUT_SOFTMAX_LOGITS,  /* categorical cross-entropy: the last layer's
                               output are logits, softmax fused into the loss */
} model_output_kind;

typedef struct model {
    const job_spec *spec;
    backend *be;
    int max_batch;
    int n_layers;
    layer *layers;

    long n_params;          /* floats in params and grads, padding included */
    long n_trainable;       /* real parameters (the spec's count) */
    long n_state;           /* floats in state */
    float *params;          /* device: every trainable parameter */
    float *grads;           /* device: same layout as params */
    float *state;           /* device: batchnorm running statistics */

    long in_size;           /* floats per input sample */
    int n_out;              /* outputs per sample (= classes; T * classes
                               for a per-step model) */
    /* Per-step outputs (data.per_step_labels): the last layer's output is
     * [T, classes], one prediction per step, and the loss and the metrics
     * run over each sample's real steps only. out_steps = T (0 for one
     * prediction a sample); classes = the outputs of one prediction
     * (= n_out when out_steps is 0). */
    int out_steps;
    int classes;
    float *x;               /* device (max_batch, in_size) */
    float *targets;         /* device (max_batch, n_out) one-hot */
    float *probs;           /* device (max_batch, n_out) softmax output
                               (OUTPUT_SOFTMAX_LOGITS only) */
    const float *output;    /* what metrics and predictions read: probs or
                               the last layer's output */
    /* Sequences (model.input {"sequence": [F]} or {"tokens": V}): steps =
     * data.max_length, lengths (host, max_batch) each loaded sample's real
     * steps (dataset.len, or steps when the data has none). steps 0 and
     * lengths NULL otherwise. */
    int steps;
    int32_t *lengths;
    /* Per layer, the lengths of its output: its input's, or for a pooling
     * window over time (maxpool1d, avgpool1d) its own, computed at every
     * batch load into seq_lengths (max_batch per such layer). Each layer's
     * layer.lengths is the array of its first input. */
    const int32_t **out_lengths;
    int32_t *seq_lengths;
    /* A sequence batch runs at its longest sample's steps (batch_steps
     * below steps) when short_steps (every layer allows it,
     * model/batch_steps.c); seq_steps_run adds batch x batch_steps at
     * every batch load: the sample-steps the layers ran. */
    bool short_steps;
    int batch_steps;
    long seq_steps_run;
    model_output_kind output_kind;

    /* Internal. */
    float *activations;     /* one allocation: every layer's y, dy, aux */
    float *workspace;
    long workspace_floats;
    bool *grad_written;     /* per layer, during backward */
    float *host_x;          /* (max_batch, in_size) staging (= x on host backends) */
    float *host_t;          /* (max_batch, n_out) staging (= targets on host backends) */
    float *host_params;     /* n_params mirror for device backends */
    float *host_grads;      /* n_params mirror for device backends */
    uint64_t seed;
    model_profile *profile; /* training.profile: layer times; NULL = off */
} model;

/* Build the model of a validated spec on `be` for batches up to max_batch.
 * Parameters are zero until model_init_params or model_load_tensors.
 * NULL + message on failure (e.g. a loss the last layer cannot feed). */
model *model_create(const job_spec *spec, backend *be, int max_batch, char *err,
                    size_t errlen);
void model_free(model *m);

/* Glorot uniform weights, zero biases, batchnorm gamma 1 / beta 0 /
 * running var 1, all from `seed` (one stream per layer): the same seed
 * gives the same bits. Also fixes the seed of the dropout masks. */
int model_init_params(model *m, unsigned long seed, char *err, size_t errlen);

/* Gather samples idx[0..batch) of d (host) into the input and one-hot
 * target buffers. Labels outside [0, n_out) are an error (-1). On a
 * sequence model it also sets m->lengths from d->len (a length outside
 * [1, steps] is an error), zeroes each sample's padding steps in the
 * input, and on a token model refuses an id at a real step that is not a
 * whole number in [0, model.input.tokens). */
int model_load_batch(model *m, const dataset *d, const int64_t *idx, int batch, char *err,
                     size_t errlen);
/* model_load_batch for training in `epoch`: the samples are transformed
 * as the spec's data.augment says (dataset_augment_sample, keyed by
 * training.seed, epoch and each sample's index in d) before they go to
 * the device; without data.augment it is model_load_batch. Validation,
 * test and prediction batches never go through it. */
int model_load_train_batch(model *m, const dataset *d, const int64_t *idx, int batch,
                           int epoch, char *err, size_t errlen);
/* Contiguous samples [first, first + batch) of d. */
int model_load_range(model *m, const dataset *d, long first, int batch, char *err,
                     size_t errlen);

/* Forward pass over the loaded batch. `step` (the global training step)
 * seeds this step's dropout masks. */
void model_forward(model *m, int batch, bool training, uint64_t step);

/* Loss of the forward pass: returns the SUM over the batch of per-sample
 * losses, fills the metric sums (metrics may be NULL) and writes the
 * output gradient for model_backward. On a per-step model the sums run
 * over the real steps of the batch (padding steps add neither loss, nor
 * gradient, nor a metric count), and the gradient is that of the MEAN
 * loss over those steps (PyTorch's CrossEntropyLoss with ignore_index). */
double model_loss(model *m, int batch, batch_metrics *metrics);

/* How many terms model_loss summed over the loaded batch: `batch`, or on
 * a per-step model the real steps of its samples. Every trainer divides
 * its loss and metric sums by the total of these. */
long model_loss_terms(const model *m, int batch);

/* A metric's value from metric sums over n terms (model_loss_terms) (summed batch_metrics
 * of model_loss): accuracy = correct / n, mse = sq_err / (n * n_out), mae
 * = abs_err / (n * n_out); 0 when n <= 0. The one definition every
 * trainer reports with. */
double model_metric(const batch_metrics *sums, double n, spec_metric metric, int n_out);

/* Backward pass: m->grads = gradient of the mean batch loss. */
void model_backward(model *m, int batch);

/* model_backward calling after_layer(ctx, i) once layer i's parameter
 * gradients are final (layers run from the last to the first; gradients
 * of layer i occupy [layers[i].grads - grads, + param_span) of the flat
 * buffer, after those of layer i-1), so a distributed trainer can start
 * reducing a bucket while earlier layers still compute. */
typedef void (*model_layer_hook)(void *ctx, int layer);
void model_backward_hooked(model *m, int batch, model_layer_hook after_layer, void *ctx);

/* model_backward then model_optimizer_step, with the step fused into the
 * backward pass: each layer's parameters are updated once its gradients
 * are final and no longer needed (a dense layer's inside its backward
 * op's parallel chunks, while the gradients are in cache). The same bits
 * as the two calls; m->grads still holds the gradients afterwards. Not
 * for distributed trainers, which exchange gradients before stepping. */
void model_backward_step(model *m, int batch, optimizer *opt, float lr);

/* params -= optimizer(grads) on whatever memory the backend uses. */
void model_optimizer_step(model *m, optimizer *opt, float lr);

/* Host copies of params / state (n_params / n_state floats). */
void model_get_params(model *m, float *host);
void model_set_params(model *m, const float *host);
void model_get_state(model *m, float *host);
void model_set_state(model *m, const float *host);

/* The weight-file view: one entry per named tensor, keys INDEX.TYPE.PARAM
 * ("0.dense.weight" [in, out], "2.conv2d.weight" [k, c, kh, kw],
 * "3.batchnorm.running_mean" ...), data pointing into the host buffers
 * `params` and `state` (from model_get_params / model_get_state). Returns
 * the count; *out is heap (free()). -1 on allocation failure. */
int model_tensors(const model *m, float *params, float *state, tensor_entry **out);

/* Load weights by key from entries (e.g. from safetensors_read): every
 * tensor of the model must be present with its exact shape. -1 + message
 * naming the first missing or mismatched key. */
int model_load_tensors(model *m, const tensor_entry *t, int n, char *err, size_t errlen);

#endif
