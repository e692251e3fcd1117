/* gpu_backend.h — internals shared by the CUDA backend's files
 * (gpu_backend.c, gpu_activation.c, gpu_conv.c, gpu_pool.c,
 * gpu_batchnorm.c, gpu_nccl.c, gpu_optim.c). Not a public API: layers see
 * backend.h, the engine sees gpu.h.
 *
 * Every op is queued on one stream per backend; cuBLAS and cuDNN are bound
 * to it, so the order of calls is the order of execution and only
 * download, synchronize and the host-value functions wait. */
#ifndef PUNCH_GPU_BACKEND_H
#define PUNCH_GPU_BACKEND_H

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

/* ---- activations (gpu_activation.c) ---------------------------------- */
void gpu_activation_forward(backend *be, spec_activation act, long rows, long cols,
                            const float *x, float *y);
void gpu_activation_backward(backend *be, spec_activation act, long rows, long cols,
                             const float *y, const float *dy, float *dx, bool accumulate);

/* ---- conv2d (gpu_conv.c) ----------------------------------------------- */
/* These and the pooling ops below are backend.h's; their signatures are the
 * seam's, so they repeat cpu/cpu_backend.h's line for line by design. */
long gpu_conv2d_prepare(backend *be, conv2d_desc *d);
void gpu_conv2d_release(backend *be, conv2d_desc *d);
void gpu_conv2d_forward(backend *be, const conv2d_desc *d, int batch, const float *x,
                        const float *w, const float *bias, spec_activation act, float *y,
                        float *workspace);
void gpu_conv2d_backward(backend *be, const conv2d_desc *d, int batch, const float *x,
                         const float *w, const float *dz, float *dx, bool accumulate,
                         float *dw, float *db, float *workspace);

/* ---- pooling (gpu_pool.c) ---------------------------------------------- */
long gpu_pool2d_prepare(backend *be, pool2d_desc *d);
void gpu_pool2d_release(backend *be, pool2d_desc *d);
void gpu_pool2d_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                        float *y);
void gpu_pool2d_backward(backend *be, const pool2d_desc *d, int batch, const float *x,
                         const float *y, const float *dy, float *dx, bool accumulate);

/* ---- batch normalisation (gpu_batchnorm.c) ----------------------------- */
long gpu_batchnorm_prepare(backend *be, batchnorm_desc *d);
void gpu_batchnorm_release(backend *be, batchnorm_desc *d);
void gpu_batchnorm_forward_train(backend *be, const batchnorm_desc *d, int batch,
                                 const float *x, const float *gamma, const float *beta,
                                 float *running_mean, float *running_var, float *save_mean,
                                 float *save_invstd, float *y, float *workspace);
void gpu_batchnorm_forward_eval(backend *be, const batchnorm_desc *d, int batch,
                                const float *x, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var,
                                float *y);
void gpu_batchnorm_backward(backend *be, const batchnorm_desc *d, int batch, const float *x,
                            const float *dy, const float *gamma, const float *save_mean,
                            const float *save_invstd, float *dx, bool accumulate,
                            float *dgamma, float *dbeta, float *workspace);

#endif
