/* gpu_conv.c — 2-D convolution on the CUDA backend through cuDNN.
 *
 * At prepare: descriptors, and one algorithm per direction from cuDNN's
 * heuristics (cudnnGet*Algorithm_v7), preferring deterministic ones (the
 * seam promises bit-identical reruns) in FP32 FMA math (no TF32, so the
 * CPU reference is comparable). The workspace is sized for the chosen
 * algorithms at every batch size up to max_batch, because the last batch of
 * an epoch is short and an algorithm's need can change with the batch.
 * Bias and activation follow the convolution as separate ops. */
#include "gpu/gpu_backend.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_kernels.h"
#include "gpu/gpu_plan.h"

/* Largest cuDNN workspace one layer may ask for. */
#define GPU_CONV_WS_CAP ((size_t)1 << 30)

typedef struct gpu_conv {
    gpu_conv_plan plan;
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
} gpu_conv;

static void gpu_conv_free(gpu_conv *cv)
{
    if (!cv)
        return;
    if (cv->x)
        GPU_CHECK(cudnnDestroyTensorDescriptor(cv->x));
    if (cv->y)
        GPU_CHECK(cudnnDestroyTensorDescriptor(cv->y));
    if (cv->bias)
        GPU_CHECK(cudnnDestroyTensorDescriptor(cv->bias));
    if (cv->w)
        GPU_CHECK(cudnnDestroyFilterDescriptor(cv->w));
    if (cv->conv)
        GPU_CHECK(cudnnDestroyConvolutionDescriptor(cv->conv));
    free(cv);
}

/* x and y descriptors for `batch` samples. */
static bool gpu_conv_set_batch(gpu_conv *cv, const conv2d_desc *d, int batch)
{
    return gpu_tensor_4d(cv->x, batch, d->c, cv->plan.in_h, cv->plan.in_w) &&
           gpu_tensor_4d(cv->y, batch, d->k, d->oh, d->ow);
}

static bool gpu_conv_descriptors(gpu_conv *cv, const conv2d_desc *d)
{
    int n, c, h, w;
    if (!GPU_CHECK(cudnnCreateTensorDescriptor(&cv->x)) ||
        !GPU_CHECK(cudnnCreateTensorDescriptor(&cv->y)) ||
        !GPU_CHECK(cudnnCreateTensorDescriptor(&cv->bias)) ||
        !GPU_CHECK(cudnnCreateFilterDescriptor(&cv->w)) ||
        !GPU_CHECK(cudnnCreateConvolutionDescriptor(&cv->conv)) ||
        !GPU_CHECK(cudnnSetFilter4dDescriptor(cv->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d->k,
                                              d->c / d->groups, d->kh, d->kw)) ||
        !GPU_CHECK(cudnnSetConvolution2dDescriptor(cv->conv, cv->plan.pad_h, cv->plan.pad_w,
                                                   d->stride_h, d->stride_w, d->dil_h,
                                                   d->dil_w, CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT)) ||
        !GPU_CHECK(cudnnSetConvolutionMathType(cv->conv, CUDNN_FMA_MATH)) ||
        !GPU_CHECK(cudnnSetConvolutionGroupCount(cv->conv, d->groups)) ||
        !gpu_tensor_4d(cv->bias, 1, d->k, 1, 1) || !gpu_conv_set_batch(cv, d, d->max_batch) ||
        !GPU_CHECK(cudnnGetConvolution2dForwardOutputDim(cv->conv, cv->x, cv->w, &n, &c, &h,
                                                         &w)))
        return false;
    if (n != d->max_batch || c != d->k || h != d->oh || w != d->ow) {
        gpu_check_failed("cuDNN's output shape differs from the layer's", "conv2d_prepare",
                         __FILE__, __LINE__);
        return false;
    }
    return true;
}

/* The first heuristic result that ran and fits the cap, preferring
 * deterministic FP32-FMA algorithms, then deterministic ones, then any.
 * A macro because cuDNN has one perf struct type per direction. */
#define GPU_CONV_PICK(perf, count, out)                                                  \
    do {                                                                                 \
        (out) = -1;                                                                      \
        for (int pass = 0; pass < 3 && (out) < 0; pass++)                                \
            for (int i_ = 0; i_ < (count); i_++)                                         \
                if ((perf)[i_].status == CUDNN_STATUS_SUCCESS &&                         \
                    (perf)[i_].memory <= GPU_CONV_WS_CAP &&                              \
                    (pass == 2 || (perf)[i_].determinism == CUDNN_DETERMINISTIC) &&      \
                    (pass >= 1 || (perf)[i_].mathType == CUDNN_FMA_MATH)) {              \
                    (out) = i_;                                                          \
                    break;                                                               \
                }                                                                        \
    } while (0)

static bool gpu_conv_choose(gpu_ctx *g, gpu_conv *cv)
{
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int nf = 0, nd = 0, nw = 0, pf, pd, pw;
    if (!GPU_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            g->dnn, cv->x, cv->w, cv->conv, cv->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nf, fwd)) ||
        !GPU_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            g->dnn, cv->w, cv->y, cv->conv, cv->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &nd,
            bd)) ||
        !GPU_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            g->dnn, cv->x, cv->y, cv->conv, cv->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &nw,
            bf)))
        return false;
    GPU_CONV_PICK(fwd, nf, pf);
    GPU_CONV_PICK(bd, nd, pd);
    GPU_CONV_PICK(bf, nw, pw);
    if (pf < 0 || pd < 0 || pw < 0) {
        gpu_check_failed("cuDNN offers no usable algorithm for this convolution",
                         "cudnnGetConvolution*Algorithm_v7", __FILE__, __LINE__);
        return false;
    }
    cv->fwd = fwd[pf].algo;
    cv->bwd_data = bd[pd].algo;
    cv->bwd_filter = bf[pw].algo;
    return true;
}

/* The chosen algorithms' largest workspace over batch sizes 1..max_batch
 * (host-side queries only, no device work). */
static bool gpu_conv_workspace_bytes(gpu_ctx *g, gpu_conv *cv, const conv2d_desc *d,
                                     size_t *bytes)
{
    *bytes = 0;
    for (int b = 1; b <= d->max_batch; b++) {
        size_t f, dd, w;
        if (!gpu_conv_set_batch(cv, d, b) ||
            !GPU_CHECK(cudnnGetConvolutionForwardWorkspaceSize(g->dnn, cv->x, cv->w, cv->conv,
                                                               cv->y, cv->fwd, &f)) ||
            !GPU_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
                g->dnn, cv->w, cv->y, cv->conv, cv->x, cv->bwd_data, &dd)) ||
            !GPU_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                g->dnn, cv->x, cv->y, cv->conv, cv->w, cv->bwd_filter, &w)))
            return false;
        size_t m = f > dd ? f : dd;
        m = m > w ? m : w;
        *bytes = m > *bytes ? m : *bytes;
    }
    return true;
}

long gpu_conv2d_prepare(backend *be, conv2d_desc *d)
{
    gpu_ctx *g = gpu_ctx_of(be);
    char err[256];
    if (d->groups <= 0)
        d->groups = 1;
    if (d->c % d->groups != 0 || d->k % d->groups != 0) {
        fprintf(stderr, "punch-train: cuda: conv2d: %d groups do not divide %d channels and "
                        "%d filters\n", d->groups, d->c, d->k);
        return -1;
    }
    gpu_conv *cv = calloc(1, sizeof *cv);
    if (!cv) {
        fprintf(stderr, "punch-train: cuda: conv2d: out of host memory\n");
        return -1;
    }
    if (!gpu_conv_plan_geometry(d, &cv->plan, err, sizeof err)) {
        fprintf(stderr, "punch-train: cuda: %s\n", err);
        gpu_conv_free(cv);
        return -1;
    }
    size_t bytes;
    if (!gpu_conv_descriptors(cv, d) || !gpu_conv_choose(g, cv) ||
        !gpu_conv_workspace_bytes(g, cv, d, &bytes)) {
        fprintf(stderr, "punch-train: cuda: conv2d: %s\n", gpu_check_message());
        gpu_conv_free(cv);
        return -1;
    }
    if (!gpu_conv_plan_workspace(&cv->plan, bytes, err, sizeof err)) {
        fprintf(stderr, "punch-train: cuda: %s\n", err);
        gpu_conv_free(cv);
        return -1;
    }
    d->impl = cv;
    return cv->plan.workspace_floats;
}

void gpu_conv2d_release(backend *be, conv2d_desc *d)
{
    (void)be;
    gpu_conv_free(d->impl);
    d->impl = NULL;
}

/* The input cuDNN reads: x itself, or x padded into the workspace. */
static const float *gpu_conv_input(gpu_ctx *g, const gpu_conv *cv, const conv2d_desc *d,
                                   int batch, const float *x, float *workspace)
{
    if (!cv->plan.explicit_pad)
        return x;
    float *xp = workspace + cv->plan.off_xpad;
    GPU_MUST(gpu_k_pad(g->stream, (long)batch * d->c, d->h, d->w, d->pad_top, d->pad_left,
                       cv->plan.in_h, cv->plan.in_w, x, xp));
    return xp;
}

void gpu_conv2d_forward(backend *be, const conv2d_desc *d, int batch, const float *x,
                        const float *w, const float *bias, spec_activation act, float *y,
                        float *workspace)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_conv *cv = d->impl;
    const float one = 1.0f, zero = 0.0f;
    if (!gpu_conv_set_batch(cv, d, batch))
        gpu_check_fatal();
    const float *xin = gpu_conv_input(g, cv, d, batch, x, workspace);
    GPU_MUST(cudnnConvolutionForward(g->dnn, &one, cv->x, xin, cv->w, w, cv->conv, cv->fwd,
                                     workspace, (size_t)cv->plan.cudnn_floats * sizeof(float),
                                     &zero, cv->y, y));
    long plane = (long)d->oh * d->ow;
    if (bias)
        GPU_MUST(gpu_k_add_bias(g->stream, (long)batch * d->k * plane, d->k, plane, bias, y));
    if (act != ACT_NONE)
        gpu_activation_forward(be, act, (long)batch * d->k, plane, y, y);
}

void gpu_conv2d_backward(backend *be, const conv2d_desc *d, int batch, const float *x,
                         const float *w, const float *dz, float *dx, bool accumulate,
                         float *dw, float *db, float *workspace)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_conv *cv = d->impl;
    const float one = 1.0f, zero = 0.0f;
    size_t ws_bytes = (size_t)cv->plan.cudnn_floats * sizeof(float);
    if (!gpu_conv_set_batch(cv, d, batch))
        gpu_check_fatal();
    if (db)
        GPU_MUST(cudnnConvolutionBackwardBias(g->dnn, &one, cv->y, dz, &zero, cv->bias, db));
    const float *xin = gpu_conv_input(g, cv, d, batch, x, workspace);
    GPU_MUST(cudnnConvolutionBackwardFilter(g->dnn, &one, cv->x, xin, cv->y, dz, cv->conv,
                                            cv->bwd_filter, workspace, ws_bytes, &zero, cv->w,
                                            dw));
    if (!dx)
        return;
    if (!cv->plan.explicit_pad) {
        const float beta = accumulate ? 1.0f : 0.0f;
        GPU_MUST(cudnnConvolutionBackwardData(g->dnn, &one, cv->w, w, cv->y, dz, cv->conv,
                                              cv->bwd_data, workspace, ws_bytes, &beta, cv->x,
                                              dx));
        return;
    }
    float *dxp = workspace + cv->plan.off_dxpad;
    GPU_MUST(cudnnConvolutionBackwardData(g->dnn, &one, cv->w, w, cv->y, dz, cv->conv,
                                          cv->bwd_data, workspace, ws_bytes, &zero, cv->x,
                                          dxp));
    GPU_MUST(gpu_k_crop(g->stream, (long)batch * d->c, d->h, d->w, d->pad_top, d->pad_left,
                        cv->plan.in_h, cv->plan.in_w, dxp, dx, accumulate));
}
