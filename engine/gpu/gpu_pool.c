/* gpu_pool.c — 2-D max and average pooling on the CUDA backend: cuDNN when
 * its symmetric padding reproduces the layer (the common case), the
 * backend's own kernels otherwise (gpu_plan.h says which). Both exclude
 * padding from maxima and averages, as backend.h defines.
 *
 * Ties in max pooling: the kernels route dy to the first maximum, as the
 * seam says; cuDNN does not document which tied element it picks. The
 * common tie, a window of zeros after a ReLU, is harmless either way: the
 * ReLU's backward pass zeroes the gradient of every one of them. */
#include "gpu/gpu_ctx.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_kernels.h"
#include "gpu/gpu_plan.h"
#include "gpu/gpu_ops.h"

typedef struct gpu_pool {
    gpu_pool_plan plan;
    cudnnPoolingDescriptor_t pool;
    cudnnTensorDescriptor_t x, y;
} gpu_pool;

static void gpu_pool_free(gpu_pool *p)
{
    if (!p)
        return;
    if (p->pool)
        GPU_TEARDOWN(cudnnDestroyPoolingDescriptor(p->pool));
    if (p->x)
        GPU_TEARDOWN(cudnnDestroyTensorDescriptor(p->x));
    if (p->y)
        GPU_TEARDOWN(cudnnDestroyTensorDescriptor(p->y));
    free(p);
}

static bool gpu_pool_set_batch(gpu_pool *p, const pool2d_desc *d, int batch)
{
    return gpu_tensor_4d(p->x, batch, d->c, d->h, d->w) &&
           gpu_tensor_4d(p->y, batch, d->c, d->oh, d->ow);
}

static bool gpu_pool_descriptors(gpu_pool *p, const pool2d_desc *d)
{
    /* MAX_DETERMINISTIC: the backward pass must not depend on scheduling. */
    cudnnPoolingMode_t mode = d->mode == POOL_MAX ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    int n, c, h, w;
    if (!GPU_CHECK(cudnnCreatePoolingDescriptor(&p->pool)) ||
        !GPU_CHECK(cudnnCreateTensorDescriptor(&p->x)) ||
        !GPU_CHECK(cudnnCreateTensorDescriptor(&p->y)) ||
        !GPU_CHECK(cudnnSetPooling2dDescriptor(p->pool, mode, CUDNN_NOT_PROPAGATE_NAN, d->kh,
                                               d->kw, p->plan.pad_h, p->plan.pad_w,
                                               d->stride_h, d->stride_w)) ||
        !gpu_pool_set_batch(p, d, d->max_batch) ||
        !GPU_CHECK(cudnnGetPooling2dForwardOutputDim(p->pool, p->x, &n, &c, &h, &w)))
        return false;
    /* Should cuDNN ever round differently, the kernels are exact. */
    if (h != d->oh || w != d->ow)
        p->plan.use_cudnn = false;
    return true;
}

static long gpu_pool2d_prepare(backend *be, pool2d_desc *d)
{
    (void)be;
    char err[256];
    gpu_pool *p = calloc(1, sizeof *p);
    if (!p) {
        fprintf(stderr, "punch-train: cuda: pool2d: out of host memory\n");
        return -1;
    }
    if (!gpu_pool_plan_build(d, &p->plan, err, sizeof err)) {
        fprintf(stderr, "punch-train: cuda: %s\n", err);
        gpu_pool_free(p);
        return -1;
    }
    if (p->plan.use_cudnn && !gpu_pool_descriptors(p, d)) {
        fprintf(stderr, "punch-train: cuda: pool2d: %s\n", gpu_check_message());
        gpu_pool_free(p);
        return -1;
    }
    d->impl = p;
    return 0;
}

static void gpu_pool2d_release(backend *be, pool2d_desc *d)
{
    (void)be;
    gpu_pool_free(d->impl);
    d->impl = NULL;
}

static gpu_pool_geom gpu_pool_geometry(const pool2d_desc *d)
{
    gpu_pool_geom g = {
        .c = d->c, .h = d->h, .w = d->w, .kh = d->kh, .kw = d->kw,
        .stride_h = d->stride_h, .stride_w = d->stride_w,
        .pad_top = d->pad_top, .pad_left = d->pad_left, .oh = d->oh, .ow = d->ow,
        .max = d->mode == POOL_MAX,
    };
    return g;
}

static void gpu_pool2d_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                        float *y)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_pool *p = d->impl;
    if (!p->plan.use_cudnn) {
        GPU_MUST(gpu_k_pool_forward(g->stream, gpu_pool_geometry(d), batch, x, y));
        return;
    }
    const float one = 1.0f, zero = 0.0f;
    if (!gpu_pool_set_batch(p, d, batch))
        gpu_check_fatal();
    GPU_MUST(cudnnPoolingForward(g->dnn, p->pool, &one, p->x, x, &zero, p->y, y));
}

static void gpu_pool2d_backward(backend *be, const pool2d_desc *d, int batch, const float *x,
                         const float *y, const float *dy, float *dx, bool accumulate)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_pool *p = d->impl;
    if (!p->plan.use_cudnn) {
        GPU_MUST(gpu_k_pool_backward(g->stream, gpu_pool_geometry(d), batch, x, y, dy, dx,
                                     accumulate));
        return;
    }
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    if (!gpu_pool_set_batch(p, d, batch))
        gpu_check_fatal();
    GPU_MUST(cudnnPoolingBackward(g->dnn, p->pool, &one, p->y, y, p->y, dy, p->x, x, &beta,
                                  p->x, dx));
}

/* Sets this file's ops of backend.h on be. */
void gpu_pool_register(backend *be)
{
    be->pool2d_prepare = gpu_pool2d_prepare;
    be->pool2d_release = gpu_pool2d_release;
    be->pool2d_forward = gpu_pool2d_forward;
    be->pool2d_backward = gpu_pool2d_backward;
}
