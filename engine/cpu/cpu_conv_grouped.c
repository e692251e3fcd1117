/* cpu_conv_grouped.c — grouped and depthwise convolution computed
 * directly (see cpu_conv_grouped.h for why not im2col). For each output
 * channel, input channel of its group and kernel tap, one multiply-add
 * pass over the output rows whose input row is inside the image; within a
 * row, the columns that read padding are cut off first (cpu_im2col_range),
 * so the inner loop has no branch and vectorises at stride 1. */
#include "cpu/cpu_conv_grouped.h"
#include "cpu/cpu_conv.h"
#include "cpu/cpu_im2col.h"

#include <string.h>

/* Where tap (ki, kj) of a conv reads: the input row of output row oy
 * (outside [0, h) when it reads padding) and the input column offset of
 * output column 0, with the output columns [lo, hi) that read inside. */
typedef struct conv_tap {
    int row0, off, lo, hi;
} conv_tap;

static conv_tap grouped_tap(const conv2d_desc *d, int ki, int kj)
{
    conv_tap t = {.row0 = -d->pad_top + ki * d->dil_h, .off = -d->pad_left + kj * d->dil_w};
    cpu_im2col_range(d->ow, d->stride_w, t.off, d->w, &t.lo, &t.hi);
    return t;
}

void cpu_conv_grouped_forward(const conv2d_desc *d, const float *x, const float *w,
                              const float *bias, spec_activation act, float *y)
{
    int cg = d->c / d->groups, kg = d->k / d->groups, sw = d->stride_w;
    long ohw = (long)d->oh * d->ow, plane = (long)d->h * d->w;
    for (int o = 0; o < d->k; o++) {
        float *yo = y + o * ohw;
        float b0 = bias ? bias[o] : 0.0f;
        for (long i = 0; i < ohw; i++)
            yo[i] = b0;
        const float *xg = x + (long)(o / kg) * cg * plane;
        for (int ci = 0; ci < cg; ci++) {
            const float *xc = xg + ci * plane;
            const float *wo = w + ((long)o * cg + ci) * d->kh * d->kw;
            for (int ki = 0; ki < d->kh; ki++) {
                for (int kj = 0; kj < d->kw; kj++) {
                    conv_tap t = grouped_tap(d, ki, kj);
                    float wv = wo[ki * d->kw + kj];
                    for (int oy = 0; oy < d->oh; oy++) {
                        int iy = oy * d->stride_h + t.row0;
                        if (iy < 0 || iy >= d->h)
                            continue;
                        const float *src = xc + (long)iy * d->w + t.off;
                        float *dst = yo + (long)oy * d->ow;
                        if (sw == 1) /* its own loop, so it vectorises */
                            for (int ox = t.lo; ox < t.hi; ox++)
                                dst[ox] += wv * src[ox];
                        else
                            for (int ox = t.lo; ox < t.hi; ox++)
                                dst[ox] += wv * src[(long)ox * sw];
                    }
                }
            }
        }
        cpu_activate(act, yo, ohw);
    }
}

/* One tap of one (output, input) channel pair of one sample: returns its
 * weight-gradient term and adds the tap's input gradient to dxc. */
static float grouped_tap_backward(const conv2d_desc *d, const conv_tap *t, const float *xc,
                                  const float *dzo, float wv, float *dxc)
{
    int sw = d->stride_w;
    float acc = 0.0f;
    for (int oy = 0; oy < d->oh; oy++) {
        int iy = oy * d->stride_h + t->row0;
        if (iy < 0 || iy >= d->h)
            continue;
        const float *src = xc + (long)iy * d->w + t->off;
        const float *g = dzo + (long)oy * d->ow;
        for (int ox = t->lo; ox < t->hi; ox++)
            acc += g[ox] * src[(long)ox * sw];
        if (!dxc)
            continue;
        float *dst = dxc + (long)iy * d->w + t->off;
        for (int ox = t->lo; ox < t->hi; ox++)
            dst[(long)ox * sw] += wv * g[ox];
    }
    return acc;
}

void cpu_conv_grouped_backward(const conv2d_desc *d, int n, const float *x, const float *w,
                               const float *dz, float *dx, bool accumulate, float *dw,
                               float *db)
{
    int cg = d->c / d->groups, kg = d->k / d->groups, kk = d->kh * d->kw;
    long ohw = (long)d->oh * d->ow, plane = (long)d->h * d->w, xsize = (long)d->c * plane;
    memset(dw, 0, (size_t)d->k * cg * kk * sizeof *dw);
    if (db)
        memset(db, 0, (size_t)d->k * sizeof *db);
    for (int b = 0; b < n; b++) {
        const float *xb = x + b * xsize;
        const float *dzb = dz + (long)b * d->k * ohw;
        float *dxb = dx ? dx + b * xsize : NULL;
        if (dxb && !accumulate)
            memset(dxb, 0, (size_t)xsize * sizeof *dxb);
        for (int o = 0; o < d->k; o++) {
            const float *dzo = dzb + o * ohw;
            if (db)
                db[o] += cpu_sum(dzo, ohw);
            long first = (long)(o / kg) * cg;
            for (int ci = 0; ci < cg; ci++) {
                const float *xc = xb + (first + ci) * plane;
                float *dxc = dxb ? dxb + (first + ci) * plane : NULL;
                long wi = ((long)o * cg + ci) * kk;
                for (int ki = 0; ki < d->kh; ki++) {
                    for (int kj = 0; kj < d->kw; kj++) {
                        conv_tap t = grouped_tap(d, ki, kj);
                        long k = wi + ki * d->kw + kj;
                        dw[k] += grouped_tap_backward(d, &t, xc, dzo, w[k], dxc);
                    }
                }
            }
        }
    }
}
