/* gpu_backend.c — the CUDA backend: device choice and lifecycle, memory
 * and host<->device copies, cuBLAS GEMM/axpy/scale, dense layers, dropout,
 * concatenation, losses and metrics. Activations, convolution, pooling and
 * batch normalisation live in gpu_activation.c, gpu_conv.c, gpu_pool.c and
 * gpu_batchnorm.c; the small kernels in gpu_kernels.cu. */
#include "gpu/gpu_ctx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/launch_env.h"
#include "gpu/gpu.h"
#include "gpu/gpu_activation.h"
#include "gpu/gpu_device.h"
#include "gpu/gpu_hinge.h"
#include "gpu/gpu_kernels.h"
#include "gpu/gpu_ops.h"

/* ---- lifecycle --------------------------------------------------------- */

bool gpu_built(void)
{
    return true;
}

/* "no CUDA device: <reason>" unless the runtime sees at least one. */
static bool gpu_runtime_count(int *count, char *err, size_t errlen)
{
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "no CUDA device: %s", cudaGetErrorString(e));
        return false;
    }
    return true;
}

int gpu_device_count(char *why, size_t whylen)
{
    int count;
    gpu_device_choice choice;
    if (!gpu_runtime_count(&count, why, whylen) ||
        !gpu_device_choose(0, count, getenv("CUDA_VISIBLE_DEVICES"), &choice, why, whylen))
        return 0;
    return count;
}

bool gpu_available(char *why, size_t whylen)
{
    return gpu_device_count(why, whylen) > 0;
}

static void gpu_destroy(backend *be)
{
    if (!be)
        return;
    gpu_ctx *g = gpu_ctx_of(be);
    if (g) {
        /* Teardown reports but does not stop at a failure: everything
         * else still has to be released. */
        if (g->stream)
            GPU_TEARDOWN(cudaStreamSynchronize(g->stream));
        if (g->dnn)
            GPU_TEARDOWN(cudnnDestroy(g->dnn));
        if (g->blas)
            GPU_TEARDOWN(cublasDestroy(g->blas));
        for (int i = 0; i < 2; i++) {
            if (g->stage[i])
                GPU_TEARDOWN(cudaFreeHost(g->stage[i]));
            if (g->stage_done[i])
                GPU_TEARDOWN(cudaEventDestroy(g->stage_done[i]));
        }
        if (g->host_sums)
            GPU_TEARDOWN(cudaFreeHost(g->host_sums));
        if (g->dev_sums)
            GPU_TEARDOWN(cudaFree(g->dev_sums));
        if (g->dev_partials)
            GPU_TEARDOWN(cudaFree(g->dev_partials));
        if (g->stream)
            GPU_TEARDOWN(cudaStreamDestroy(g->stream));
        free(g);
    }
    free(be);
}

static void gpu_synchronize(backend *be)
{
    GPU_MUST(cudaStreamSynchronize(gpu_ctx_of(be)->stream));
}

/* Streams, handles and staging on the chosen device. */
static bool gpu_ctx_init(gpu_ctx *g)
{
    if (!GPU_CHECK(cudaSetDevice(g->device)))
        return false;
    gpu_check_arm();
    if (!GPU_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) ||
        !GPU_CHECK(cublasCreate(&g->blas)) || !GPU_CHECK(cublasSetStream(g->blas, g->stream)) ||
        /* FP32 throughout: no TF32 tensor-op shortcuts, so results track
         * the CPU reference. */
        !GPU_CHECK(cublasSetMathMode(g->blas, CUBLAS_DEFAULT_MATH)) ||
        !GPU_CHECK(cudnnCreate(&g->dnn)) || !GPU_CHECK(cudnnSetStream(g->dnn, g->stream)))
        return false;
    for (int i = 0; i < 2; i++)
        if (!GPU_CHECK(cudaHostAlloc((void **)&g->stage[i], GPU_STAGE_FLOATS * sizeof(float),
                                     cudaHostAllocDefault)) ||
            !GPU_CHECK(cudaEventCreateWithFlags(&g->stage_done[i], cudaEventDisableTiming)))
            return false;
    return GPU_CHECK(cudaMalloc((void **)&g->dev_sums, 4 * sizeof(double))) &&
           GPU_CHECK(cudaMalloc((void **)&g->dev_partials,
                                GPU_LOSS_SCRATCH * sizeof(double))) &&
           GPU_CHECK(cudaHostAlloc((void **)&g->host_sums, 4 * sizeof(double),
                                   cudaHostAllocDefault));
}

static void gpu_backend_fill(backend *be);

backend *backend_cuda_create(int local_rank, char *err, size_t errlen)
{
    int count;
    if (!gpu_runtime_count(&count, err, errlen))
        return NULL;
    gpu_device_choice choice;
    if (!gpu_device_choose(local_rank, count, getenv("CUDA_VISIBLE_DEVICES"), &choice, err,
                           errlen))
        return NULL;
    if (choice.shared)
        fprintf(stderr,
                "punch-train: warning: local rank %d shares CUDA device %s with a lower "
                "rank (more ranks than GPUs on this node)\n",
                local_rank, choice.visible);
    backend *be = calloc(1, sizeof *be);
    gpu_ctx *g = calloc(1, sizeof *g);
    if (!be || !g) {
        free(be);
        free(g);
        snprintf(err, errlen, "cuda: out of host memory");
        return NULL;
    }
    g->device = choice.device;
    be->impl = g;
    gpu_backend_fill(be);
    if (!gpu_ctx_init(g)) {
        snprintf(err, errlen, "cuda: device %s: %s", choice.visible, gpu_check_message());
        gpu_destroy(be);
        return NULL;
    }
    return be;
}

backend *gpu_backend_open(char *err, size_t errlen)
{
    return backend_cuda_create(launch_env_local_rank(launch_env_getenv), err, errlen);
}

/* ---- memory ------------------------------------------------------------ */

static float *gpu_alloc(backend *be, long n)
{
    if (n < 0 || (size_t)n > SIZE_MAX / sizeof(float) - 64)
        return NULL;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    float *p = NULL;
    /* cudaMalloc aligns to at least 256 bytes. */
    if (!GPU_CHECK(cudaMalloc((void **)&p, bytes))) {
        fprintf(stderr, "punch-train: cuda: %s\n", gpu_check_message());
        return NULL;
    }
    GPU_MUST(cudaMemsetAsync(p, 0, bytes, gpu_ctx_of(be)->stream));
    return p;
}

/* Called on release paths: a failure is logged, not fatal. */
static void gpu_free(backend *be, float *p)
{
    (void)be;
    if (p)
        GPU_TEARDOWN(cudaFree(p));
}

static void gpu_zero(backend *be, float *p, long n)
{
    if (n > 0)
        GPU_MUST(cudaMemsetAsync(p, 0, (size_t)n * sizeof *p, gpu_ctx_of(be)->stream));
}

static void gpu_copy(backend *be, float *dst, const float *src, long n)
{
    if (n > 0 && dst != src)
        GPU_MUST(cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst, cudaMemcpyDeviceToDevice,
                                 gpu_ctx_of(be)->stream));
}

/* Host memory goes through the pinned chunks: wait until a chunk's last
 * copy is done, fill it, queue its copy. The call returns with the last
 * chunks still in flight, so the host prepares the next batch while the
 * device copies and computes; the next upload starts on the other chunk
 * (gpu_stage.h), so it does not wait for this one's last copy. */
static void gpu_upload(backend *be, float *dst_dev, const float *src_host, long n)
{
    gpu_ctx *g = gpu_ctx_of(be);
    for (long off = 0; off < n; off += GPU_STAGE_FLOATS) {
        int slot = gpu_stage_take(&g->stage_seq);
        long len = n - off < GPU_STAGE_FLOATS ? n - off : GPU_STAGE_FLOATS;
        size_t bytes = (size_t)len * sizeof(float);
        GPU_MUST(cudaEventSynchronize(g->stage_done[slot]));
        memcpy(g->stage[slot], src_host + off, bytes);
        GPU_MUST(cudaMemcpyAsync(dst_dev + off, g->stage[slot], bytes, cudaMemcpyHostToDevice,
                                 g->stream));
        GPU_MUST(cudaEventRecord(g->stage_done[slot], g->stream));
    }
}

/* Queues the copy of chunk `index` of src into its pinned chunk. */
static void gpu_download_issue(gpu_ctx *g, const float *src_dev, long n, long index)
{
    int slot = gpu_stage_slot(&g->stage_seq, index);
    long off = index * GPU_STAGE_FLOATS;
    long len = n - off < GPU_STAGE_FLOATS ? n - off : GPU_STAGE_FLOATS;
    GPU_MUST(cudaEventSynchronize(g->stage_done[slot]));
    GPU_MUST(cudaMemcpyAsync(g->stage[slot], src_dev + off, (size_t)len * sizeof(float),
                             cudaMemcpyDeviceToHost, g->stream));
    GPU_MUST(cudaEventRecord(g->stage_done[slot], g->stream));
}

/* Chunk k+1 is in flight while the host copies chunk k out. The chunks
 * continue the staging sequence, like an upload's. */
static void gpu_download(backend *be, float *dst_host, const float *src_dev, long n)
{
    gpu_ctx *g = gpu_ctx_of(be);
    long chunks = gpu_stage_chunks(n);
    if (chunks > 0)
        gpu_download_issue(g, src_dev, n, 0);
    for (long k = 0; k < chunks; k++) {
        if (k + 1 < chunks)
            gpu_download_issue(g, src_dev, n, k + 1);
        int slot = gpu_stage_slot(&g->stage_seq, k);
        long off = k * GPU_STAGE_FLOATS;
        long len = n - off < GPU_STAGE_FLOATS ? n - off : GPU_STAGE_FLOATS;
        GPU_MUST(cudaEventSynchronize(g->stage_done[slot]));
        memcpy(dst_host + off, g->stage[slot], (size_t)len * sizeof(float));
    }
    gpu_stage_advance(&g->stage_seq, chunks);
}

/* ---- BLAS -------------------------------------------------------------- */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
 * same memory, so swap the operands instead of transposing anything. */
static void gpu_gemm(backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    GPU_MUST(cublasSgemm(gpu_ctx_of(be)->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                         trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                         &beta, c, ldc));
}

static void gpu_axpy(backend *be, long n, float alpha, const float *x, float *y)
{
    if (n > 0)
        GPU_MUST(cublasSaxpy_64(gpu_ctx_of(be)->blas, n, &alpha, x, 1, y, 1));
}

static void gpu_scale(backend *be, long n, float alpha, float *x)
{
    if (n > 0)
        GPU_MUST(cublasSscal_64(gpu_ctx_of(be)->blas, n, &alpha, x, 1));
}

/* ---- dense ------------------------------------------------------------- */

static void gpu_dense_forward(backend *be, int batch, int in, int out, const float *x,
                              const float *w, const float *bias, spec_activation act, float *y)
{
    gpu_gemm(be, false, false, batch, out, in, 1.0f, x, in, w, out, 0.0f, y, out);
    if (bias)
        GPU_MUST(gpu_k_add_bias(gpu_ctx_of(be)->stream, (long)batch * out, out, 1, bias, y));
    if (act != ACT_NONE)
        gpu_activation_forward(be, act, batch, out, y, y);
}

static void gpu_dense_backward(backend *be, int batch, int in, int out, const float *x,
                               const float *w, const float *dz, float *dx, bool accumulate,
                               float *dw, float *db)
{
    gpu_gemm(be, true, false, in, out, batch, 1.0f, x, in, dz, out, 0.0f, dw, out);
    if (db)
        GPU_MUST(gpu_k_col_sum(gpu_ctx_of(be)->stream, batch, out, dz, db));
    if (dx)
        gpu_gemm(be, false, true, batch, in, out, 1.0f, dz, out, w, out,
                 accumulate ? 1.0f : 0.0f, dx, in);
}

/* ---- dropout and concatenation ----------------------------------------- */

static void gpu_dropout_forward(backend *be, long n, float rate, uint64_t seed, const float *x,
                                float *mask, float *y)
{
    GPU_MUST(gpu_k_dropout_forward(gpu_ctx_of(be)->stream, n, rate, seed, x, mask, y));
}

static void gpu_dropout_backward(backend *be, long n, const float *mask, const float *dy,
                                 float *dx, bool accumulate)
{
    GPU_MUST(gpu_k_dropout_backward(gpu_ctx_of(be)->stream, n, mask, dy, dx, accumulate));
}

static void gpu_concat_forward(backend *be, int batch, int n_in, const int *c_in, long spatial,
                               const float *const *xs, float *y)
{
    cudaStream_t s = gpu_ctx_of(be)->stream;
    long total = 0;
    for (int i = 0; i < n_in; i++)
        total += c_in[i];
    size_t pitch = (size_t)(total * spatial) * sizeof(float);
    long off = 0;
    for (int i = 0; i < n_in; i++) {
        size_t width = (size_t)((long)c_in[i] * spatial) * sizeof(float);
        if (width > 0 && batch > 0)
            GPU_MUST(cudaMemcpy2DAsync(y + off * spatial, pitch, xs[i], width, width,
                                       (size_t)batch, cudaMemcpyDeviceToDevice, s));
        off += c_in[i];
    }
}

static void gpu_concat_backward(backend *be, int batch, int n_in, const int *c_in, long spatial,
                                const float *dy, float *const *dxs, const bool *accumulate)
{
    cudaStream_t s = gpu_ctx_of(be)->stream;
    long total = 0;
    for (int i = 0; i < n_in; i++)
        total += c_in[i];
    long off = 0;
    for (int i = 0; i < n_in; i++) {
        long width = (long)c_in[i] * spatial;
        if (dxs[i])
            GPU_MUST(gpu_k_copy2d(s, batch, width, dy + off * spatial, total * spatial, dxs[i],
                                  width, accumulate[i]));
        off += c_in[i];
    }
}

/* ---- losses and metrics ------------------------------------------------ */

/* Brings the kernel's sums to the host; the one wait of a training step. */
static const double *gpu_sums(gpu_ctx *g, int count)
{
    GPU_MUST(cudaMemcpyAsync(g->host_sums, g->dev_sums, (size_t)count * sizeof(double),
                             cudaMemcpyDeviceToHost, g->stream));
    GPU_MUST(cudaStreamSynchronize(g->stream));
    return g->host_sums;
}

static double gpu_softmax_xent(backend *be, int batch, int n, const float *logits,
                               const float *targets, float *probs, float *dlogits)
{
    gpu_ctx *g = gpu_ctx_of(be);
    GPU_MUST(gpu_k_softmax_xent(g->stream, batch, n, logits, targets, probs, dlogits,
                                g->dev_partials, g->dev_sums));
    return gpu_sums(g, 1)[0];
}

static double gpu_binary_xent(backend *be, int batch, int n, const float *p,
                              const float *targets, float *dp)
{
    gpu_ctx *g = gpu_ctx_of(be);
    GPU_MUST(gpu_k_binary_xent(g->stream, batch, n, p, targets, dp, g->dev_partials,
                               g->dev_sums));
    return gpu_sums(g, 1)[0];
}

static double gpu_mse(backend *be, int batch, int n, const float *y, const float *targets,
                      float *dy)
{
    gpu_ctx *g = gpu_ctx_of(be);
    GPU_MUST(gpu_k_mse(g->stream, batch, n, y, targets, dy, g->dev_partials, g->dev_sums));
    return gpu_sums(g, 1)[0];
}

static void gpu_metrics(backend *be, int batch, int n, const float *y, const float *targets,
                        batch_metrics *out)
{
    gpu_ctx *g = gpu_ctx_of(be);
    GPU_MUST(gpu_k_metrics(g->stream, batch, n, y, targets, g->dev_partials,
                           g->dev_sums));
    const double *s = gpu_sums(g, 3);
    out->correct = s[0];
    out->sq_err = s[1];
    out->abs_err = s[2];
}

static double gpu_categorical_hinge(backend *be, int batch, int n, const float *y,
                                    const float *targets, float *dy)
{
    gpu_ctx *g = gpu_ctx_of(be);
    GPU_MUST(gpu_k_categorical_hinge(g->stream, batch, n, y, targets, dy, g->dev_sums));
    return gpu_sums(g, 1)[0];
}

static void gpu_backend_fill(backend *be)
{
    be->name = "cuda";
    be->host_memory = false;
    be->threads = 1;
    be->destroy = gpu_destroy;
    be->synchronize = gpu_synchronize;
    be->alloc = gpu_alloc;
    be->free = gpu_free;
    be->zero = gpu_zero;
    be->copy = gpu_copy;
    be->upload = gpu_upload;
    be->download = gpu_download;
    be->gemm = gpu_gemm;
    be->axpy = gpu_axpy;
    be->scale = gpu_scale;
    be->dense_forward = gpu_dense_forward;
    be->dense_backward = gpu_dense_backward;
    be->dropout_forward = gpu_dropout_forward;
    be->dropout_backward = gpu_dropout_backward;
    be->concat_forward = gpu_concat_forward;
    be->concat_backward = gpu_concat_backward;
    be->softmax_xent = gpu_softmax_xent;
    be->binary_xent = gpu_binary_xent;
    be->mse = gpu_mse;
    be->metrics = gpu_metrics;
    be->categorical_hinge = gpu_categorical_hinge;
    gpu_activation_register(be);
    gpu_conv_register(be);
    gpu_pool_register(be);
    gpu_batchnorm_register(be);
}
