/* gpu_kernels.h — the CUDA backend's own kernels (gpu_kernels.cu), for
 * what cuBLAS and cuDNN do not cover: bias, column sums, activations,
 * softmax, batchnorm of single values, dropout, padding, strided adds
 * (concat), pooling with asymmetric padding, the fused losses and metrics,
 * and the optimizer step. C-callable launchers: each queues
 * its kernel on `s` and returns cudaGetLastError(), which the caller checks
 * with GPU_MUST like any other call. Shapes as in backend.h. */
#ifndef PUNCH_GPU_KERNELS_H
#define PUNCH_GPU_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "gpu/gpu_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] += bias[(i / inner) % channels] for i < n: dense (inner 1) and
 * NCHW convolution (inner = oh * ow). */
cudaError_t gpu_k_add_bias(cudaStream_t s, long n, int channels, long inner,
                           const float *bias, /* (channels) */
                           float *y);
/* out[j] = sum over r of x[r * cols + j], rows summed in order. */
cudaError_t gpu_k_col_sum(cudaStream_t s, int rows, int cols,
                          const float *x, /* (rows, cols) */
                          float *out);    /* (cols) */
/* dst[r * dst_stride + j] (+)= src[r * src_stride + j], j < width. */
cudaError_t gpu_k_copy2d(cudaStream_t s, long rows, long width, const float *src,
                         long src_stride, float *dst, long dst_stride, bool accumulate);

/* y = act(x) and dx (+)= dy * act'(.) from y for act a gpu_act_kind, n
 * elements (gpu_math.h); x == y, and dx == dy when !accumulate, allowed. */
cudaError_t gpu_k_act_forward(cudaStream_t s, int act, long n, const float *x, float *y);
cudaError_t gpu_k_act_backward(cudaStream_t s, int act, long n, const float *y,
                               const float *dy, float *dx, bool accumulate);

/* Batchnorm training forward when batch x spatial == 1: per channel
 * gpu_bn_single_at (gpu_math.h); arguments as backend.h's. */
cudaError_t gpu_k_bn_single(cudaStream_t s, int c, float momentum, float epsilon,
                            const float *x, const float *gamma, const float *beta,
                            float *running_mean, float *running_var, float *save_mean,
                            float *save_invstd, float *y);

/* Softmax per row of a (rows, cols) view, and its backward pass
 * (gpu_math.h); x == y and dy == dx (when !accumulate) allowed. */
cudaError_t gpu_k_softmax_forward(cudaStream_t s, long rows, long cols, const float *x,
                                  float *y);
cudaError_t gpu_k_softmax_backward(cudaStream_t s, long rows, long cols, const float *y,
                                   const float *dy, float *dx, bool accumulate);

cudaError_t gpu_k_dropout_forward(cudaStream_t s, long n, float rate, uint64_t seed,
                                  const float *x, float *mask, float *y);
cudaError_t gpu_k_dropout_backward(cudaStream_t s, long n, const float *mask,
                                   const float *dy, float *dx, bool accumulate);

/* Zero padding of `planes` (h, w) images into (hp, wp) ones with the image
 * at (top, left); and its adjoint: dx (+)= the (h, w) window of dxp. */
cudaError_t gpu_k_pad(cudaStream_t s, long planes, int h, int w, int top, int left, int hp,
                      int wp, const float *x, float *xp);
cudaError_t gpu_k_crop(cudaStream_t s, long planes, int h, int w, int top, int left, int hp,
                       int wp, const float *dxp, float *dx, bool accumulate);

/* Pooling with the semantics of backend.h for any padding (gpu_math.h). */
cudaError_t gpu_k_pool_forward(cudaStream_t s, gpu_pool_geom g, int batch, const float *x,
                               float *y);
cudaError_t gpu_k_pool_backward(cudaStream_t s, gpu_pool_geom g, int batch, const float *x,
                                const float *y, const float *dy, float *dx, bool accumulate);

/* Losses and metrics: per-element work as in backend.h; the batch sum
 * goes to sum[0] (metrics: sum[0..2] = correct, sq_err, abs_err) in
 * device memory. Two kernels each: blocks reduce rows (or shares of the
 * elements) into `partials`, device scratch of GPU_LOSS_SCRATCH doubles,
 * and one block adds those, both in a fixed order, so the result is the
 * same bits on every call with the same inputs. */
#define GPU_LOSS_BLOCKS 1024
#define GPU_LOSS_SCRATCH (3 * GPU_LOSS_BLOCKS)
cudaError_t gpu_k_softmax_xent(cudaStream_t s, int batch, int n, const float *logits,
                               const float *targets, float *probs, float *dlogits,
                               double *partials, double *sum);
cudaError_t gpu_k_binary_xent(cudaStream_t s, int batch, int n, const float *p,
                              const float *targets, float *dp, double *partials, double *sum);
cudaError_t gpu_k_mse(cudaStream_t s, int batch, int n, const float *y, const float *targets,
                      float *dy, double *partials, double *sum);
cudaError_t gpu_k_metrics(cudaStream_t s, int batch, int n, const float *y,
                          const float *targets, double *partials, double *sums);

/* One optimizer step over n parameters (gpu_math.h's gpu_optim_update). */
cudaError_t gpu_k_optim_step(cudaStream_t s, gpu_optim_coeffs k, long n, float *params,
                             const float *grads, float *s0, float *s1);

#ifdef __cplusplus
}
#endif

#endif
