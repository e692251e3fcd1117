/* gpu_kernels.cu — the CUDA backend's element-wise and reduction kernels;
 * see gpu_kernels.h. Element-wise kernels use grid-stride loops so any n
 * fits a bounded grid. Reductions are deterministic: a row (or a block's
 * share of elements) is reduced by one block, each thread over a fixed
 * stride of elements and then a fixed shared-memory tree; per-block
 * partials are summed by one more block in the same way. The grid depends
 * only on the shape, so the same call gives the same bits every time. */
#include "gpu/gpu_kernels.h"

#include <limits.h>

#define GPU_THREADS GPU_BLOCK_THREADS
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

/* Rows handled by one block each: the block's rows are r = blockIdx.x,
 * blockIdx.x + gridDim.x, ... (every thread of the block loops alike, so
 * __syncthreads inside is reached by all); within a row, thread t takes
 * the row's elements t, t + GPU_THREADS, ... */
#define GPU_FOR_ROWS(r, rows) for (long r = blockIdx.x; r < (rows); r += gridDim.x)
#define GPU_FOR_COLS(j, cols) for (long j = threadIdx.x; j < (cols); j += GPU_THREADS)

/* Blocks for `rows` rows, one each up to `cap`. */
static unsigned gpu_row_blocks(long rows, long cap)
{
    return (unsigned)(rows < 1 ? 1 : rows < cap ? rows : cap);
}

/* Sums v over the block in a fixed order (gpu_tree_sum in gpu_math.h is
 * its host mirror), returned to every thread. */
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

/* The max of v over the block, returned to every thread; -INFINITY from a
 * thread that saw no element is neutral. */
__device__ static float gpu_block_max(float v, float *shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned stride = GPU_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            float o = shared[threadIdx.x + stride];
            shared[threadIdx.x] = o > shared[threadIdx.x] ? o : shared[threadIdx.x];
        }
        __syncthreads();
    }
    float m = shared[0];
    __syncthreads();
    return m;
}

/* This thread's max over its elements of a row. */
__device__ static float gpu_thread_max(const float *v, long n)
{
    float m = -INFINITY;
    GPU_FOR_COLS(j, n)
        m = v[j] > m ? v[j] : m;
    return m;
}

/* The first index of the row's maximum, to every thread: the CPU's argmax
 * (the lowest index among equal maxima). INT_MAX marks a thread without an
 * element. */
__device__ static int gpu_block_argmax(const float *v, int n, float *sv, int *si)
{
    float best = -INFINITY;
    int at = INT_MAX;
    GPU_FOR_COLS(j, n)
        if (at == INT_MAX || v[j] > best) {
            best = v[j];
            at = (int)j;
        }
    sv[threadIdx.x] = best;
    si[threadIdx.x] = at;
    __syncthreads();
    for (unsigned stride = GPU_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            float ov = sv[threadIdx.x + stride], mv = sv[threadIdx.x];
            int oi = si[threadIdx.x + stride], mi = si[threadIdx.x];
            bool take = oi != INT_MAX &&
                        (mi == INT_MAX || ov > mv || (ov == mv && oi < mi));
            if (take) {
                sv[threadIdx.x] = ov;
                si[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    int result = si[0];
    __syncthreads();
    return result;
}

/* out[k] = the sum of partials[k * GPU_LOSS_BLOCKS + b] over b < blocks,
 * for k < count: the batch sums from the per-block partials, one block in
 * a fixed order. */
__global__ static void k_sum_partials(int blocks, int count, const double *partials,
                                      double *out)
{
    __shared__ double shared[GPU_THREADS];
    for (int k = 0; k < count; k++) {
        double v = 0.0;
        for (int b = threadIdx.x; b < blocks; b += GPU_THREADS)
            v += partials[(long)k * GPU_LOSS_BLOCKS + b];
        double total = gpu_block_sum(v, shared);
        if (threadIdx.x == 0)
            out[k] = total;
    }
}

/* Queues the second pass after a loss or metric kernel of `blocks` blocks. */
static cudaError_t gpu_finish_sums(cudaStream_t s, unsigned blocks, int count,
                                   const double *partials, double *out)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    k_sum_partials<<<1, GPU_THREADS, 0, s>>>((int)blocks, count, partials, out);
    return cudaGetLastError();
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

/* ---- activations ------------------------------------------------------ */

__global__ static void k_act_forward(int act, long n, const float *x, float *y)
{
    GPU_FOR(i, n)
        y[i] = gpu_act_forward_at(act, x[i]);
}

extern "C" cudaError_t gpu_k_act_forward(cudaStream_t s, int act, long n, const float *x,
                                         float *y)
{
    if (n > 0)
        k_act_forward<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(act, n, x, y);
    return cudaGetLastError();
}

__global__ static void k_act_backward(int act, long n, const float *y, const float *dy,
                                      float *dx, bool accumulate)
{
    GPU_FOR(i, n) {
        float g = gpu_act_backward_at(act, y[i], dy[i]);
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

extern "C" cudaError_t gpu_k_act_backward(cudaStream_t s, int act, long n, const float *y,
                                          const float *dy, float *dx, bool accumulate)
{
    if (n > 0)
        k_act_backward<<<gpu_blocks(n), GPU_THREADS, 0, s>>>(act, n, y, dy, dx, accumulate);
    return cudaGetLastError();
}

/* ---- softmax (one block per row) --------------------------------------- */

/* gpu_softmax_row (gpu_math.h) is this kernel's host mirror: same
 * per-thread strides and tree. In place works: every thread has read the
 * whole row for the max before any writes, and afterwards each thread
 * reads and writes only its own elements. */
__global__ static void k_softmax_forward(long rows, long cols, const float *x, float *y)
{
    __shared__ double dsh[GPU_THREADS];
    __shared__ float fsh[GPU_THREADS];
    GPU_FOR_ROWS(r, rows) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = gpu_block_max(gpu_thread_max(xr, cols), fsh);
        double part = 0.0;
        GPU_FOR_COLS(j, cols) {
            float e = expf(xr[j] - mx);
            yr[j] = e;
            part += e;
        }
        float inv = (float)(1.0 / gpu_block_sum(part, dsh));
        GPU_FOR_COLS(j, cols)
            yr[j] *= inv;
    }
}

extern "C" cudaError_t gpu_k_softmax_forward(cudaStream_t s, long rows, long cols,
                                             const float *x, float *y)
{
    if (rows > 0 && cols > 0)
        k_softmax_forward<<<gpu_row_blocks(rows, GPU_MAX_BLOCKS), GPU_THREADS, 0, s>>>(
            rows, cols, x, y);
    return cudaGetLastError();
}

/* Mirrored by gpu_softmax_row_backward; dx == dy works when not
 * accumulating, as the dot product is complete before any write. */
__global__ static void k_softmax_backward(long rows, long cols, const float *y,
                                          const float *dy, float *dx, bool accumulate)
{
    __shared__ double dsh[GPU_THREADS];
    GPU_FOR_ROWS(r, rows) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        double part = 0.0;
        GPU_FOR_COLS(j, cols)
            part += (double)dyr[j] * yr[j];
        float dot = (float)gpu_block_sum(part, dsh);
        GPU_FOR_COLS(j, cols) {
            float g = yr[j] * (dyr[j] - dot);
            dxr[j] = accumulate ? dxr[j] + g : g;
        }
    }
}

extern "C" cudaError_t gpu_k_softmax_backward(cudaStream_t s, long rows, long cols,
                                              const float *y, const float *dy, float *dx,
                                              bool accumulate)
{
    if (rows > 0 && cols > 0)
        k_softmax_backward<<<gpu_row_blocks(rows, GPU_MAX_BLOCKS), GPU_THREADS, 0, s>>>(
            rows, cols, y, dy, dx, accumulate);
    return cudaGetLastError();
}

/* ---- batch normalisation, one value per channel ------------------------ */

__global__ static void k_bn_single(int c, float momentum, float epsilon, const float *x,
                                   const float *gamma, const float *beta, float *running_mean,
                                   float *running_var, float *save_mean, float *save_invstd,
                                   float *y)
{
    GPU_FOR(i, c)
        gpu_bn_single_at(i, momentum, epsilon, x, gamma, beta, running_mean, running_var,
                         save_mean, save_invstd, y);
}

extern "C" cudaError_t gpu_k_bn_single(cudaStream_t s, int c, float momentum, float epsilon,
                                       const float *x, const float *gamma, const float *beta,
                                       float *running_mean, float *running_var,
                                       float *save_mean, float *save_invstd, float *y)
{
    if (c > 0)
        k_bn_single<<<gpu_blocks(c), GPU_THREADS, 0, s>>>(c, momentum, epsilon, x, gamma,
                                                          beta, running_mean, running_var,
                                                          save_mean, save_invstd, y);
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

/* One block per row, up to GPU_LOSS_BLOCKS blocks; each block adds its
 * rows' losses in row order into partials[blockIdx.x], and
 * k_sum_partials adds those. The row's operations are the CPU reference's
 * (cpu/cpu_loss.c, xent_rows) with its loops split over the block:
 * test_gpu_vs_cpu checks this kernel against it; change both together. */
__global__ static void k_softmax_xent(int batch, int n, const float *logits,
                                      const float *targets, float *probs, float *dlogits,
                                      double *partials)
{
    __shared__ double dsh[GPU_THREADS];
    __shared__ float fsh[GPU_THREADS];
    float inv_batch = 1.0f / (float)batch;
    double block_total = 0.0;
    GPU_FOR_ROWS(r, batch) {
        const float *z = logits + r * n;
        const float *t = targets + r * n;
        float *p = probs + r * n;
        float *d = dlogits + r * n;
        float mx = gpu_block_max(gpu_thread_max(z, n), fsh);
        double se = 0.0;
        GPU_FOR_COLS(j, n)
            se += exp((double)z[j] - mx);
        double log_sum = log(gpu_block_sum(se, dsh));
        double loss = 0.0;
        GPU_FOR_COLS(j, n) {
            double logp = (double)z[j] - mx - log_sum;
            float pj = (float)exp(logp);
            p[j] = pj;
            loss -= (double)t[j] * logp;
            d[j] = (pj - t[j]) * inv_batch;
        }
        block_total += gpu_block_sum(loss, dsh);
    }
    if (threadIdx.x == 0)
        partials[blockIdx.x] = block_total;
}

extern "C" cudaError_t gpu_k_softmax_xent(cudaStream_t s, int batch, int n,
                                          const float *logits, const float *targets,
                                          float *probs, float *dlogits, double *partials,
                                          double *sum)
{
    unsigned blocks = gpu_row_blocks(batch, GPU_LOSS_BLOCKS);
    k_softmax_xent<<<blocks, GPU_THREADS, 0, s>>>(batch, n, logits, targets, probs, dlogits,
                                                  partials);
    return gpu_finish_sums(s, blocks, 1, partials, sum);
}

/* The element-wise losses walk the (batch, n) elements with a grid-stride
 * loop over at most GPU_LOSS_BLOCKS blocks, each block's sum going to
 * partials[blockIdx.x]. */
static unsigned gpu_loss_blocks(int batch, int n)
{
    long b = gpu_blocks((long)batch * n);
    return (unsigned)(b < GPU_LOSS_BLOCKS ? b : GPU_LOSS_BLOCKS);
}

#define GPU_BCE_EPS 1e-7f

__global__ static void k_binary_xent(int batch, int n, const float *p, const float *targets,
                                     float *dp, double *partials)
{
    __shared__ double shared[GPU_THREADS];
    float scale = 1.0f / ((float)n * (float)batch);
    double total = 0.0;
    GPU_FOR(i, (long)batch * n) {
        float pc = fminf(fmaxf(p[i], GPU_BCE_EPS), 1.0f - GPU_BCE_EPS);
        float t = targets[i];
        total -= (t * log((double)pc) + (1.0 - t) * log(1.0 - (double)pc)) / n;
        dp[i] = (pc - t) / (pc * (1.0f - pc)) * scale;
    }
    total = gpu_block_sum(total, shared);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = total;
}

extern "C" cudaError_t gpu_k_binary_xent(cudaStream_t s, int batch, int n, const float *p,
                                         const float *targets, float *dp, double *partials,
                                         double *sum)
{
    unsigned blocks = gpu_loss_blocks(batch, n);
    k_binary_xent<<<blocks, GPU_THREADS, 0, s>>>(batch, n, p, targets, dp, partials);
    return gpu_finish_sums(s, blocks, 1, partials, sum);
}

/* The same walk as k_binary_xent: each loss keeps a kernel of its own, as
 * each has a function of its own in the CPU backend, so the two read side
 * by side with their references. */
__global__ static void k_mse(int batch, int n, const float *y, const float *targets,
                             float *dy, double *partials)
{
    __shared__ double shared[GPU_THREADS];
    float scale = 2.0f / ((float)n * (float)batch);
    double total = 0.0;
    GPU_FOR(i, (long)batch * n) {
        float e = y[i] - targets[i];
        total += (double)e * e / n;
        dy[i] = e * scale;
    }
    total = gpu_block_sum(total, shared);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = total;
}

extern "C" cudaError_t gpu_k_mse(cudaStream_t s, int batch, int n, const float *y,
                                 const float *targets, float *dy, double *partials,
                                 double *sum)
{
    unsigned blocks = gpu_loss_blocks(batch, n);
    k_mse<<<blocks, GPU_THREADS, 0, s>>>(batch, n, y, targets, dy, partials);
    return gpu_finish_sums(s, blocks, 1, partials, sum);
}

/* One block per row as k_softmax_xent; the three sums go to
 * partials[k * GPU_LOSS_BLOCKS + blockIdx.x], k = correct, sq, abs. */
__global__ static void k_metrics(int batch, int n, const float *y, const float *targets,
                                 double *partials)
{
    __shared__ double dsh[GPU_THREADS];
    __shared__ float fsh[GPU_THREADS];
    __shared__ int ish[GPU_THREADS];
    double correct = 0.0, sq = 0.0, ab = 0.0;
    GPU_FOR_ROWS(r, batch) {
        const float *yr = y + r * n;
        const float *tr = targets + r * n;
        int ay = gpu_block_argmax(yr, n, fsh, ish);
        int at = gpu_block_argmax(tr, n, fsh, ish);
        if (ay == at)
            correct += 1.0;
        double rsq = 0.0, rab = 0.0;
        GPU_FOR_COLS(j, n) {
            double e = (double)yr[j] - tr[j];
            rsq += e * e;
            rab += fabs(e);
        }
        sq += gpu_block_sum(rsq, dsh);
        ab += gpu_block_sum(rab, dsh);
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = correct;
        partials[GPU_LOSS_BLOCKS + blockIdx.x] = sq;
        partials[2 * GPU_LOSS_BLOCKS + blockIdx.x] = ab;
    }
}

extern "C" cudaError_t gpu_k_metrics(cudaStream_t s, int batch, int n, const float *y,
                                     const float *targets, double *partials, double *sums)
{
    unsigned blocks = gpu_row_blocks(batch, GPU_LOSS_BLOCKS);
    k_metrics<<<blocks, GPU_THREADS, 0, s>>>(batch, n, y, targets, partials);
    return gpu_finish_sums(s, blocks, 3, partials, sums);
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
