/* gpu_hinge.cu — the categorical hinge loss on the GPU; see gpu_hinge.h.
 * One block: thread t takes rows t, t + HINGE_THREADS, ..., each row as
 * cpu/cpu_hinge.c's hinge_row does it (the same operations in the same
 * order, products and sums rounded explicitly so nvcc cannot fuse them
 * into an FMA the CPU does not do); test_gpu_vs_cpu checks the two
 * against each other, so change both together. The threads' sums meet in
 * a fixed tree, so the batch sum never depends on scheduling. */
#include "gpu/gpu_hinge.h"

#define HINGE_THREADS 256

/* One row's loss; its gradient, divided by the batch, to d. */
__device__ static double hinge_row(int n, float inv_batch, const float *y, const float *t,
                                   float *d)
{
    double pos = 0.0;
    for (int j = 0; j < n; j++)
        pos = __dadd_rn(pos, __dmul_rn((double)t[j], (double)y[j]));
    int k = 0;
    float neg = __fmul_rn(1.0f - t[0], y[0]);
    for (int j = 1; j < n; j++) {
        float v = __fmul_rn(1.0f - t[j], y[j]);
        if (v > neg) {
            neg = v;
            k = j;
        }
    }
    double margin = (double)neg - pos + 1.0;
    if (margin <= 0.0) {
        for (int j = 0; j < n; j++)
            d[j] = 0.0f;
        return 0.0;
    }
    for (int j = 0; j < n; j++) {
        float g = (j == k ? 1.0f - t[j] : 0.0f) - t[j];
        d[j] = __fmul_rn(g, inv_batch);
    }
    return margin;
}

__global__ static void k_categorical_hinge(int batch, int n, const float *y,
                                           const float *targets, float *dy, double *sum)
{
    __shared__ double shared[HINGE_THREADS];
    float inv_batch = 1.0f / (float)batch;
    double total = 0.0;
    for (int r = threadIdx.x; r < batch; r += HINGE_THREADS)
        total += hinge_row(n, inv_batch, y + (long)r * n, targets + (long)r * n,
                           dy + (long)r * n);
    shared[threadIdx.x] = total;
    __syncthreads();
    for (unsigned stride = HINGE_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *sum = shared[0];
}

extern "C" cudaError_t gpu_k_categorical_hinge(cudaStream_t s, int batch, int n,
                                               const float *y, const float *targets,
                                               float *dy, double *sum)
{
    k_categorical_hinge<<<1, HINGE_THREADS, 0, s>>>(batch, n, y, targets, dy, sum);
    return cudaGetLastError();
}
