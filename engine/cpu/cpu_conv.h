/* cpu_conv.h — which algorithm the CPU backend runs a convolution with,
 * chosen per layer at prepare time: direct kernels for few channels
 * (cpu_conv_direct.c), Winograd F(2x2, 5x5) for stride-1 5x5 layers with
 * enough channels (cpu_winograd.c), a direct loop for grouped layers
 * (cpu_conv_grouped.c), im2col + GEMM otherwise: one GEMM per sample,
 * or, for small output planes, one per group of samples folded into the
 * GEMM's columns (cpu_conv_folded.c); in builds with oneDNN, oneDNN's
 * own convolution primitives where they are faster (cpu_conv_dnnl.c).
 * Tests force an algorithm to compare them on the same layer. */
#ifndef PUNCH_CPU_CONV_H
#define PUNCH_CPU_CONV_H

#include "cpu/cpu_backend.h"

typedef enum cpu_conv_algo {
    CPU_CONV_IM2COL,
    CPU_CONV_DIRECT,
    CPU_CONV_WINOGRAD,
    CPU_CONV_GROUPED,
    CPU_CONV_FOLDED,
    CPU_CONV_DNNL, /* builds with oneDNN only */
} cpu_conv_algo;

/* The algorithm cpu_conv2d_prepare picks for d. */
cpu_conv_algo cpu_conv_choose(const conv2d_desc *d);

/* Never choose CPU_CONV_DNNL (true) or back to the rule (false).
 * Process-wide; for benchmarks comparing the algorithms in one build; set
 * it before layers are prepared. */
void cpu_conv_dnnl_disable(bool on);

/* cpu_conv2d_prepare with the algorithm forced; -1 when it cannot run d
 * (direct: stride 1 only; Winograd: 5x5, stride 1, no dilation, padding
 * <= 4, any channel count; groups > 1: the grouped loop only, which runs
 * any d; oneDNN: builds with it, groups 1). Sets d->groups to 1 when it
 * is 0. A prepared d must be released before it is prepared again. */
long cpu_conv2d_prepare_algo(backend *be, conv2d_desc *d, cpu_conv_algo algo);

/* The algorithm a prepared d runs with. */
cpu_conv_algo cpu_conv2d_algo(const conv2d_desc *d);

#endif
