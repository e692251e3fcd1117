/* gpu_kernels.cu — the CUDA backend's element-wise and reduction kernels;
 * see gpu_kernels.h. Element-wise kernels use grid-stride loops so any n
 * fits a bounded grid; reductions run in one block with a fixed tree, so a
 * sum never depends on scheduling. */
#include "gpu/gpu_kernels.h"

#define GPU_THREADS 256
#define GPU_MAX_BLOCKS 4096L

static unsigned gpu_blocks(long n)
{
    long b = (n + GPU_THREADS - 1) / GPU_THREADS;
    if (b < 1)
        b = 1;
    return (unsigned)(b < GPU_MAX_BLOCKS ? b : GPU_MAX_BLOCKS);
}

#define GPU_FOR(i, n) \
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long)gridDim.x * blockDim.x)

/* Sums v over the block into v of thread 0, in a fixed order. */
__device__ static double gpu_block_sum(double v, double *shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned stride = GPU_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    double total = shared[0];
    __syncthreads();
    return total;
}

/* gpu_block_sum of v into *out (thread 0 writes it): how every loss
 * kernel ends. */
__device__ static void gpu_block_store_sum(double v, double *shared, double *out)
{
    double total = gpu_block_sum(v, shared);
    if (threadIdx.x == 0)
        *out = total;
}

/* ---- bias, sums, copies ------------------------------------------------ */

__global__ static void k_add_bias(long n, int channels, long inner, const float *bias,
                                  float *y)
{
    GPU_FOR(i, n)
        y[i] += bias[(i / inner) % channels];
}

extern "C" cudaError_t gpu_k_add_bias(cudaStream_t s, long n, int channels, long inner,
                                      const float *bias, float *y)
{
    if (n > 0)
        k_add_bias<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(n, channels, inner, bias, y);
    return cudaGetLastError();
}

__global__ static void k_col_sum(int rows, int cols, const float *x, float *out)
{
    GPU_FOR(j, cols) {
        float acc = 0.0f;
        for (int r = 0; r < rows; r++)
            acc += x[(long)r * cols + j];
        out[j] = acc;
    }
}

extern "C" cudaError_t gpu_k_col_sum(cudaStream_t s, int rows, int cols, const float *x,
                                     float *out)
{
    if (cols > 0)
        k_col_sum<<<gpu_blocks(cols), GPU_THREADS, 0, s>>>(rows, cols, x, out);
    return cudaGetLastError();
}

__global__ static void k_copy2d(long rows, long width, const float *src, long src_stride,
                                float *dst, long dst_stride, bool accumulate)
{
    GPU_FOR(i, rows * width) {
        long r = i / width, j = i % width;
        float v = src[r * src_stride + j];
        float *d = dst + r * dst_stride + j;
        *d = accumulate ? *d + v : v;
    }
}

extern "C" cudaError_t gpu_k_copy2d(cudaStream_t s, long rows, long width, const float *src,
                                    long src_stride, float *dst, long dst_stride,
                                    bool accumulate)
{
    if (rows > 0 && width > 0)
        k_copy2d<<<gpu_blocks(rows * width), GPU_THREADS, 0, s>>>(rows, width, src,
                                                                    src_stride, dst,
                                                                    dst_stride, accumulate);
    return cudaGetLastError();
}

/* ---- softmax (one thread per row) ------------------------------------- */

__global__ static void k_softmax_forward(long rows, long cols, const float *x, float *y)
{
    GPU_FOR(r, rows)
        gpu_softmax_row(x + r * cols, y + r * cols, cols);
}

extern "C" cudaError_t gpu_k_softmax_forward(cudaStream_t s, long rows, long cols,
                                             const float *x, float *y)
{
    if (rows > 0 && cols > 0)
        k_softmax_forward<<<gpu_blocks(rows), GPU_THREADS, 0, s>>>(rows, cols, x, y);
    return cudaGetLastError();
}

__global__ static void k_softmax_backward(long rows, long cols, const float *y,
                                          const float *dy, float *dx, bool accumulate)
{
    GPU_FOR(r, rows)
        gpu_softmax_row_backward(y + r * cols, dy + r * cols, dx + r * cols, cols, accumulate);
}

extern "C" cudaError_t gpu_k_softmax_backward(cudaStream_t s, long rows, long cols,
                                              const float *y, const float *dy, float *dx,
                                              bool accumulate)
{
    if (rows > 0 && cols > 0)
        k_softmax_backward<<<gpu_blocks(rows), GPU_THREADS, 0, s>>>(rows, cols, y, dy, dx,
                                                                    accumulate);
    return cudaGetLastError();
}

/* ---- dropout ----------------------------------------------------------- */

__global__ static void k_dropout_forward(long n, float rate, uint64_t seed, const float *x,
                                         float *mask, float *y)
{
    float keep_scale = 1.0f / (1.0f - rate);
    GPU_FOR(i, n) {
        float m = gpu_dropout_keep(seed, (uint64_t)i, rate) ? keep_scale : 0.0f;
        mask[i] = m;
        y[i] = x[i] * m;
    }
}

extern "C" cudaError_t gpu_k_dropout_forward(cudaStream_t s, long n, float rate,
                                             uint64_t seed, const float *x, float *mask,
                                             float *y)
{
    if (n > 0)
        k_dropout_forward<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(n, rate, seed, x, mask, y);
    return cudaGetLastError();
}

__global__ static void k_dropout_backward(long n, const float *mask, const float *dy,
                                          float *dx, bool accumulate)
{
    GPU_FOR(i, n) {
        float g = dy[i] * mask[i];
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

extern "C" cudaError_t gpu_k_dropout_backward(cudaStream_t s, long n, const float *mask,
                                              const float *dy, float *dx, bool accumulate)
{
    if (n > 0)
        k_dropout_backward<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(n, mask, dy, dx, accumulate);
    return cudaGetLastError();
}

/* ---- explicit padding -------------------------------------------------- */

__global__ static void k_pad(long planes, int h, int w, int top, int left, int hp, int wp,
                             const float *x, float *xp)
{
    GPU_FOR(i, planes * hp * wp)
        xp[i] = gpu_pad_at(i, h, w, top, left, hp, wp, x);
}

extern "C" cudaError_t gpu_k_pad(cudaStream_t s, long planes, int h, int w, int top, int left,
                                 int hp, int wp, const float *x, float *xp)
{
    long n = planes * hp * wp;
    if (n > 0)
        k_pad<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(planes, h, w, top, left, hp, wp, x, xp);
    return cudaGetLastError();
}

__global__ static void k_crop(long planes, int h, int w, int top, int left, int hp, int wp,
                              const float *dxp, float *dx, bool accumulate)
{
    GPU_FOR(i, planes * h * w) {
        float g = gpu_crop_at(i, h, w, top, left, hp, wp, dxp);
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

extern "C" cudaError_t gpu_k_crop(cudaStream_t s, long planes, int h, int w, int top,
                                  int left, int hp, int wp, const float *dxp, float *dx,
                                  bool accumulate)
{
    long n = planes * h * w;
    if (n > 0)
        k_crop<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(planes, h, w, top, left, hp, wp, dxp, dx,
                                                     accumulate);
    return cudaGetLastError();
}

/* ---- pooling ------------------------------------------------------------ */

__global__ static void k_pool_forward(gpu_pool_geom g, long planes, const float *x, float *y)
{
    GPU_FOR(i, planes * g.oh * g.ow)
        y[i] = gpu_pool_forward_at(&g, x, i);
}

extern "C" cudaError_t gpu_k_pool_forward(cudaStream_t s, gpu_pool_geom g, int batch,
                                          const float *x, float *y)
{
    long planes = (long)batch * g.c, n = planes * g.oh * g.ow;
    if (n > 0)
        k_pool_forward<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(g, planes, x, y);
    return cudaGetLastError();
}

__global__ static void k_pool_backward(gpu_pool_geom g, long planes, const float *x,
                                       const float *y, const float *dy, float *dx,
                                       bool accumulate)
{
    GPU_FOR(i, planes * g.h * g.w) {
        float gr = gpu_pool_backward_at(&g, x, y, dy, i);
        dx[i] = accumulate ? dx[i] + gr : gr;
    }
}

extern "C" cudaError_t gpu_k_pool_backward(cudaStream_t s, gpu_pool_geom g, int batch,
                                           const float *x, const float *y, const float *dy,
                                           float *dx, bool accumulate)
{
    long planes = (long)batch * g.c, n = planes * g.h * g.w;
    if (n > 0)
        k_pool_backward<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(g, planes, x, y, dy, dx,
                                                              accumulate);
    return cudaGetLastError();
}

/* ---- losses and metrics ------------------------------------------------ */

/* One block; thread t takes rows t, t + GPU_THREADS, ... The row loop
 * repeats the CPU reference on purpose (cpu/cpu_backend.c, xent_rows):
 * test_gpu_vs_cpu checks this kernel against it, so the two keep the same
 * operations in the same order; change both together. */
__global__ static void k_softmax_xent(int batch, int n, const float *logits,
                                      const float *targets, float *probs, float *dlogits,
                                      double *sum)
{
    __shared__ double shared[GPU_THREADS];
    float inv_batch = 1.0f / (float)batch;
    double total = 0.0;
    for (int r = threadIdx.x; r < batch; r += GPU_THREADS) {
        const float *z = logits + (long)r * n;
        const float *t = targets + (long)r * n;
        float *p = probs + (long)r * n;
        float *d = dlogits + (long)r * n;
        float mx = z[0];
        for (int j = 1; j < n; j++)
            mx = z[j] > mx ? z[j] : mx;
        double se = 0.0;
        for (int j = 0; j < n; j++)
            se += exp((double)z[j] - mx);
        double log_sum = log(se);
        double loss = 0.0;
        for (int j = 0; j < n; j++) {
            double logp = (double)z[j] - mx - log_sum;
            p[j] = (float)exp(logp);
            loss -= (double)t[j] * logp;
            d[j] = (p[j] - t[j]) * inv_batch;
        }
        total += loss;
    }
    gpu_block_store_sum(total, shared, sum);
}

extern "C" cudaError_t gpu_k_softmax_xent(cudaStream_t s, int batch, int n,
                                          const float *logits, const float *targets,
                                          float *probs, float *dlogits, double *sum)
{
    k_softmax_xent<<<1, GPU_THREADS, 0, s>>>(batch, n, logits, targets, probs, dlogits, sum);
    return cudaGetLastError();
}

#define GPU_BCE_EPS 1e-7f

__global__ static void k_binary_xent(int batch, int n, const float *p, const float *targets,
                                     float *dp, double *sum)
{
    __shared__ double shared[GPU_THREADS];
    float scale = 1.0f / ((float)n * (float)batch);
    double total = 0.0;
    for (long i = threadIdx.x; i < (long)batch * n; i += GPU_THREADS) {
        float pc = fminf(fmaxf(p[i], GPU_BCE_EPS), 1.0f - GPU_BCE_EPS);
        float t = targets[i];
        total -= (t * log((double)pc) + (1.0 - t) * log(1.0 - (double)pc)) / n;
        dp[i] = (pc - t) / (pc * (1.0f - pc)) * scale;
    }
    gpu_block_store_sum(total, shared, sum);
}

extern "C" cudaError_t gpu_k_binary_xent(cudaStream_t s, int batch, int n, const float *p,
                                         const float *targets, float *dp, double *sum)
{
    k_binary_xent<<<1, GPU_THREADS, 0, s>>>(batch, n, p, targets, dp, sum);
    return cudaGetLastError();
}

/* The same one-block walk over every element as k_binary_xent: each loss
 * keeps a kernel of its own, as each has a function of its own in the CPU
 * backend, so the two read side by side with their references. */
__global__ static void k_mse(int batch, int n, const float *y, const float *targets,
                             float *dy, double *sum)
{
    __shared__ double shared[GPU_THREADS];
    float scale = 2.0f / ((float)n * (float)batch);
    double total = 0.0;
    for (long i = threadIdx.x; i < (long)batch * n; i += GPU_THREADS) {
        float e = y[i] - targets[i];
        total += (double)e * e / n;
        dy[i] = e * scale;
    }
    gpu_block_store_sum(total, shared, sum);
}

extern "C" cudaError_t gpu_k_mse(cudaStream_t s, int batch, int n, const float *y,
                                 const float *targets, float *dy, double *sum)
{
    k_mse<<<1, GPU_THREADS, 0, s>>>(batch, n, y, targets, dy, sum);
    return cudaGetLastError();
}

__device__ static int gpu_argmax(const float *v, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (v[j] > v[best])
            best = j;
    return best;
}

__global__ static void k_metrics(int batch, int n, const float *y, const float *targets,
                                 double *sums)
{
    __shared__ double shared[GPU_THREADS];
    double correct = 0.0, sq = 0.0, ab = 0.0;
    for (int r = threadIdx.x; r < batch; r += GPU_THREADS) {
        const float *yr = y + (long)r * n;
        const float *tr = targets + (long)r * n;
        if (gpu_argmax(yr, n) == gpu_argmax(tr, n))
            correct += 1.0;
        for (int j = 0; j < n; j++) {
            double e = (double)yr[j] - tr[j];
            sq += e * e;
            ab += fabs(e);
        }
    }
    correct = gpu_block_sum(correct, shared);
    sq = gpu_block_sum(sq, shared);
    ab = gpu_block_sum(ab, shared);
    if (threadIdx.x == 0) {
        sums[0] = correct;
        sums[1] = sq;
        sums[2] = ab;
    }
}

extern "C" cudaError_t gpu_k_metrics(cudaStream_t s, int batch, int n, const float *y,
                                     const float *targets, double *sums)
{
    k_metrics<<<1, GPU_THREADS, 0, s>>>(batch, n, y, targets, sums);
    return cudaGetLastError();
}

/* ---- optimizer --------------------------------------------------------- */

__global__ static void k_optim_step(gpu_optim_coeffs k, long n, float *params,
                                    const float *grads, float *s0, float *s1)
{
    GPU_FOR(i, n)
        gpu_optim_update(&k, i, params, grads, s0, s1);
}

extern "C" cudaError_t gpu_k_optim_step(cudaStream_t s, gpu_optim_coeffs k, long n,
                                        float *params, const float *grads, float *s0,
                                        float *s1)
{
    if (n > 0)
        k_optim_step<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(k, n, params, grads, s0, s1);
    return cudaGetLastError();
}
