/* gpu_ctx.h — the context every file of the CUDA backend shares (its
 * stream, handles and staging buffers), and the tensor descriptor helper
 * (gpu_ctx.c). It declares nothing gpu_backend.c defines, so the op files
 * depend on it and gpu_backend.c on them, never the other way. Not a
 * public API: layers see backend.h, the engine sees gpu.h.
 *
 * Every op is queued on one stream per backend; cuBLAS and cuDNN are bound
 * to it, so the order of calls is the order of execution and only
 * download, synchronize and the host-value functions wait. */
#ifndef PUNCH_GPU_CTX_H
#define PUNCH_GPU_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "backend/backend.h"
#include "gpu/gpu_check.h"
#include "gpu/gpu_stage.h"

/* Host staging: pageable host memory is copied through two pinned chunks
 * (GPU_STAGE_FLOATS each), so the host fills one while the device copies
 * from the other and the transfers themselves are truly asynchronous;
 * gpu_stage.h says which chunk each copy takes. */

typedef struct gpu_ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    float *stage[2];                     /* pinned, GPU_STAGE_FLOATS each */
    cudaEvent_t stage_done[2];           /* last copy through each chunk */
    gpu_stage_seq stage_seq;             /* the chunk the next copy takes */
    double *dev_sums;                    /* loss/metric sums, device */
    double *dev_partials;                /* their per-block partials (GPU_LOSS_SCRATCH) */
    double *host_sums;                   /* and their pinned landing place */
    char not_reproducible[256];          /* be->not_reproducible once set (gpu_conv.c) */
} gpu_ctx;

static inline gpu_ctx *gpu_ctx_of(backend *be)
{
    return (gpu_ctx *)be->impl;
}

/* Sets the tensor descriptor to NCHW (n, c, h, w) float; false + recorded
 * message when a dimension does not fit cuDNN's int. */
bool gpu_tensor_4d(cudnnTensorDescriptor_t t, long n, long c, long h, long w);

#endif
