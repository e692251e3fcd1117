/* gpu_batchnorm.c — batch normalisation on the CUDA backend through
 * cuDNN's spatial mode: (batch, c, spatial) is cuDNN's (N, C, spatial, 1),
 * statistics per channel over batch and spatial positions. cuDNN's saved
 * statistics are the batch mean and 1/sqrt(biased var + eps), and its
 * running variance uses the unbiased estimate, both as backend.h asks; its
 * exponential-average factor is our 1 - momentum. A training batch with one
 * value per channel (batch x spatial == 1: a dense batchnorm's one-sample
 * last batch, or a rank's one-sample share) goes to an own kernel
 * instead: cuDNN's unbiased variance divides by N - 1 = 0 there (NaN in
 * the running variance, or BAD_PARAM), where the CPU takes the variance as
 * is (gpu_math.h, gpu_bn_single_at). */
#include "gpu/gpu_ctx.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_kernels.h"
#include "gpu/gpu_plan.h"
#include "gpu/gpu_ops.h"

typedef struct gpu_batchnorm {
    cudnnTensorDescriptor_t x;      /* (batch, c, spatial, 1) */
    cudnnTensorDescriptor_t param;  /* (1, c, 1, 1) */
} gpu_batchnorm;

static void gpu_batchnorm_free(gpu_batchnorm *b)
{
    if (!b)
        return;
    if (b->x)
        GPU_CHECK(cudnnDestroyTensorDescriptor(b->x));
    if (b->param)
        GPU_CHECK(cudnnDestroyTensorDescriptor(b->param));
    free(b);
}

static bool gpu_batchnorm_set_batch(gpu_batchnorm *b, const batchnorm_desc *d, int batch)
{
    return gpu_tensor_4d(b->x, batch, d->c, d->spatial, 1);
}

static long gpu_batchnorm_prepare(backend *be, batchnorm_desc *d)
{
    (void)be;
    long ws = gpu_batchnorm_workspace(d);
    gpu_batchnorm *b = calloc(1, sizeof *b);
    if (ws < 0 || !b) {
        fprintf(stderr, "punch-train: cuda: batchnorm: %s\n",
                b ? "invalid or too large shape" : "out of host memory");
        free(b);
        return -1;
    }
    if (!GPU_CHECK(cudnnCreateTensorDescriptor(&b->x)) ||
        !GPU_CHECK(cudnnCreateTensorDescriptor(&b->param)) ||
        !gpu_batchnorm_set_batch(b, d, d->max_batch) ||
        !GPU_CHECK(cudnnDeriveBNTensorDescriptor(b->param, b->x, CUDNN_BATCHNORM_SPATIAL))) {
        fprintf(stderr, "punch-train: cuda: batchnorm: %s\n", gpu_check_message());
        gpu_batchnorm_free(b);
        return -1;
    }
    d->impl = b;
    return ws;
}

static void gpu_batchnorm_release(backend *be, batchnorm_desc *d)
{
    (void)be;
    gpu_batchnorm_free(d->impl);
    d->impl = NULL;
}

/* The layer's descriptors, set for `batch` samples (a failure to set
 * them is fatal, as every cuDNN error in an op). */
static gpu_batchnorm *gpu_batchnorm_at(const batchnorm_desc *d, int batch)
{
    gpu_batchnorm *b = d->impl;
    if (!gpu_batchnorm_set_batch(b, d, batch))
        gpu_check_fatal();
    return b;
}

static void gpu_batchnorm_forward_train(backend *be, const batchnorm_desc *d, int batch,
                                 const float *x, const float *gamma, const float *beta,
                                 float *running_mean, float *running_var, float *save_mean,
                                 float *save_invstd, float *y, float *workspace)
{
    (void)workspace;
    gpu_ctx *g = gpu_ctx_of(be);
    if ((long)batch * d->spatial == 1) {
        GPU_MUST(gpu_k_bn_single(g->stream, d->c, d->momentum, d->epsilon, x, gamma, beta,
                                 running_mean, running_var, save_mean, save_invstd, y));
        return;
    }
    gpu_batchnorm *b = gpu_batchnorm_at(d, batch);
    const float one = 1.0f, zero = 0.0f;
    GPU_MUST(cudnnBatchNormalizationForwardTraining(
        g->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, b->x, x, b->x, y, b->param, gamma, beta,
        1.0 - (double)d->momentum, running_mean, running_var, (double)d->epsilon, save_mean,
        save_invstd));
}

static void gpu_batchnorm_forward_eval(backend *be, const batchnorm_desc *d, int batch,
                                const float *x, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var, float *y)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_batchnorm *b = gpu_batchnorm_at(d, batch);
    const float one = 1.0f, zero = 0.0f;
    GPU_MUST(cudnnBatchNormalizationForwardInference(
        g->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, b->x, x, b->x, y, b->param, gamma, beta,
        running_mean, running_var, (double)d->epsilon));
}

static void gpu_batchnorm_backward(backend *be, const batchnorm_desc *d, int batch, const float *x,
                            const float *dy, const float *gamma, const float *save_mean,
                            const float *save_invstd, float *dx, bool accumulate,
                            float *dgamma, float *dbeta, float *workspace)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_batchnorm *b = gpu_batchnorm_at(d, batch);
    const float one = 1.0f, zero = 0.0f;
    /* cuDNN always writes an input gradient: without dx, the workspace
     * takes it. */
    const float beta_dx = dx && accumulate ? 1.0f : 0.0f;
    float *dx_out = dx ? dx : workspace;
    GPU_MUST(cudnnBatchNormalizationBackward(g->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &beta_dx,
                                             &one, &zero, b->x, x, b->x, dy, b->x, dx_out,
                                             b->param, gamma, dgamma, dbeta,
                                             (double)d->epsilon, save_mean, save_invstd));
}

/* Sets this file's ops of backend.h on be. */
void gpu_batchnorm_register(backend *be)
{
    be->batchnorm_prepare = gpu_batchnorm_prepare;
    be->batchnorm_release = gpu_batchnorm_release;
    be->batchnorm_forward_train = gpu_batchnorm_forward_train;
    be->batchnorm_forward_eval = gpu_batchnorm_forward_eval;
    be->batchnorm_backward = gpu_batchnorm_backward;
}
