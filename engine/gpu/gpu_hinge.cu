/* gpu_hinge.cu — the categorical hinge loss on the GPU; see gpu_hinge.h.
 * One block: thread t takes rows t, t + HINGE_THREADS, ..., each row by
 * backend/hinge.h's hinge_row (the formula cpu/cpu_hinge.c runs, products
 * and sums rounded explicitly so nvcc cannot fuse them into an FMA the CPU
 * does not do); test_gpu_vs_cpu checks the kernel against the CPU on a
 * device. The threads' sums meet in a fixed tree, so the batch sum never
 * depends on scheduling. */
#include "gpu/gpu_hinge.h"
#include "backend/hinge.h"

#define HINGE_THREADS 256

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
