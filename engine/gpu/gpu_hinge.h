/* gpu_hinge.h — the CUDA kernel of backend.h's categorical_hinge
 * (gpu_hinge.cu), kept apart from gpu_kernels.cu's other losses. A
 * C-callable launcher like those of gpu_kernels.h: it queues its kernel on
 * `s` and returns cudaGetLastError(), which the caller checks with
 * GPU_MUST. */
#ifndef PUNCH_GPU_HINGE_H
#define PUNCH_GPU_HINGE_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-row loss and gradient as in backend.h; the batch sum of the loss to
 * sum[0] in device memory, reduced in a fixed order (deterministic). */
cudaError_t gpu_k_categorical_hinge(cudaStream_t s, int batch, int n,
                                    const float *y,       /* (batch, n) */
                                    const float *targets, /* (batch, n) */
                                    float *dy,            /* (batch, n) out */
                                    double *sum);         /* (1) out */

#ifdef __cplusplus
}
#endif

#endif
