/* cpu_im2col.h — the unrolling of an image's receptive fields into GEMM
 * columns and back, shared by the im2col, folded and grouped convolutions
 * (cpu_conv.c, cpu_conv_folded.c, cpu_conv_grouped.c), which therefore
 * depend on this file rather than on each other. */
#ifndef PUNCH_CPU_IM2COL_H
#define PUNCH_CPU_IM2COL_H

#include "backend/backend.h"

/* The outputs ox in [*lo, *hi) whose input column ox*stride + off falls
 * inside [0, w); the others read padding. */
void cpu_im2col_range(int ow, int stride, int off, int w, int *lo, int *hi);

/* col (c*kh*kw rows of ld floats; the first oh*ow of each written) from
 * one sample x (c, h, w). */
void cpu_im2col(const conv2d_desc *d, const float *x, float *col, long ld);

/* dx (c, h, w) += col (c*kh*kw rows of ld floats, the first oh*ow of each
 * read) scattered back. */
void cpu_col2im(const conv2d_desc *d, const float *col, long ld, float *dx);

#endif
