/* layer.h — one layer of a model: its shapes, its slice of the model's
 * parameter, gradient and state buffers, and a forward/backward pair that
 * calls only the backend (backend/backend.h), so the same layer code runs on
 * the CPU and on a GPU.
 *
 * The model (model/model.c) owns every buffer and wires the graph: it sets
 * each layer's input pointers (x[i], dx[i]), its output (y, dy), its slices
 * of the flat buffers (params, grads, state), its aux buffer (aux_floats
 * floats: dropout mask, batchnorm saved statistics) and the shared
 * workspace. Layers only compute. */
#ifndef PUNCH_LAYER_H
#define PUNCH_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/rng.h"
#include "jobspec/spec.h"

#define LAYER_MAX_TENSORS 8 /* bidirectional: kernel, recurrent_kernel, bias each way */
/* Every parameter tensor starts at a multiple of this many floats (256
 * bytes) of the model's flat buffers, and every layer's slice is a
 * multiple of it long: cuDNN's kernels and vector loads want aligned
 * tensors. The padding floats stay zero (model/model.c). */
#define LAYER_PARAM_ALIGN 64L

/* A named tensor of a layer for weight files: "weight" [in, out] lives at
 * params + offset (or state + offset when is_state). Layers find their
 * parameter tensors through offset: a parameter tensor's offset is a
 * multiple of LAYER_PARAM_ALIGN. */
typedef struct layer_tensor {
    const char *name;
    int rank;
    long dims[4];
    long offset;
    bool is_state;
} layer_tensor;

typedef struct layer layer;

typedef struct layer_ops {
    /* Fill descriptors and sizes from l->spec and l->max_batch: n_params,
     * n_state, aux_floats, workspace_floats, tensors. Return 0, or -1 with
     * a message. */
    int (*setup)(layer *l, backend *be, char *err, size_t errlen);
    /* Initial values into host buffers shaped like params and state. */
    void (*init)(const layer *l, float *params, float *state, rng *r);
    /* y = f(x...) for `batch` samples. `seed` draws this step's dropout. */
    void (*forward)(layer *l, backend *be, int batch, bool training, uint64_t seed);
    /* From dy: grads (overwritten) and dx[i] (+)= per dx_accumulate[i];
     * dx[i] NULL when that input needs no gradient. May clobber dy. */
    void (*backward)(layer *l, backend *be, int batch);
    /* Release backend descriptors (never the buffers: the model owns them). */
    void (*release)(layer *l, backend *be);
} layer_ops;

struct layer {
    const spec_layer *spec;
    int index;
    const layer_ops *ops;
    int max_batch;
    spec_activation act;       /* fused activation actually applied; the model
                                  sets ACT_NONE on the last layer when softmax
                                  is fused into the loss */
    long in_size;              /* floats per sample of inputs[0] */
    long out_size;             /* floats per sample of the output */

    /* Sizes from setup(). n_params counts the real parameters (the spec's
     * count); param_span (set by layer_add_tensor) is the floats of the
     * flat params/grads buffers the layer occupies, padding included. */
    long n_params, n_state, aux_floats, workspace_floats;
    long param_span;
    layer_tensor tensors[LAYER_MAX_TENSORS];
    int n_tensors;

    /* Wired by the model (device memory). */
    int n_in;
    const float *x[SPEC_MAX_INPUTS];   /* (batch, in_size_i) */
    float *dx[SPEC_MAX_INPUTS];        /* same shape, or NULL */
    bool dx_accumulate[SPEC_MAX_INPUTS];
    long x_size[SPEC_MAX_INPUTS];      /* floats per sample of each input */
    float *y, *dy;                     /* (batch, out_size) */
    float *params, *grads, *state, *aux, *workspace;
    /* Sequences: each sample's real length (host memory, `batch` entries,
     * each in [1, steps]), set by the model before every forward and
     * backward; NULL when the model's input is not a sequence. A layer on
     * a sequence reads its input only at real steps, writes zeros at the
     * padding steps of y and of dx, and never reads dy there. */
    const int32_t *lengths;
    /* Sequences: the steps of this batch, of the layer's first input and
     * of its output, set by the model with the lengths (the spec's dims
     * until then; per batch the longest sample's, model/model.c). A
     * sequence tensor is packed (batch, steps, features) at that length;
     * layer_x_floats and layer_y_floats give a sample's floats. Nothing
     * at the steps past them is read: every sample is padding there. */
    int steps, out_steps;
    /* multi_head_attention: the last forward's dropout seed and mode, so
     * its backward redraws the same mask. */
    uint64_t step_seed;
    bool step_training;
    /* sinusoidal_position: its fixed table {steps, features} in host
     * memory, made by setup and freed by release. */
    float *host_table;
    /* Tied weights (a dense layer's spec tie_embedding), wired by the
     * model: the dense layer reads the embedding's table as tied_weight
     * and leaves its gradient of it in tied_grad (its aux); the
     * embedding, whose backward runs later, adds tied_grad to its own. */
    const float *tied_weight;   /* dense: the embedding's params {V, E} */
    const float *tied_grad;     /* embedding: the dense layer's {V, E}, or NULL */

    /* Backend descriptors, by layer type. */
    union {
        conv2d_desc conv;
        pool2d_desc pool;
        batchnorm_desc bn;
        rnn_desc rnn[2];   /* lstm, gru: [0]; bidirectional: forward, backward */
    } desc;
};

/* The ops of a layer type (never NULL for a valid type). */
const layer_ops *layer_ops_for(spec_layer_type type);

/* The per-type ops, one per file in engine/layers/. */
extern const layer_ops layer_dense_ops;
extern const layer_ops layer_conv2d_ops;
extern const layer_ops layer_maxpool2d_ops;
extern const layer_ops layer_avgpool2d_ops;
extern const layer_ops layer_dropout_ops;
extern const layer_ops layer_flatten_ops;
extern const layer_ops layer_batchnorm_ops;
extern const layer_ops layer_activation_ops;
extern const layer_ops layer_add_ops;
extern const layer_ops layer_concat_ops;
extern const layer_ops layer_lstm_ops;           /* rnn.c */
extern const layer_ops layer_gru_ops;            /* rnn.c */
extern const layer_ops layer_bidirectional_ops;  /* bidirectional.c */
extern const layer_ops layer_embedding_ops;
extern const layer_ops layer_conv1d_ops;
extern const layer_ops layer_global_pool1d_ops; /* global_maxpool1d, global_avgpool1d */
extern const layer_ops layer_pool1d_ops;        /* maxpool1d, avgpool1d */
extern const layer_ops layer_layer_norm_ops;
extern const layer_ops layer_positional_embedding_ops; /* position.c */
extern const layer_ops layer_sinusoidal_position_ops;  /* position.c */
extern const layer_ops layer_attention_ops;            /* multi_head_attention */

/* Shared helpers. */

/* The activation a layer applies last: the fused one of dense/conv2d, the
 * function of an activation layer, ACT_NONE for the rest. */
spec_activation layer_final_activation(const spec_layer *s);

/* Floats of a tensor (the product of its dims). */
long layer_tensor_size(const layer_tensor *t);
/* n rounded up to a multiple of LAYER_PARAM_ALIGN. */
long layer_param_align(long n);
/* Record a tensor of the layer for weight files; a parameter tensor's
 * offset must be aligned (layer_param_align) and extends param_span. */
void layer_add_tensor(layer *l, const char *name, bool is_state, long offset, int rank,
                      long d0, long d1, long d2, long d3);
/* dx = dy, or dx += dy when accumulating. */
void layer_pass_gradient(backend *be, const float *dy, float *dx, bool accumulate, long n);
/* The Glorot uniform limit sqrt(6 / (fan_in + fan_out)). */
double layer_init_limit(long fan_in, long fan_out);
/* The total padding "same" needs beyond pad_before, from the output size. */
int layer_pad_after(int in, int out, int kernel, int stride, int dilation, int pad_before);

/* This batch's steps of the first input and of the output (layer.steps,
 * layer.out_steps; the spec's dims where the model has not set them, as
 * in the layer tests). Meaningful on sequences (rank-2 shapes) only. */
int layer_steps(const layer *l);
int layer_out_steps(const layer *l);
/* Floats per sample of input i and of the output at this batch's steps
 * (x_size[i] and out_size for a full-length batch). */
long layer_x_floats(const layer *l, int i);
long layer_y_floats(const layer *l);
/* Whether a layer of this type runs a sequence batch at the batch's own
 * steps (layer.steps below the spec's T) with the same results as at T:
 * false for a layer whose parameters or output are laid out over all T
 * steps (flatten, batchnorm, conv2d...), which keeps its model at T. */
bool layer_runs_short(const spec_layer *s);

/* The window of a maxpool1d/avgpool1d layer into *d, true; false for
 * every other type. */
bool layer_pool1d_desc(const spec_layer *s, pool1d_desc *d);
/* The geometry of a conv1d layer. */
void layer_conv1d_desc(const spec_layer *s, int max_batch, conv1d_desc *d);
/* Sequence layers that shorten each sample by its own amount (a windowed
 * pool; a valid or strided conv1d): true, with *len mapped from the
 * input's length to the output's. false for every other layer, whose
 * output keeps its input's lengths. */
bool layer_seq_length(const spec_layer *s, int *len);

/* Graph fusion, after every layer's setup and before buffers are sized: a
 * conv2d with relu whose only reader is a max pooling hands the relu to
 * the pool (backend relu_maxpool_*; nothing changes on a backend without
 * them). Sets the layers' act and the pool's aux_floats. Returns how many
 * pairs were fused. */
int layer_fuse_relu_maxpool(layer *layers, int n, backend *be);

#endif
