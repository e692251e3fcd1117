/* cpu_im2col.c — im2col and col2im of one sample (cpu_im2col.h). */
#include "cpu/cpu_im2col.h"

#include <string.h>

void cpu_im2col_range(int ow, int stride, int off, int w, int *lo, int *hi)
{
    int a = off < 0 ? (-off + stride - 1) / stride : 0;
    int b = w - off <= 0 ? 0 : (w - off + stride - 1) / stride;
    *lo = a < ow ? a : ow;
    *hi = b < ow ? b : ow;
    if (*hi < *lo)
        *hi = *lo;
}

void cpu_im2col(const conv2d_desc *d, const float *x, float *col, long ld)
{
    for (int c = 0; c < d->c; c++) {
        const float *xc = x + (long)c * d->h * d->w;
        for (int ki = 0; ki < d->kh; ki++) {
            for (int kj = 0; kj < d->kw; kj++) {
                float *row = col + ((long)(c * d->kh + ki) * d->kw + kj) * ld;
                int off = -d->pad_left + kj * d->dil_w, lo, hi;
                cpu_im2col_range(d->ow, d->stride_w, off, d->w, &lo, &hi);
                for (int oy = 0; oy < d->oh; oy++) {
                    int iy = oy * d->stride_h - d->pad_top + ki * d->dil_h;
                    float *dst = row + (long)oy * d->ow;
                    if (iy < 0 || iy >= d->h) {
                        memset(dst, 0, (size_t)d->ow * sizeof *dst);
                        continue;
                    }
                    const float *src = xc + (long)iy * d->w + off;
                    for (int ox = 0; ox < lo; ox++)
                        dst[ox] = 0.0f;
                    if (d->stride_w == 1)
                        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *dst);
                    else
                        for (int ox = lo; ox < hi; ox++)
                            dst[ox] = src[(long)ox * d->stride_w];
                    for (int ox = hi; ox < d->ow; ox++)
                        dst[ox] = 0.0f;
                }
            }
        }
    }
}

void cpu_col2im(const conv2d_desc *d, const float *col, long ld, float *dx)
{
    for (int c = 0; c < d->c; c++) {
        float *xc = dx + (long)c * d->h * d->w;
        for (int ki = 0; ki < d->kh; ki++) {
            for (int kj = 0; kj < d->kw; kj++) {
                const float *row = col + ((long)(c * d->kh + ki) * d->kw + kj) * ld;
                int off = -d->pad_left + kj * d->dil_w, lo, hi;
                cpu_im2col_range(d->ow, d->stride_w, off, d->w, &lo, &hi);
                for (int oy = 0; oy < d->oh; oy++) {
                    int iy = oy * d->stride_h - d->pad_top + ki * d->dil_h;
                    if (iy < 0 || iy >= d->h)
                        continue;
                    const float *src = row + (long)oy * d->ow;
                    float *dst = xc + (long)iy * d->w + off;
                    if (d->stride_w == 1) /* its own loop, so it vectorises */
                        for (int ox = lo; ox < hi; ox++)
                            dst[ox] += src[ox];
                    else
                        for (int ox = lo; ox < hi; ox++)
                            dst[(long)ox * d->stride_w] += src[ox];
                }
            }
        }
    }
}
