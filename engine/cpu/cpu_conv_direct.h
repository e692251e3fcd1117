/* cpu_conv_direct.h — direct (no im2col) convolution kernels for layers
 * with few channels; cpu_conv.c picks them per layer. One sample (or, for
 * the weight gradient, a run of n samples) per call; the caller splits the
 * batch across threads. */
#ifndef PUNCH_CPU_CONV_DIRECT_H
#define PUNCH_CPU_CONV_DIRECT_H

#include <stdbool.h>

#include "cpu/cpu_backend.h"

/* Above this many (input, output) channel pairs im2col + GEMM wins. */
#define CPU_CONV_DIRECT_MAX_CK 16

/* Whether d runs on the direct kernels: stride 1, c * k small. */
bool cpu_conv_direct_suits(const conv2d_desc *d);

/* Scratch floats one thread needs for the calls below. */
long cpu_conv_direct_scratch(const conv2d_desc *d);

/* y = act(conv(x, w) + bias) for one sample. */
void cpu_conv_direct_forward(const conv2d_desc *d,
                             const float *x,    /* (c, h, w) */
                             const float *w,    /* (k, c, kh, kw) */
                             const float *bias, /* (k) or NULL */
                             spec_activation act,
                             float *y,          /* (k, oh, ow) */
                             float *scratch);   /* cpu_conv_direct_scratch(d) */
/* For n samples: dw = sum of their weight gradients (overwritten), db
 * likewise when not NULL, and dx (+)= each sample's input gradient when
 * dx is not NULL. */
void cpu_conv_direct_backward(const conv2d_desc *d, int n,
                              const float *x,   /* (n, c, h, w) */
                              const float *w,   /* (k, c, kh, kw) */
                              const float *dz,  /* (n, k, oh, ow) */
                              float *dx,        /* (n, c, h, w) or NULL */
                              bool accumulate,
                              float *dw,        /* (k, c, kh, kw) */
                              float *db,        /* (k) or NULL */
                              float *scratch);  /* cpu_conv_direct_scratch(d) */

/* Tests: run the portable kernels even where the AVX-512 ones would run
 * (false restores the automatic choice). Not thread-safe; set it before
 * any convolution runs. */
void cpu_conv_direct_force_portable(bool on);

#endif
