/* gpu_conv.c — 2-D convolution on the CUDA backend through cuDNN.
 *
 * At prepare: descriptors, and one algorithm per direction from cuDNN's
 * heuristics (cudnnGet*Algorithm_v7), chosen by gpu_conv_choice.h's rules:
 * deterministic (the seam promises bit-identical reruns) FP32 without
 * tensor cores (no TF32, so the CPU reference is comparable); a
 * non-deterministic one only when cuDNN offers no deterministic one or the
 * job allows it (training.deterministic false: cuDNN's fastest, as PyTorch
 * by default), and then the backend says so (be->not_reproducible). One line per layer on
 * stderr names the three algorithms. The workspace is sized for max_batch;
 * every other batch size is checked once, when it first occurs
 * (gpu_conv_batches_get). Bias and activation follow the convolution as
 * separate ops. */
#include "gpu/gpu_ctx.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_conv_choice.h"
#include "gpu/gpu_kernels.h"
#include "gpu/gpu_plan.h"
#include "gpu/gpu_activation.h"
#include "gpu/gpu_ops.h"

/* Largest cuDNN workspace one layer may ask for. */
#define GPU_CONV_WS_CAP ((size_t)1 << 30)

typedef struct gpu_conv {
    gpu_conv_plan plan;
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    gpu_conv_batches batches;   /* algorithms per batch size */
    char name[96];              /* "3x32x32 -> 16x32x32, 3x3" for messages */
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
    gpu_conv_batches_free(&cv->batches);
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
    /* FMA math on the descriptor keeps tensor cores (TF32) out whatever
     * math a heuristic record reports. */
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

/* ---- algorithm choice -------------------------------------------------- */

static gpu_math gpu_conv_math(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH:
        return GPU_MATH_DEFAULT;
    case CUDNN_FMA_MATH:
        return GPU_MATH_FMA;
    case CUDNN_TENSOR_OP_MATH:
        return GPU_MATH_TENSOR_OP;
    default:
        return GPU_MATH_TENSOR_OP_ALLOW_CONVERSION;
    }
}

/* cuDNN's perf results as gpu_conv_choice.h's records. A macro because
 * cuDNN has one perf struct type per direction. */
#define GPU_CONV_RECORDS(perf, count, out)                                        \
    do {                                                                          \
        for (int i_ = 0; i_ < (count); i_++)                                      \
            (out)[i_] = (gpu_algo_perf){                                          \
                .algo = (int)(perf)[i_].algo,                                     \
                .ok = (perf)[i_].status == CUDNN_STATUS_SUCCESS,                  \
                .deterministic = (perf)[i_].determinism == CUDNN_DETERMINISTIC,   \
                .math = gpu_conv_math((perf)[i_].mathType),                       \
                .memory = (perf)[i_].memory,                                      \
            };                                                                    \
    } while (0)

/* Picks direction `dir` among n records into a; false + message if none. */
static bool gpu_conv_pick_dir(const gpu_algo_perf *rec, int n, size_t cap, bool any,
                              gpu_conv_dir dir, gpu_conv_algos *a)
{
    int i = gpu_conv_algo_pick(rec, n, cap, any, &a->deterministic[dir]);
    if (i < 0) {
        gpu_check_failed("cuDNN offers no usable FP32 algorithm for this convolution",
                         "cudnnGetConvolution*Algorithm_v7", __FILE__, __LINE__);
        return false;
    }
    a->algo[dir] = rec[i].algo;
    return true;
}

/* Algorithms for the batch the descriptors are set to, each needing at
 * most cap bytes of workspace there. */
static bool gpu_conv_choose(backend *be, gpu_conv *cv, size_t cap, gpu_conv_algos *a)
{
    gpu_ctx *g = gpu_ctx_of(be);
    bool any = be->nondeterministic_ok;
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    gpu_algo_perf rf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    gpu_algo_perf rd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    gpu_algo_perf rw[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int nf = 0, nd = 0, nw = 0;
    if (!GPU_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            g->dnn, cv->x, cv->w, cv->conv, cv->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nf, fwd)) ||
        !GPU_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            g->dnn, cv->w, cv->y, cv->conv, cv->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &nd,
            bd)) ||
        !GPU_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            g->dnn, cv->x, cv->y, cv->conv, cv->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &nw,
            bf)))
        return false;
    GPU_CONV_RECORDS(fwd, nf, rf);
    GPU_CONV_RECORDS(bd, nd, rd);
    GPU_CONV_RECORDS(bf, nw, rw);
    return gpu_conv_pick_dir(rf, nf, cap, any, GPU_CONV_FWD, a) &&
           gpu_conv_pick_dir(rd, nd, cap, any, GPU_CONV_BWD_DATA, a) &&
           gpu_conv_pick_dir(rw, nw, cap, any, GPU_CONV_BWD_FILTER, a);
}

/* The largest workspace a's algorithms need at the batch the descriptors
 * are set to (host-side queries only, no device work). */
static bool gpu_conv_need(gpu_ctx *g, gpu_conv *cv, const gpu_conv_algos *a, size_t *bytes)
{
    size_t f, dd, w;
    if (!GPU_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            g->dnn, cv->x, cv->w, cv->conv, cv->y,
            (cudnnConvolutionFwdAlgo_t)a->algo[GPU_CONV_FWD], &f)) ||
        !GPU_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            g->dnn, cv->w, cv->y, cv->conv, cv->x,
            (cudnnConvolutionBwdDataAlgo_t)a->algo[GPU_CONV_BWD_DATA], &dd)) ||
        !GPU_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            g->dnn, cv->x, cv->y, cv->conv, cv->w,
            (cudnnConvolutionBwdFilterAlgo_t)a->algo[GPU_CONV_BWD_FILTER], &w)))
        return false;
    size_t m = f > dd ? f : dd;
    *bytes = m > w ? m : w;
    return true;
}

/* ---- naming and reporting ---------------------------------------------- */

static const char *gpu_conv_algo_name(gpu_conv_dir dir, int algo)
{
    static const char *const fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {
        [CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM] = "IMPLICIT_GEMM",
        [CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM] = "IMPLICIT_PRECOMP_GEMM",
        [CUDNN_CONVOLUTION_FWD_ALGO_GEMM] = "GEMM",
        [CUDNN_CONVOLUTION_FWD_ALGO_DIRECT] = "DIRECT",
        [CUDNN_CONVOLUTION_FWD_ALGO_FFT] = "FFT",
        [CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING] = "FFT_TILING",
        [CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD] = "WINOGRAD",
        [CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED] = "WINOGRAD_NONFUSED",
    };
    static const char *const bwd_data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {
        [CUDNN_CONVOLUTION_BWD_DATA_ALGO_0] = "ALGO_0",
        [CUDNN_CONVOLUTION_BWD_DATA_ALGO_1] = "ALGO_1",
        [CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT] = "FFT",
        [CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING] = "FFT_TILING",
        [CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD] = "WINOGRAD",
        [CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED] = "WINOGRAD_NONFUSED",
    };
    static const char *const bwd_filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT] = {
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0] = "ALGO_0",
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1] = "ALGO_1",
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT] = "FFT",
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3] = "ALGO_3",
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD] = "WINOGRAD",
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED] = "WINOGRAD_NONFUSED",
        [CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING] = "FFT_TILING",
    };
    const char *const *names[GPU_CONV_DIRS] = {fwd, bwd_data, bwd_filter};
    const int counts[GPU_CONV_DIRS] = {CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};
    if (algo < 0 || algo >= counts[dir] || !names[dir][algo])
        return "?";
    return names[dir][algo];
}

/* One line: the layer, the batch it is for, the three algorithms, and
 * which of them are not deterministic. Also marks the backend as not
 * reproducible when one is not. */
static void gpu_conv_report(backend *be, const gpu_conv *cv, const char *what,
                            const gpu_conv_algos *a)
{
    static const char *const dir_name[GPU_CONV_DIRS] = {"forward", "backward-data",
                                                        "backward-filter"};
    char line[512];
    int len = snprintf(line, sizeof line, "cuda: conv2d %s: %s:", cv->name, what);
    for (int d = 0; d < GPU_CONV_DIRS && len > 0 && (size_t)len < sizeof line; d++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %s%s%s", dir_name[d],
                        gpu_conv_algo_name((gpu_conv_dir)d, a->algo[d]),
                        a->deterministic[d] ? "" : " (NOT deterministic)",
                        d + 1 < GPU_CONV_DIRS ? "," : "");
    fprintf(stderr, "punch-train: %s\n", line);
    if (be->not_reproducible)
        return; /* the first reason is the one reported */
    for (int d = 0; d < GPU_CONV_DIRS; d++) {
        if (a->deterministic[d])
            continue;
        gpu_ctx *g = gpu_ctx_of(be);
        if (be->nondeterministic_ok)
            snprintf(g->not_reproducible, sizeof g->not_reproducible,
                     "training.deterministic is false: conv2d %s runs a non-deterministic "
                     "%s algorithm", cv->name, dir_name[d]);
        else
            snprintf(g->not_reproducible, sizeof g->not_reproducible,
                     "conv2d %s: cuDNN offers no usable deterministic %s algorithm",
                     cv->name, dir_name[d]);
        be->not_reproducible = g->not_reproducible;
        return;
    }
}

/* ---- per batch size ----------------------------------------------------- */

typedef struct gpu_conv_probe_ctx {
    backend *be;
    gpu_conv *cv;
    const conv2d_desc *d;
} gpu_conv_probe_ctx;

static bool gpu_conv_probe_need(void *ctx, int batch, const gpu_conv_algos *a, size_t *bytes)
{
    gpu_conv_probe_ctx *p = ctx;
    return gpu_conv_set_batch(p->cv, p->d, batch) &&
           gpu_conv_need(gpu_ctx_of(p->be), p->cv, a, bytes);
}

/* The heuristics' memory figure is checked against the workspace-size
 * query the run relies on, so a disagreement cannot overrun the buffer. */
static bool gpu_conv_probe_pick(void *ctx, int batch, size_t cap, gpu_conv_algos *out)
{
    gpu_conv_probe_ctx *p = ctx;
    gpu_ctx *g = gpu_ctx_of(p->be);
    size_t bytes;
    if (!gpu_conv_set_batch(p->cv, p->d, batch) || !gpu_conv_choose(p->be, p->cv, cap, out) ||
        !gpu_conv_need(g, p->cv, out, &bytes))
        return false;
    if (bytes > cap) {
        gpu_check_failed("cuDNN's algorithms for this batch size need more workspace than "
                         "the layer has", "gpu_conv_probe_pick", __FILE__, __LINE__);
        return false;
    }
    return true;
}

/* Sets the descriptors to `batch` and returns its algorithms, checking
 * the size first if it is new (gpu_conv_batches_get). Exits on failure, as
 * an op whose convolution cannot run must. */
static const gpu_conv_algos *gpu_conv_at(backend *be, const conv2d_desc *d, int batch)
{
    gpu_conv *cv = d->impl;
    gpu_conv_probe_ctx ctx = {.be = be, .cv = cv, .d = d};
    const gpu_conv_probe probe = {gpu_conv_probe_need, gpu_conv_probe_pick, &ctx};
    bool fresh;
    const gpu_conv_algos *a = gpu_conv_batches_get(&cv->batches, batch, &probe, &fresh);
    if (!a || !gpu_conv_set_batch(cv, d, batch))
        gpu_check_fatal();
    if (fresh) {
        char what[96];
        snprintf(what, sizeof what, "batch %d needs more workspace than batch %d, so it runs",
                 batch, d->max_batch);
        gpu_conv_report(be, cv, what, a);
    }
    return a;
}

/* ---- prepare ------------------------------------------------------------ */

/* Algorithms and workspace at max_batch (the descriptors' batch). */
static bool gpu_conv_plan_algos(backend *be, gpu_conv *cv, const conv2d_desc *d, char *err,
                                size_t errlen)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_conv_algos a;
    size_t bytes;
    if (!gpu_conv_choose(be, cv, GPU_CONV_WS_CAP, &a) || !gpu_conv_need(g, cv, &a, &bytes)) {
        snprintf(err, errlen, "conv2d: %s", gpu_check_message());
        return false;
    }
    if (!gpu_conv_plan_workspace(&cv->plan, bytes, err, errlen))
        return false;
    /* The cap other batch sizes are checked against: what the layer owns. */
    size_t cap = (size_t)cv->plan.cudnn_floats * sizeof(float);
    if (!gpu_conv_batches_init(&cv->batches, d->max_batch, &a, cap)) {
        snprintf(err, errlen, "conv2d: out of host memory");
        return false;
    }
    char what[64];
    snprintf(what, sizeof what, "batch %d, workspace %zu bytes", d->max_batch, bytes);
    gpu_conv_report(be, cv, what, &a);
    return true;
}

static long gpu_conv2d_prepare(backend *be, conv2d_desc *d)
{
    char err[512];
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
    snprintf(cv->name, sizeof cv->name, "%dx%dx%d -> %dx%dx%d, %dx%d", d->c, d->h, d->w, d->k,
             d->oh, d->ow, d->kh, d->kw);
    if (!gpu_conv_plan_geometry(d, &cv->plan, err, sizeof err)) {
        fprintf(stderr, "punch-train: cuda: %s\n", err);
        gpu_conv_free(cv);
        return -1;
    }
    if (!gpu_conv_descriptors(cv, d)) {
        fprintf(stderr, "punch-train: cuda: conv2d: %s\n", gpu_check_message());
        gpu_conv_free(cv);
        return -1;
    }
    if (!gpu_conv_plan_algos(be, cv, d, err, sizeof err)) {
        fprintf(stderr, "punch-train: cuda: %s\n", err);
        gpu_conv_free(cv);
        return -1;
    }
    d->impl = cv;
    return cv->plan.workspace_floats;
}

static void gpu_conv2d_release(backend *be, conv2d_desc *d)
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

static void gpu_conv2d_forward(backend *be, const conv2d_desc *d, int batch, const float *x,
                        const float *w, const float *bias, spec_activation act, float *y,
                        float *workspace)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_conv *cv = d->impl;
    const float one = 1.0f, zero = 0.0f;
    const gpu_conv_algos *a = gpu_conv_at(be, d, batch);
    const float *xin = gpu_conv_input(g, cv, d, batch, x, workspace);
    GPU_MUST(cudnnConvolutionForward(g->dnn, &one, cv->x, xin, cv->w, w, cv->conv,
                                     (cudnnConvolutionFwdAlgo_t)a->algo[GPU_CONV_FWD],
                                     workspace, (size_t)cv->plan.cudnn_floats * sizeof(float),
                                     &zero, cv->y, y));
    long plane = (long)d->oh * d->ow;
    if (bias)
        GPU_MUST(gpu_k_add_bias(g->stream, (long)batch * d->k * plane, d->k, plane, bias, y));
    if (act != ACT_NONE)
        gpu_activation_forward(be, act, (long)batch * d->k, plane, y, y);
}

static void gpu_conv2d_backward(backend *be, const conv2d_desc *d, int batch, const float *x,
                         const float *w, const float *dz, float *dx, bool accumulate,
                         float *dw, float *db, float *workspace)
{
    gpu_ctx *g = gpu_ctx_of(be);
    gpu_conv *cv = d->impl;
    const float one = 1.0f, zero = 0.0f;
    size_t ws_bytes = (size_t)cv->plan.cudnn_floats * sizeof(float);
    const gpu_conv_algos *a = gpu_conv_at(be, d, batch);
    cudnnConvolutionBwdDataAlgo_t bwd_data =
        (cudnnConvolutionBwdDataAlgo_t)a->algo[GPU_CONV_BWD_DATA];
    cudnnConvolutionBwdFilterAlgo_t bwd_filter =
        (cudnnConvolutionBwdFilterAlgo_t)a->algo[GPU_CONV_BWD_FILTER];
    if (db)
        GPU_MUST(cudnnConvolutionBackwardBias(g->dnn, &one, cv->y, dz, &zero, cv->bias, db));
    const float *xin = gpu_conv_input(g, cv, d, batch, x, workspace);
    GPU_MUST(cudnnConvolutionBackwardFilter(g->dnn, &one, cv->x, xin, cv->y, dz, cv->conv,
                                            bwd_filter, workspace, ws_bytes, &zero, cv->w,
                                            dw));
    if (!dx)
        return;
    if (!cv->plan.explicit_pad) {
        const float beta = accumulate ? 1.0f : 0.0f;
        GPU_MUST(cudnnConvolutionBackwardData(g->dnn, &one, cv->w, w, cv->y, dz, cv->conv,
                                              bwd_data, workspace, ws_bytes, &beta, cv->x,
                                              dx));
        return;
    }
    float *dxp = workspace + cv->plan.off_dxpad;
    GPU_MUST(cudnnConvolutionBackwardData(g->dnn, &one, cv->w, w, cv->y, dz, cv->conv,
                                          bwd_data, workspace, ws_bytes, &zero, cv->x,
                                          dxp));
    GPU_MUST(gpu_k_crop(g->stream, (long)batch * d->c, d->h, d->w, d->pad_top, d->pad_left,
                        cv->plan.in_h, cv->plan.in_w, dxp, dx, accumulate));
}

/* Sets this file's ops of backend.h on be. */
void gpu_conv_register(backend *be)
{
    be->conv2d_prepare = gpu_conv2d_prepare;
    be->conv2d_release = gpu_conv2d_release;
    be->conv2d_forward = gpu_conv2d_forward;
    be->conv2d_backward = gpu_conv2d_backward;
}
