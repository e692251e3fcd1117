/* cpu_conv_folded.h — im2col + GEMM with the batch folded into the GEMM's
 * columns, for layers whose output plane is small (VGG's 4x4 and 2x2
 * layers on CIFAR): one GEMM per sample there is a k x oh*ow product
 * (512 x 16 by 16 x 4608 for a weight gradient) far below the sgemm's
 * peak, so a thread's samples are taken g at a time, their columns side
 * by side (c*kh*kw, g*oh*ow), and forward, weight and data gradients each
 * run one GEMM per group. The group size is fixed at prepare from the
 * largest batch and the thread count and bounded (cpu_conv_folded_group),
 * so the workspace is preallocated and results do not depend on the
 * batch. Same calling convention as cpu_conv_direct.h, except that
 * forward too takes n samples. */
#ifndef PUNCH_CPU_CONV_FOLDED_H
#define PUNCH_CPU_CONV_FOLDED_H

#include <stdbool.h>

#include "cpu/cpu_backend.h"

/* Whether d's output plane is small enough for folding to pay. */
bool cpu_conv_folded_suits(const conv2d_desc *d);

/* Samples per GEMM for d split across `threads` threads (>= 1). */
int cpu_conv_folded_group(const conv2d_desc *d, int threads);

/* Floats of scratch one thread needs. */
long cpu_conv_folded_scratch(const conv2d_desc *d, int threads);

/* y = act(conv(x, w) + bias) for n samples. */
void cpu_conv_folded_forward(const conv2d_desc *d, int threads, int n,
                             const float *x,    /* (n, c, h, w) */
                             const float *w,    /* (k, c, kh, kw) */
                             const float *bias, /* (k) or NULL */
                             spec_activation act,
                             float *y,          /* (n, k, oh, ow) */
                             float *scratch);
/* For n samples: dw = sum of their weight gradients (overwritten), db
 * likewise, and dx (+)= each sample's input gradient when dx is not NULL. */
void cpu_conv_folded_backward(const conv2d_desc *d, int threads, int n,
                              const float *x,  /* (n, c, h, w) */
                              const float *w,  /* (k, c, kh, kw) */
                              const float *dz, /* (n, k, oh, ow) */
                              float *dx,       /* (n, c, h, w) or NULL */
                              bool accumulate,
                              float *dw,       /* (k, c, kh, kw) */
                              float *db,       /* (k) */
                              float *scratch);

#endif
