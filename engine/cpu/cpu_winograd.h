/* cpu_winograd.h — Winograd F(2x2, 5x5) convolution for stride-1 5x5
 * layers with enough channels (convnet's 32->64 at 14x14), where im2col +
 * GEMM spends 100 multiplies per 4 outputs and this spends 36. cpu_conv.c
 * picks it per layer at prepare time (cpu_conv.h).
 *
 * Forward, input gradient and weight gradient all run as 36 GEMMs (one
 * per transform point) over a chunk of samples, so the GEMMs stay large
 * enough for OpenBLAS's speed. The gradients are the transposed algorithm:
 * the output gradient's 2x2 tiles are transformed once, and give the input
 * gradient's overlapping 6x6 tiles (with the transposed weights) and the
 * weight gradient, F(5x5, 2x2) on the forward's input tiles summed over
 * tiles in the transform domain.
 *
 * Numerics: about a digit below im2col (relative error ~1e-5..1e-4 of the
 * largest output), from the transforms' rounding; results depend only on
 * the inputs and the thread count. */
#ifndef PUNCH_CPU_WINOGRAD_H
#define PUNCH_CPU_WINOGRAD_H

#include <stdbool.h>

#include "cpu/cpu_backend.h"

/* Fewer input or output channels than this leave the transform-point GEMMs
 * too thin to win over one im2col GEMM. */
#define CPU_WINOGRAD_MIN_CHANNELS 16

/* Whether d can run here: 5x5, stride 1, no dilation, padding of at most
 * 4 at the top and left. */
bool cpu_winograd_can(const conv2d_desc *d);

/* Whether it should: it can, with >= CPU_WINOGRAD_MIN_CHANNELS in and out. */
bool cpu_winograd_suits(const conv2d_desc *d);

/* Scratch floats one thread needs for forward and backward. */
long cpu_winograd_thread_scratch(const conv2d_desc *d);

/* Floats of the transformed weights shared by all threads: 36 * k * c. */
long cpu_winograd_weight_size(const conv2d_desc *d);

/* The transformed weights u (36, k, c) of filters [begin, end) of the
 * k * c filters in w (k, c, 5, 5). */
void cpu_winograd_weights(const conv2d_desc *d,
                          const float *w,   /* (k, c, 5, 5) */
                          long begin, long end,
                          float *u);        /* (36, k, c) */

/* y = act(conv(x, w) + bias) for n samples. */
void cpu_winograd_forward(const conv2d_desc *d, int n,
                          const float *x,    /* (n, c, h, w) */
                          const float *u,    /* (36, k, c) */
                          const float *bias, /* (k) or NULL */
                          spec_activation act,
                          float *y,          /* (n, k, oh, ow) */
                          float *scratch);   /* cpu_winograd_thread_scratch(d) */

/* For n samples: dw = the sum of their weight gradients (overwritten), db
 * likewise when not NULL, and dx (+)= their input gradients when dx is not
 * NULL (u: the weights' transform, needed only for dx). */
void cpu_winograd_backward(const conv2d_desc *d, int n,
                           const float *x,     /* (n, c, h, w) */
                           const float *u,     /* (36, k, c) */
                           const float *dz,    /* (n, k, oh, ow) */
                           float *dx,          /* (n, c, h, w) or NULL */
                           bool accumulate,
                           float *dw,          /* (k, c, 5, 5) */
                           float *db,          /* (k) or NULL */
                           float *scratch);    /* cpu_winograd_thread_scratch(d) */

#endif
