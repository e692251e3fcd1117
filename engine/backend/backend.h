/* backend.h — the seam between the engine's layers and the hardware.
 *
 * Layers (engine/layers/) own shapes, parameter layout and the graph; every
 * floating-point operation they need goes through one `backend`: a struct of
 * function pointers implemented once for the CPU (cpu/cpu_backend.c, OpenBLAS
 * + the engine's own thread pool) and once for CUDA (engine/gpu/, cuBLAS +
 * cuDNN). A layer never touches tensor memory directly, so the same layer
 * code runs on either.
 *
 * Conventions (every function below follows them):
 * - "Device" memory is whatever `alloc` returns: host memory on the CPU
 *   backend (`host_memory` true), GPU memory on CUDA. Only `upload` and
 *   `download` cross between host and device.
 * - Tensors are float32, densely packed, row-major; images are NCHW:
 *   (batch, channels, height, width). Shapes are given per argument as
 *   `// (B, C, H, W)`. Sizes are in floats, never bytes.
 * - `batch` is passed to every op: the descriptors fix the per-sample
 *   geometry and the largest batch (`max_batch`); a call may use any batch
 *   in [1, max_batch] (the last batch of an epoch is short).
 * - Backward ops write the input gradient `dx` either overwriting it
 *   (`accumulate` false) or adding to it (`accumulate` true): a tensor read
 *   by several layers receives the sum of their gradients. Parameter
 *   gradients (dw, db, dgamma, dbeta) are always overwritten: each
 *   parameter belongs to one layer and each step runs backward once.
 *   `dx` may be NULL when the input gradient is not needed (model input).
 * - Ops are asynchronous as far as the backend likes (a CUDA stream): only
 *   `download`, `synchronize` and the functions returning host values wait.
 * - Reductions are deterministic for a given backend and thread count: the
 *   same inputs give bit-identical outputs run after run (unless the
 *   backend says otherwise in `not_reproducible`).
 * - Nothing here allocates after `*_prepare`: workspaces are sized once per
 *   model (see conv2d_prepare) and passed in.
 *
 * Activations reuse spec_activation from spec.h. ACT_SOFTMAX is over the
 * last dimension of a (rows, cols) view.
 *
 * Optimizers (optim.h) work on host memory. On a host_memory backend the
 * trainer steps the model's parameter buffer in place; on a device backend
 * it downloads the gradient buffer, steps a host mirror of the parameters
 * and uploads them (model_optimizer_step in model/model.h), so a device
 * backend is correct before it has optimizer kernels of its own. */
#ifndef PUNCH_BACKEND_H
#define PUNCH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobspec/spec.h"

/* Convolution geometry, fixed at model build. Output size:
 * oh = (h + 2*pad_h - dil_h*(kh-1) - 1) / stride_h + 1 (likewise ow);
 * padding is symmetric top/bottom unless pad_bottom/pad_right differ (TF's
 * "same" with an even kernel pads one more at the bottom/right). */
typedef struct conv2d_desc {
    int max_batch;
    int c, h, w;            /* input channels, height, width */
    int k;                  /* output channels (filters) */
    int kh, kw;             /* kernel */
    int stride_h, stride_w;
    int pad_top, pad_left, pad_bottom, pad_right;
    int dil_h, dil_w;
    int oh, ow;             /* output height, width */
    int groups;             /* c and k split into groups (w is (k, c/groups, kh, kw));
                             * 0 or 1: one group; prepare sets 0 to 1 */
    void *impl;             /* backend-private (cuDNN descriptors, algo) */
} conv2d_desc;

typedef enum pool_mode { POOL_MAX, POOL_AVG } pool_mode;

/* Pooling geometry. Average pooling divides by the number of in-bounds
 * elements of each window (padding is not counted), as Keras does. */
typedef struct pool2d_desc {
    int max_batch;
    int c, h, w;
    int kh, kw;
    int stride_h, stride_w;
    int pad_top, pad_left, pad_bottom, pad_right;
    int oh, ow;
    pool_mode mode;
    void *impl;
} pool2d_desc;

/* Batch normalisation over (batch, spatial) per channel; a rank-1 input
 * of F features is c = F, spatial = 1. */
typedef struct batchnorm_desc {
    int max_batch;
    int c;
    int spatial;            /* h * w */
    float epsilon;
    float momentum;         /* running = momentum * running + (1 - momentum) * batch */
    void *impl;
} batchnorm_desc;

/* 1-d convolution along time, channels last. Output step t reads input
 * steps t * stride - pad_before + j * dilation, j in [0, kernel); steps
 * outside a sample's real length read zeros. A sample of L real steps has
 * conv1d_out_length(d, L) output steps (layers/conv1d.c says why). */
typedef struct conv1d_desc {
    int max_batch;
    int steps;              /* T, input */
    int out_steps;          /* T' for a full-length sample */
    int c;                  /* input features per step */
    int filters;            /* output features per step */
    int kernel;
    int stride;
    int dilation;
    int pad_before;         /* same: as spec_model.c's window_out; causal:
                             * (kernel-1)*dilation; valid: 0 */
    bool valid;             /* padding valid: only whole windows */
    bool causal;            /* padding causal: all of it before */
} conv1d_desc;

/* "same" padding as Keras computes it for a sequence of `len` steps alone:
 * with a stride above 1 the total padding, and so the part before, depends
 * on the length (pad_before holds the full-length sample's); a sample of a
 * batch is padded as it would be on its own. */
static inline int seq_same_pad_before(int len, int span, int stride)
{
    int out = (len + stride - 1) / stride;
    int total = (out - 1) * stride + span - len;
    return total > 0 ? total / 2 : 0;
}

static inline int conv1d_pad_before(const conv1d_desc *d, int len)
{
    if (d->valid || d->causal || d->stride == 1)
        return d->pad_before;
    return seq_same_pad_before(len, (d->kernel - 1) * d->dilation + 1, d->stride);
}

/* Output steps of a sample of `len` real steps, Keras's count for a
 * sequence of that length alone: valid, the whole windows (one partial
 * window when len is shorter than the kernel's span, so no sample ends
 * empty); same and causal, ceil(len / stride). */
static inline int conv1d_out_length(const conv1d_desc *d, int len)
{
    int span = (d->kernel - 1) * d->dilation + 1;
    int n = d->valid ? (len >= span ? (len - span) / d->stride + 1 : 1)
                     : (len + d->stride - 1) / d->stride;
    return n < d->out_steps ? n : d->out_steps;
}

/* 1-d pooling along time, channels last. Output step t pools input steps
 * [t * stride - pad_before, + kernel) that are real steps of its sample;
 * a sample of length L has pool1d_out_length(d, L) output steps, each
 * with at least one real step in its window. */
typedef struct pool1d_desc {
    int steps;              /* T, input */
    int out_steps;          /* T' for a full-length sample */
    int c;                  /* features per step */
    int kernel;
    int stride;
    int pad_before;         /* same: as spec_model.c's window_out; valid: 0 */
    bool valid;             /* padding valid: only whole windows */
    pool_mode mode;
} pool1d_desc;

static inline int pool1d_pad_before(const pool1d_desc *d, int len)
{
    return d->valid || d->stride == 1 ? d->pad_before
                                       : seq_same_pad_before(len, d->kernel, d->stride);
}

/* Output steps of a sample of `len` real steps, as conv1d_out_length:
 * valid, the whole windows (one partial one when len < kernel); same,
 * ceil(len / stride), every such window holding a real step. */
static inline int pool1d_out_length(const pool1d_desc *d, int len)
{
    int n = d->valid ? (len >= d->kernel ? (len - d->kernel) / d->stride + 1 : 1)
                     : (len + d->stride - 1) / d->stride;
    return n < d->out_steps ? n : d->out_steps;
}

/* Per-batch sums for metrics, on the host. Divide by the sample count
 * (accuracy) or sample count * outputs (mse, mae) to get means. */
typedef struct batch_metrics {
    double correct;         /* samples whose argmax(y) == argmax(target) */
    double sq_err;          /* sum of (y - t)^2 over all outputs */
    double abs_err;         /* sum of |y - t| over all outputs */
} batch_metrics;

/* A recurrent layer run over whole sequences in one call (as cuDNN's RNN
 * API), Keras's equations and gate order:
 *   lstm (G = 4U; i, f, c, o): z = x W + h R + b; i, f, o = sigmoid, g = tanh;
 *        c = f c' + i g; h = o tanh(c)
 *   gru  (G = 3U; z, r, h): z, r = sigmoid(x W + h' R + b (+ recurrent bias));
 *        reset_after: hh = tanh(x W_h + b_h + r * (h' R_h + rb_h)), bias (2, 3U)
 *        (input row, recurrent row); else hh = tanh(x W_h + b_h + (r h') R_h),
 *        bias (3U); h = z h' + (1 - z) hh
 * A sample of length L runs steps 0..L-1 (L-1 down to 0 with go_backwards),
 * from a zero state; no result depends on its padding steps of x or dy,
 * though x's padding may enter products with zero (the CPU's projection
 * GEMMs cover all steps), so it must be finite, as the model keeps it. */
typedef enum rnn_mode { RNN_LSTM, RNN_GRU } rnn_mode;

typedef struct rnn_desc {
    rnn_mode mode;
    int max_batch;
    int steps;              /* T: time steps of x (and of y with return_sequences) */
    int in;                 /* F: features per step (one_hot: the vocabulary V) */
    int units;              /* U */
    bool go_backwards;
    bool reset_after;       /* gru */
    /* true: y holds the output of every step, (batch, T, ldy) with the
     * output of processing step s at row s (zeros at rows >= L); false: y
     * is (batch, ldy), the state after the last processed step. */
    bool return_sequences;
    /* go_backwards with return_sequences: write the output of processing
     * step s at row L-1-s, the input step it read (time order, as
     * Bidirectional reverses its backward half). */
    bool time_order;
    /* x holds one token id per step, (batch, T), read as a one-hot row of
     * F = V features: the projection x_t W is the row W[id_t], so a sparse
     * input is never spread out. An id outside [0, V) (the model refuses
     * them at batch load) projects to zero and adds to no gradient row.
     * Ids get no gradient: dx is left untouched. */
    bool one_hot;
    long aux_floats;        /* set by prepare: what forward saves for backward */
    void *impl;             /* backend-private */
} rnn_desc;

/* Scaled dot-product attention over heads (layers/attention.c): q, k, v
 * and o are (batch, steps, heads * key_dim), head h the columns
 * [h * key_dim, (h + 1) * key_dim) of every row, as the projections'
 * GEMMs write them. Query row t of a sample of length L attends to its
 * keys j < L (and j <= t when causal) with softmax(q k^T / sqrt(key_dim));
 * rows t >= L give zeros. */
typedef struct attention_desc {
    int max_batch;
    int steps;              /* T: of the queries and of the keys */
    int heads;
    int key_dim;            /* per head (value_dim as well) */
    bool causal;
    float dropout;          /* on the attention weights, training only */
} attention_desc;

typedef struct backend backend;

struct backend {
    const char *name;       /* "cpu", "cuda" */
    bool host_memory;       /* device pointers are host pointers (CPU) */
    int threads;            /* CPU worker threads (1 on CUDA) */
    void *impl;             /* backend-private state */
    /* NULL while every op prepared so far gives bit-identical results run
     * after run (always on the CPU); otherwise one line, owned by the
     * backend, saying which op cannot: the CUDA backend sets it when
     * cuDNN offers a convolution no usable deterministic algorithm
     * (gpu/gpu_conv_choice.h). Trainers report it in history.json. */
    const char *not_reproducible;
    /* training.deterministic false (set by backend_create): the CUDA
     * backend may then run non-deterministic convolution algorithms when
     * cuDNN ranks them fastest, and says so in not_reproducible. The CPU
     * backend ignores it. */
    bool nondeterministic_ok;
    /* training.precision bf16 (set by device_backend_create before any
     * layer is prepared): convolutions run with bf16 inputs and weights and
     * fp32 accumulation and outputs, where the backend has bf16 kernels;
     * parameters, gradients and every other op stay fp32. The CPU backend
     * reads it at conv2d_prepare (cpu/cpu_conv_dnnl.c); CUDA refuses it. */
    bool bf16;

    /* ---- lifecycle -------------------------------------------------- */

    /* Frees the backend itself (after every buffer it allocated). */
    void (*destroy)(backend *be);
    /* Waits until every queued op has finished. */
    void (*synchronize)(backend *be);

    /* Runs fn(ctx, begin, end, tid) over [0, n) split into contiguous
     * chunks, one per host thread, and returns when all are done: how
     * host-side work outside the ops (the optimizer step) uses the
     * backend's threads. NULL when the backend has none to lend (CUDA);
     * callers then run fn(ctx, 0, n, 0) themselves. */
    void (*host_parallel)(backend *be, long n,
                          void (*fn)(void *ctx, long begin, long end, int tid), void *ctx);

    /* ---- memory ----------------------------------------------------- */

    /* n floats of device memory, zeroed, aligned to 64 bytes; NULL on
     * failure. */
    float *(*alloc)(backend *be, long n);
    void (*free)(backend *be, float *p);
    void (*zero)(backend *be, float *p, long n);
    /* Device to device. */
    void (*copy)(backend *be, float *dst, const float *src, long n);
    void (*upload)(backend *be, float *dst_dev, const float *src_host, long n);
    void (*download)(backend *be, float *dst_host, const float *src_dev, long n);

    /* ---- BLAS ------------------------------------------------------- */

    /* Row-major C = alpha * op(A) @ op(B) + beta * C, op = transpose when
     * the flag is set: C (m, n), op(A) (m, k), op(B) (k, n); lda, ldb, ldc
     * are row strides of A, B, C as stored. */
    void (*gemm)(backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);

    /* ---- element-wise ----------------------------------------------- */

    /* y += alpha * x */
    void (*axpy)(backend *be, long n, float alpha, const float *x, float *y);
    /* x *= alpha */
    void (*scale)(backend *be, long n, float alpha, float *x);

    /* ---- dense ------------------------------------------------------ */

    /* y = act(x @ w + bias). bias may be NULL. act may be ACT_SOFTMAX
     * (over `out`). */
    void (*dense_forward)(backend *be, int batch, int in, int out,
                          const float *x,    /* (batch, in) */
                          const float *w,    /* (in, out) */
                          const float *bias, /* (out) or NULL */
                          spec_activation act,
                          float *y);         /* (batch, out) */
    /* Given dz = dL/d(x @ w + bias) (the activation already undone by
     * activation_backward): dw = x^T @ dz, db = sum over batch of dz,
     * dx (+)= dz @ w^T. */
    void (*dense_backward)(backend *be, int batch, int in, int out,
                           const float *x,   /* (batch, in) */
                           const float *w,   /* (in, out) */
                           const float *dz,  /* (batch, out) */
                           float *dx,        /* (batch, in) or NULL */
                           bool accumulate,
                           float *dw,        /* (in, out) */
                           float *db);       /* (out) or NULL */

    /* ---- activations ------------------------------------------------ */

    /* y = act(x) on a (rows, cols) view; softmax per row. x == y allowed.
     * ACT_NONE copies. */
    void (*activation_forward)(backend *be, spec_activation act, long rows, long cols,
                               const float *x,  /* (rows, cols) */
                               float *y);       /* (rows, cols) */
    /* dx (+)= dy * act'(.), from the forward OUTPUT y (relu: y > 0;
     * sigmoid: y(1-y); tanh: 1-y^2; softmax: y * (dy - sum(dy*y)) per
     * row). dx == dy allowed when !accumulate. ACT_NONE copies/adds. */
    void (*activation_backward)(backend *be, spec_activation act, long rows, long cols,
                                const float *y,  /* (rows, cols) */
                                const float *dy, /* (rows, cols) */
                                float *dx,       /* (rows, cols) */
                                bool accumulate);

    /* ---- conv2d ----------------------------------------------------- */

    /* Called once per layer at model build (may set desc->impl). Returns
     * the workspace, in floats, that forward and backward need; the model
     * allocates the largest over its layers once and shares it. -1 on
     * failure. */
    long (*conv2d_prepare)(backend *be, conv2d_desc *desc);
    void (*conv2d_release)(backend *be, conv2d_desc *desc);
    /* y = act(conv(x, w) + bias), cross-correlation as in every framework. */
    void (*conv2d_forward)(backend *be, const conv2d_desc *d, int batch,
                           const float *x,    /* (batch, c, h, w) */
                           const float *w,    /* (k, c, kh, kw) */
                           const float *bias, /* (k) or NULL */
                           spec_activation act, /* not ACT_SOFTMAX */
                           float *y,          /* (batch, k, oh, ow) */
                           float *workspace);
    /* From dz = dL/d(pre-activation): dw, db, dx (+)=. */
    void (*conv2d_backward)(backend *be, const conv2d_desc *d, int batch,
                            const float *x,   /* (batch, c, h, w) */
                            const float *w,   /* (k, c, kh, kw) */
                            const float *dz,  /* (batch, k, oh, ow) */
                            float *dx,        /* (batch, c, h, w) or NULL */
                            bool accumulate,
                            float *dw,        /* (k, c, kh, kw) */
                            float *db,        /* (k) or NULL */
                            float *workspace);

    /* ---- pooling ---------------------------------------------------- */

    long (*pool2d_prepare)(backend *be, pool2d_desc *desc); /* workspace floats */
    void (*pool2d_release)(backend *be, pool2d_desc *desc);
    void (*pool2d_forward)(backend *be, const pool2d_desc *d, int batch,
                           const float *x,    /* (batch, c, h, w) */
                           float *y);         /* (batch, c, oh, ow) */
    /* Max pooling routes each dy to the first maximum of its window
     * (recomputed from x and y, so no index buffer is kept). */
    void (*pool2d_backward)(backend *be, const pool2d_desc *d, int batch,
                            const float *x,   /* (batch, c, h, w) */
                            const float *y,   /* (batch, c, oh, ow) */
                            const float *dy,  /* (batch, c, oh, ow) */
                            float *dx,        /* (batch, c, h, w) */
                            bool accumulate);

    /* ---- batch normalisation ---------------------------------------- */

    long (*batchnorm_prepare)(backend *be, batchnorm_desc *desc); /* workspace floats */
    void (*batchnorm_release)(backend *be, batchnorm_desc *desc);
    /* Training: normalise with the batch statistics (biased variance),
     * save mean and 1/sqrt(var + eps) for backward, and update the running
     * statistics (unbiased variance, as Keras/PyTorch). */
    void (*batchnorm_forward_train)(backend *be, const batchnorm_desc *d, int batch,
                                    const float *x,        /* (batch, c, spatial) */
                                    const float *gamma,    /* (c) */
                                    const float *beta,     /* (c) */
                                    float *running_mean,   /* (c) updated */
                                    float *running_var,    /* (c) updated */
                                    float *save_mean,      /* (c) out */
                                    float *save_invstd,    /* (c) out */
                                    float *y,              /* (batch, c, spatial) */
                                    float *workspace);
    /* Inference: normalise with the running statistics. */
    void (*batchnorm_forward_eval)(backend *be, const batchnorm_desc *d, int batch,
                                   const float *x,         /* (batch, c, spatial) */
                                   const float *gamma,     /* (c) */
                                   const float *beta,      /* (c) */
                                   const float *running_mean, /* (c) */
                                   const float *running_var,  /* (c) */
                                   float *y);              /* (batch, c, spatial) */
    void (*batchnorm_backward)(backend *be, const batchnorm_desc *d, int batch,
                               const float *x,          /* (batch, c, spatial) */
                               const float *dy,         /* (batch, c, spatial) */
                               const float *gamma,      /* (c) */
                               const float *save_mean,  /* (c) */
                               const float *save_invstd,/* (c) */
                               float *dx,               /* (batch, c, spatial) or NULL */
                               bool accumulate,
                               float *dgamma,           /* (c) */
                               float *dbeta,            /* (c) */
                               float *workspace);

    /* ---- dropout ---------------------------------------------------- */

    /* Inverted dropout: mask[i] = 0 with probability rate, else
     * 1/(1-rate); y = x * mask. The mask comes from a counter-based hash
     * of (seed, i) (backend_dropout_keep below), so every backend and
     * every thread count draws the same mask for the same seed. */
    void (*dropout_forward)(backend *be, long n, float rate, uint64_t seed,
                            const float *x,   /* (n) */
                            float *mask,      /* (n) out */
                            float *y);        /* (n) */
    void (*dropout_backward)(backend *be, long n,
                             const float *mask, /* (n) */
                             const float *dy,   /* (n) */
                             float *dx,         /* (n) */
                             bool accumulate);

    /* ---- channel concatenation -------------------------------------- */

    /* y[:, off_i : off_i + c_i] = x_i for each input i, per sample, where
     * a sample of x_i is c_i * spatial floats. */
    void (*concat_forward)(backend *be, int batch, int n_in, const int *c_in, long spatial,
                           const float *const *xs, /* n_in x (batch, c_i, spatial) */
                           float *y);              /* (batch, sum c_i, spatial) */
    void (*concat_backward)(backend *be, int batch, int n_in, const int *c_in, long spatial,
                            const float *dy,       /* (batch, sum c_i, spatial) */
                            float *const *dxs,     /* n_in x (batch, c_i, spatial); NULL entries skipped */
                            const bool *accumulate); /* n_in flags, one per dx */

    /* ---- losses and metrics ----------------------------------------- */
    /* Each returns the SUM over the batch of the per-sample loss (host
     * value; the caller divides by the sample count) and writes the
     * gradient of the MEAN loss over the batch, i.e. already divided by
     * `batch`. targets are one-hot rows (or any targets in [0, 1]). */

    /* Categorical cross-entropy fused with softmax: probs = softmax(logits),
     * loss_i = -sum_j t_ij log p_ij, dlogits = (p - t) / batch. */
    double (*softmax_xent)(backend *be, int batch, int n,
                           const float *logits,  /* (batch, n) */
                           const float *targets, /* (batch, n) */
                           float *probs,         /* (batch, n) out */
                           float *dlogits);      /* (batch, n) out */
    /* Binary cross-entropy on probabilities p clipped to [1e-7, 1-1e-7]:
     * loss_i = mean_j -(t log p + (1-t) log(1-p)); dp = d(mean loss)/dp. */
    double (*binary_xent)(backend *be, int batch, int n,
                          const float *p,        /* (batch, n) */
                          const float *targets,  /* (batch, n) */
                          float *dp);            /* (batch, n) out */
    /* loss_i = mean_j (y - t)^2; dy = 2 (y - t) / (n * batch). */
    double (*mse)(backend *be, int batch, int n,
                  const float *y,         /* (batch, n) */
                  const float *targets,   /* (batch, n) */
                  float *dy);             /* (batch, n) out */
    /* Categorical hinge (Keras's and PyDTNN's): with pos = sum_j t_j y_j
     * and neg = max_j (1 - t_j) y_j, loss_i = max(0, neg - pos + 1);
     * dy = (-t_j + (1 - t_k) [j == k]) / batch where the margin is not met
     * (loss_i > 0), k the first j attaining neg, and 0 elsewhere. */
    double (*categorical_hinge)(backend *be, int batch, int n,
                                const float *y,       /* (batch, n) */
                                const float *targets, /* (batch, n) */
                                float *dy);           /* (batch, n) out */
    /* Metric sums over the batch (host values). */
    void (*metrics)(backend *be, int batch, int n,
                    const float *y,       /* (batch, n) */
                    const float *targets, /* (batch, n) */
                    batch_metrics *out);

    /* ---- fused relu + max pooling (optional) ------------------------ */
    /* NULL when the backend has no fused kernel (CUDA); the model then
     * keeps the activation in the layer before (layers/pooling.c). Since
     * relu is monotonic, max(relu(window)) = relu(max(window)): from
     * pre-activations x, y = relu(max of each window), and argmax gets the
     * window offset (row * kw + col, the first maximum in row-major order)
     * of each output, one byte each (d->kh * d->kw <= 256). */
    void (*relu_maxpool_forward)(backend *be, const pool2d_desc *d, int batch,
                                 const float *x,      /* (batch, c, h, w) */
                                 float *y,            /* (batch, c, oh, ow) */
                                 uint8_t *argmax);    /* (batch, c, oh, ow) */
    /* dx (+)= dy routed to each window's argmax where y > 0: the gradient
     * with respect to the pre-activations; every other dx gets 0 (or
     * keeps its value when accumulating). */
    void (*relu_maxpool_backward)(backend *be, const pool2d_desc *d, int batch,
                                  const uint8_t *argmax, /* (batch, c, oh, ow) */
                                  const float *y,        /* (batch, c, oh, ow) */
                                  const float *dy,       /* (batch, c, oh, ow) */
                                  float *dx,             /* (batch, c, h, w) */
                                  bool accumulate);

    /* ---- dense backward with the parameter update fused (optional) --- */
    /* dense_backward, then update(ctx, begin, end) on ranges of the
     * layer's parameter block (w, then the bias at in * out when db is
     * not NULL; db must then be dw + in * out) as soon as their gradients
     * are final: the optimizer step runs while they are still in cache,
     * inside the same parallel chunks. dx is computed first, from the old
     * w. The ranges are disjoint, cover [0, in * out (+ out)), and may be
     * updated from several threads at once. The gradients are the same
     * bits dense_backward gives. NULL when the backend has none (CUDA). */
    void (*dense_backward_update)(backend *be, int batch, int in, int out,
                                  const float *x,   /* (batch, in) */
                                  const float *w,   /* (in, out); update changes it */
                                  const float *dz,  /* (batch, out) */
                                  float *dx,        /* (batch, in) or NULL */
                                  bool accumulate,
                                  float *dw,        /* (in, out) */
                                  float *db,        /* (out) or NULL */
                                  void (*update)(void *ctx, long begin, long end),
                                  void *ctx);

    /* ---- recurrent layers (optional) -------------------------------- */
    /* NULL when the backend has none (CUDA for now); the layers' setup
     * then fails. G = 4U (lstm) or 3U (gru); see rnn_desc. lengths are
     * host int32, each in [1, T], NULL when every sample is T long. */

    /* Called once per layer at model build: sets desc->aux_floats (per
     * call, for max_batch) and returns the workspace floats; -1 on
     * failure. */
    long (*rnn_prepare)(backend *be, rnn_desc *desc);
    void (*rnn_release)(backend *be, rnn_desc *desc);
    /* y rows are ldy floats apart (>= U), so two directions can write
     * halves of one concatenated output. */
    void (*rnn_forward)(backend *be, const rnn_desc *d, int batch, const int32_t *lengths,
                        const float *x,    /* (batch, T, F); one_hot: (batch, T) */
                        const float *w,    /* (F, G) kernel */
                        const float *r,    /* (U, G) recurrent kernel */
                        const float *bias, /* (G), or (2, G) for gru reset_after */
                        float *y, int ldy, /* (batch, T, ldy) or (batch, ldy) */
                        float *aux,        /* (aux_floats) out, for backward */
                        float *workspace);
    /* From dy (read at real steps only; rows as y): dw, dr, dbias
     * overwritten, dx (+)= (zeros at padding steps). Uses the aux of the
     * forward call just before, with the same batch and lengths, and
     * overwrites it. */
    void (*rnn_backward)(backend *be, const rnn_desc *d, int batch, const int32_t *lengths,
                         const float *x,    /* (batch, T, F); one_hot: (batch, T) */
                         const float *w,    /* (F, G) */
                         const float *r,    /* (U, G) */
                         const float *dy, int ldy, /* as y */
                         float *dx,         /* (batch, T, F) or NULL; one_hot: unused */
                         bool accumulate,
                         float *dw,         /* (F, G) */
                         float *dr,         /* (U, G) */
                         float *dbias,      /* as bias */
                         float *aux,        /* (aux_floats) */
                         float *workspace);
    /* y (+)= a * b element-wise (bidirectional's "mul" merge and its
     * gradient). */
    void (*mul)(backend *be, long n, const float *a, const float *b, float *y,
                bool accumulate);

    /* ---- sequences (optional) --------------------------------------- */
    /* A sequence is (batch, steps, features), channels last, each sample
     * real for its first lengths[n] steps (host int32, each in [1, steps];
     * NULL: all `steps`) and zero after (docs/sequences.md). Each op below
     * reads its inputs only at real steps and writes zeros at the padding
     * steps of its sequence outputs. NULL on a backend without them
     * (CUDA in this version): model_create then refuses a sequence model. */

    /* x[n, t, :] = 0 for t >= lengths[n]: the padding invariant, applied
     * by the model to layers that do not know about time. */
    void (*sequence_mask)(backend *be, int batch, int steps, int features,
                          const int32_t *lengths,
                          float *x);           /* (batch, steps, features) */
    /* y[n, t, :] = table[ids[n, t], :]. ids are whole numbers in
     * [0, vocab) (checked when the batch was loaded). */
    void (*embedding_forward)(backend *be, int batch, int steps, int dim,
                              const int32_t *lengths,
                              const float *ids,    /* (batch, steps) */
                              const float *table,  /* (vocab, dim) */
                              float *y);           /* (batch, steps, dim) */
    /* dtable = the sum of dy's real rows at their ids (overwritten), in a
     * fixed order whatever the thread count. */
    void (*embedding_backward)(backend *be, int batch, int steps, int vocab, int dim,
                               const int32_t *lengths,
                               const float *ids,   /* (batch, steps) */
                               const float *dy,    /* (batch, steps, dim) */
                               float *dtable);     /* (vocab, dim) */
    /* y[n, f] = max or mean of x[n, t, f] over the real steps t. */
    void (*global_pool1d_forward)(backend *be, pool_mode mode, int batch, int steps,
                                  int features, const int32_t *lengths,
                                  const float *x,  /* (batch, steps, features) */
                                  float *y);       /* (batch, features) */
    /* Max routes dy to the first real step holding the maximum; mean
     * spreads it evenly over the real steps. */
    void (*global_pool1d_backward)(backend *be, pool_mode mode, int batch, int steps,
                                   int features, const int32_t *lengths,
                                   const float *x,  /* (batch, steps, features) */
                                   const float *y,  /* (batch, features) */
                                   const float *dy, /* (batch, features) */
                                   float *dx,       /* (batch, steps, features) */
                                   bool accumulate);
    /* y[n, t, :] = max or mean over the real steps of window t, for t
     * below the sample's output length (pool1d_out_length), 0 after. */
    void (*pool1d_forward)(backend *be, const pool1d_desc *d, int batch,
                           const int32_t *lengths, /* input lengths */
                           const float *x,    /* (batch, steps, c) */
                           float *y);         /* (batch, out_steps, c) */
    /* Max routes dy to the window's first real maximum; mean spreads it
     * over the window's real steps. dy is read at real output steps only. */
    void (*pool1d_backward)(backend *be, const pool1d_desc *d, int batch,
                            const int32_t *lengths,
                            const float *x,   /* (batch, steps, c) */
                            const float *y,   /* (batch, out_steps, c) */
                            const float *dy,  /* (batch, out_steps, c) */
                            float *dx,        /* (batch, steps, c) */
                            bool accumulate);
    /* Workspace floats conv1d_forward/backward need (-1: bad geometry). */
    long (*conv1d_prepare)(backend *be, const conv1d_desc *d);
    /* y = act(conv(x, w) + bias) along time, cross-correlation, at each
     * sample's conv1d_out_length output steps, 0 after. */
    void (*conv1d_forward)(backend *be, const conv1d_desc *d, int batch,
                           const int32_t *lengths,
                           const float *x,    /* (batch, steps, c) */
                           const float *w,    /* (kernel, c, filters) */
                           const float *bias, /* (filters) or NULL */
                           spec_activation act, /* not ACT_SOFTMAX */
                           float *y,          /* (batch, out_steps, filters) */
                           float *workspace);
    /* From dz = dL/d(pre-activation): dw, db (overwritten), dx (+)=. dz's
     * padding rows are zeroed first (whatever they held is never used). */
    void (*conv1d_backward)(backend *be, const conv1d_desc *d, int batch,
                            const int32_t *lengths,
                            const float *x,   /* (batch, steps, c) */
                            const float *w,   /* (kernel, c, filters) */
                            float *dz,        /* (batch, out_steps, filters) */
                            float *dx,        /* (batch, steps, c) or NULL */
                            bool accumulate,
                            float *dw,        /* (kernel, c, filters) */
                            float *db,        /* (filters) or NULL */
                            float *workspace);

    /* ---- transformers (optional) ------------------------------------ */
    /* NULL on a backend without them (CUDA in this version): the layers'
     * setup then fails with a message. */

    /* GELU: exact x * Phi(x) (erf), or GPT-2's tanh approximation
     * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). x == y allowed. */
    void (*gelu_forward)(backend *be, bool exact, long n,
                         const float *x,   /* (n) */
                         float *y);        /* (n) */
    /* dx (+)= dy * gelu'(x): from the INPUT x, since gelu is not
     * invertible. dx == dy allowed when !accumulate. */
    void (*gelu_backward)(backend *be, bool exact, long n,
                          const float *x,  /* (n) */
                          const float *dy, /* (n) */
                          float *dx,       /* (n) */
                          bool accumulate);
    /* Layer normalisation of each row over its `features` values:
     * y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps)
     * (biased variance, as PyTorch and Keras); saves mean and rstd. */
    void (*layer_norm_forward)(backend *be, long rows, int features, float epsilon,
                               const float *x,     /* (rows, features) */
                               const float *gamma, /* (features) */
                               const float *beta,  /* (features) */
                               float *y,           /* (rows, features) */
                               float *stats);      /* (rows, 2): mean, rstd */
    /* dgamma, dbeta overwritten (summed over rows in a fixed order);
     * dx (+)=. Rows whose dy is zero (padding) add nothing. */
    void (*layer_norm_backward)(backend *be, long rows, int features,
                                const float *x,     /* (rows, features) */
                                const float *gamma, /* (features) */
                                const float *stats, /* (rows, 2) */
                                const float *dy,    /* (rows, features) */
                                float *dx,          /* (rows, features) */
                                bool accumulate,
                                float *dgamma,      /* (features) */
                                float *dbeta);      /* (features) */
    /* Workspace floats attention_forward/backward need (-1: bad desc). */
    long (*attention_prepare)(backend *be, const attention_desc *d);
    /* o = softmax(q k^T * scale, masked) v per sample and head, blocked so
     * a block of scores stays in cache; lse gets each row's log-sum-exp
     * of the scaled scores (0 at padding rows) for the backward pass.
     * With `training` and d->dropout > 0, weight (n, h, i, j) is dropped
     * by backend_dropout_keep(seed, ((n * heads + h) * T + i) * T + j). */
    void (*attention_forward)(backend *be, const attention_desc *d, int batch,
                              const int32_t *lengths,
                              const float *q,  /* (batch, T, heads * key_dim) */
                              const float *k,  /* likewise */
                              const float *v,  /* likewise */
                              float *o,        /* likewise */
                              float *lse,      /* (batch, heads, T) */
                              bool training, uint64_t seed,
                              float *workspace);
    /* From do_ (read at real rows): dq, dk, dv overwritten, zeros at
     * padding rows; the scores are recomputed from q, k and lse (the
     * forward's seed and training flag redraw the same dropout). */
    void (*attention_backward)(backend *be, const attention_desc *d, int batch,
                               const int32_t *lengths,
                               const float *q, const float *k, const float *v,
                               const float *o,   /* the forward's output */
                               const float *lse, /* (batch, heads, T) */
                               const float *do_, /* (batch, T, heads * key_dim) */
                               float *dq, float *dk, float *dv, /* as q */
                               bool training, uint64_t seed,
                               float *workspace);
};

/* The backends themselves are made above this floor: backend_cpu_create
 * (cpu/cpu.h), backend_cuda_create (gpu/gpu.h), and the one a job asks
 * for, device_backend_create (device/device.h). */

/* The dropout mask rule every backend implements: element i is kept when
 * the top 24 bits of backend_hash64(seed ^ (i * golden)) / 2^24 >= rate. */
static inline uint64_t backend_hash64(uint64_t x)
{
    /* splitmix64's finaliser: a bijection with full avalanche. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline bool backend_dropout_keep(uint64_t seed, uint64_t i, float rate)
{
    uint64_t h = backend_hash64(seed ^ ((i + 1) * 0x9e3779b97f4a7c15ULL));
    float u = (float)(h >> 40) * (1.0f / 16777216.0f);
    return u >= rate;
}

#endif
