/* cpu_conv_grouped.h — grouped convolution (conv2d with groups > 1, whose
 * output channel o sees only the input channels of its group; depthwise
 * when groups = channels, as in MobileNet) computed directly, one kernel
 * tap at a time over whole output rows. im2col + GEMM would make one tiny
 * GEMM per group and sample (a 1 x 9 by 9 x oh*ow product for a depthwise
 * 3x3), where the call costs more than the arithmetic. Same calling
 * convention as cpu_conv_direct.h: one sample forward, n samples
 * backward, the caller splits the batch across threads. */
#ifndef PUNCH_CPU_CONV_GROUPED_H
#define PUNCH_CPU_CONV_GROUPED_H

#include <stdbool.h>

#include "cpu/cpu_backend.h"

/* y = act(conv(x, w) + bias) for one sample. */
void cpu_conv_grouped_forward(const conv2d_desc *d,
                              const float *x,    /* (c, h, w) */
                              const float *w,    /* (k, c / groups, kh, kw) */
                              const float *bias, /* (k) or NULL */
                              spec_activation act,
                              float *y);         /* (k, oh, ow) */
/* For n samples: dw = sum of their weight gradients (overwritten), db
 * likewise when not NULL, and dx (+)= each sample's input gradient when
 * dx is not NULL. */
void cpu_conv_grouped_backward(const conv2d_desc *d, int n,
                               const float *x,  /* (n, c, h, w) */
                               const float *w,  /* (k, c / groups, kh, kw) */
                               const float *dz, /* (n, k, oh, ow) */
                               float *dx,       /* (n, c, h, w) or NULL */
                               bool accumulate,
                               float *dw,       /* (k, c / groups, kh, kw) */
                               float *db);      /* (k) or NULL */

#endif
