/* cpu_conv_direct.c — direct 2-D convolution for layers with few channels
 * (simplecnn's 1->4 and 4->4), where im2col + GEMM is mostly overhead: a
 * 4 x 784 x 9 GEMM per sample spends its time packing and in edge kernels,
 * and im2col copies 28-float rows.
 *
 * Each sample is first copied into a zero-padded plane per channel, of
 * width wp = w + pad_left + pad_right. In that layout every kernel tap is
 * one flat, long loop: output p = oy * wp + ox reads padded input
 * p + ki*dil_h*wp + kj*dil_w, so y += w_tap * shifted(x) runs over the
 * whole plane at once (the columns ox >= ow are computed and dropped).
 * Backward does the transpose with the gradient in the same layout (its
 * dropped columns zero, so they add nothing). The functions are cloned for
 * AVX-512/AVX2 (CPU_SIMD_CLONES) and picked at load time.
 *
 * Only stride 1 (any padding and dilation). Every output sums its terms in
 * a fixed order; the weight and bias gradients are reduced in 16 lanes
 * (lane j takes positions p = j mod 16, in order) that are added in lane
 * order at the end, so results depend only on the thread count. */
#include "core/cpu_conv_direct.h"

#include <string.h>

#define LANES 16

/* 16 floats as one value: GCC/Clang lower it to the widest vectors the
 * clone targets (one zmm, two ymm, four xmm); aligned(4) and may_alias let
 * it load from any float pointer. */
typedef float lanes_v __attribute__((vector_size(LANES * sizeof(float)), aligned(4), may_alias));

/* Helpers called from the cloned functions: inlined so they get the
 * clone's instruction set. */
#define DIRECT_INLINE static inline __attribute__((always_inline))

typedef struct direct_geom {
    int hp, wp;      /* padded input plane */
    long sx;         /* floats per padded input plane, with slack */
    long sy;         /* floats per output plane in the wp layout */
    long n;          /* positions that hold real outputs: (oh-1)*wp + ow */
} direct_geom;

static long round_lanes(long n)
{
    return (n + LANES - 1) / LANES * LANES;
}

static direct_geom direct_geom_of(const conv2d_desc *d)
{
    direct_geom g;
    g.hp = d->h + d->pad_top + d->pad_bottom;
    g.wp = d->w + d->pad_left + d->pad_right;
    g.sy = round_lanes((long)d->oh * g.wp);
    /* The lane loops read up to sy - 1 + the largest tap offset. */
    g.sx = round_lanes((long)g.hp * g.wp + (long)(d->kw - 1) * d->dil_w + LANES);
    g.n = (long)(d->oh - 1) * g.wp + d->ow;
    return g;
}

bool cpu_conv_direct_suits(const conv2d_desc *d)
{
    return d->stride_h == 1 && d->stride_w == 1 && (long)d->c * d->k <= CPU_CONV_DIRECT_MAX_CK;
}

long cpu_conv_direct_scratch(const conv2d_desc *d)
{
    direct_geom g = direct_geom_of(d);
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    return 2 * d->c * g.sx + d->k * g.sy + (wsize + d->k) * LANES;
}

/* xpad (c, sx) = x (c, h, w) inside zero padding. */
DIRECT_INLINE void direct_pad_input(const conv2d_desc *d, const direct_geom *g, const float *x,
                             float *xpad)
{
    memset(xpad, 0, (size_t)(d->c * g->sx) * sizeof *xpad);
    for (int c = 0; c < d->c; c++)
        for (int iy = 0; iy < d->h; iy++)
            memcpy(xpad + c * g->sx + (long)(iy + d->pad_top) * g->wp + d->pad_left,
                   x + ((long)c * d->h + iy) * d->w, (size_t)d->w * sizeof *x);
}

static long direct_tap_offset(const conv2d_desc *d, const direct_geom *g, int ki, int kj)
{
    return (long)ki * d->dil_h * g->wp + (long)kj * d->dil_w;
}

CPU_SIMD_CLONES
void cpu_conv_direct_forward(const conv2d_desc *d, const float *x, const float *w,
                             const float *bias, spec_activation act, float *y,
                             float *scratch)
{
    direct_geom g = direct_geom_of(d);
    float *xpad = scratch, *ypad = xpad + d->c * g.sx;
    long ohw = (long)d->oh * d->ow;
    direct_pad_input(d, &g, x, xpad);
    for (int k = 0; k < d->k; k++) {
        float *restrict yk = ypad + k * g.sy;
        float b0 = bias ? bias[k] : 0.0f;
        for (long p = 0; p < g.n; p++)
            yk[p] = b0;
        for (int c = 0; c < d->c; c++) {
            const float *wkc = w + ((long)k * d->c + c) * d->kh * d->kw;
            for (int ki = 0; ki < d->kh; ki++) {
                for (int kj = 0; kj < d->kw; kj++) {
                    float wv = wkc[ki * d->kw + kj];
                    const float *restrict src =
                        xpad + c * g.sx + direct_tap_offset(d, &g, ki, kj);
                    for (long p = 0; p < g.n; p++)
                        yk[p] += wv * src[p];
                }
            }
        }
        float *out = y + k * ohw;
        for (int oy = 0; oy < d->oh; oy++)
            memcpy(out + (long)oy * d->ow, yk + (long)oy * g.wp, (size_t)d->ow * sizeof *out);
        cpu_activate(act, out, ohw);
    }
}

/* Lanes of dw (per tap) and db from one padded sample. */
DIRECT_INLINE void direct_grad_lanes(const conv2d_desc *d, const direct_geom *g,
                                     const float *xpad, const float *dzpad, float *lanes)
{
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    for (int k = 0; k < d->k; k++) {
        const float *dzk = dzpad + k * g->sy;
        for (int c = 0; c < d->c; c++) {
            for (int ki = 0; ki < d->kh; ki++) {
                for (int kj = 0; kj < d->kw; kj++) {
                    long tap = (((long)k * d->c + c) * d->kh + ki) * d->kw + kj;
                    const float *src = xpad + c * g->sx + direct_tap_offset(d, g, ki, kj);
                    lanes_v acc = *(lanes_v *)(lanes + tap * LANES);
                    for (long p = 0; p < g->sy; p += LANES)
                        acc += *(const lanes_v *)(dzk + p) * *(const lanes_v *)(src + p);
                    *(lanes_v *)(lanes + tap * LANES) = acc;
                }
            }
        }
        lanes_v acc = *(lanes_v *)(lanes + (wsize + k) * LANES);
        for (long p = 0; p < g->sy; p += LANES)
            acc += *(const lanes_v *)(dzk + p);
        *(lanes_v *)(lanes + (wsize + k) * LANES) = acc;
    }
}

/* dx (+)= the unpadded interior of dxpad, for one sample. */
DIRECT_INLINE void direct_unpad_add(const conv2d_desc *d, const direct_geom *g, const float *dxpad,
                             float *dx, bool accumulate)
{
    for (int c = 0; c < d->c; c++) {
        for (int iy = 0; iy < d->h; iy++) {
            const float *restrict src =
                dxpad + c * g->sx + (long)(iy + d->pad_top) * g->wp + d->pad_left;
            float *restrict dst = dx + ((long)c * d->h + iy) * d->w;
            if (accumulate)
                for (int ix = 0; ix < d->w; ix++)
                    dst[ix] += src[ix];
            else
                memcpy(dst, src, (size_t)d->w * sizeof *dst);
        }
    }
}

DIRECT_INLINE void direct_input_grad(const conv2d_desc *d, const direct_geom *g, const float *w,
                              const float *dzpad, float *dxpad)
{
    memset(dxpad, 0, (size_t)(d->c * g->sx) * sizeof *dxpad);
    for (int c = 0; c < d->c; c++) {
        for (int k = 0; k < d->k; k++) {
            const float *restrict dzk = dzpad + k * g->sy;
            const float *wkc = w + ((long)k * d->c + c) * d->kh * d->kw;
            for (int ki = 0; ki < d->kh; ki++) {
                for (int kj = 0; kj < d->kw; kj++) {
                    float wv = wkc[ki * d->kw + kj];
                    float *restrict dst = dxpad + c * g->sx + direct_tap_offset(d, g, ki, kj);
                    for (long p = 0; p < g->n; p++)
                        dst[p] += wv * dzk[p];
                }
            }
        }
    }
}

CPU_SIMD_CLONES
void cpu_conv_direct_backward(const conv2d_desc *d, int n, const float *x, const float *w,
                              const float *dz, float *dx, bool accumulate, float *dw,
                              float *db, float *scratch)
{
    direct_geom g = direct_geom_of(d);
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    long xsize = (long)d->c * d->h * d->w, ohw = (long)d->oh * d->ow;
    float *xpad = scratch, *dxpad = xpad + d->c * g.sx, *dzpad = dxpad + d->c * g.sx;
    float *lanes = dzpad + d->k * g.sy;
    memset(lanes, 0, (size_t)((wsize + d->k) * LANES) * sizeof *lanes);
    /* Only the real columns are written below: the others stay zero. */
    memset(dzpad, 0, (size_t)(d->k * g.sy) * sizeof *dzpad);
    for (int b = 0; b < n; b++) {
        direct_pad_input(d, &g, x + b * xsize, xpad);
        for (int k = 0; k < d->k; k++)
            for (int oy = 0; oy < d->oh; oy++)
                memcpy(dzpad + k * g.sy + (long)oy * g.wp,
                       dz + b * d->k * ohw + k * ohw + (long)oy * d->ow,
                       (size_t)d->ow * sizeof *dzpad);
        direct_grad_lanes(d, &g, xpad, dzpad, lanes);
        if (!dx)
            continue;
        direct_input_grad(d, &g, w, dzpad, dxpad);
        direct_unpad_add(d, &g, dxpad, dx + b * xsize, accumulate);
    }
    for (long i = 0; i < wsize + d->k; i++) {
        float s = 0.0f;
        for (int j = 0; j < LANES; j++)
            s += lanes[i * LANES + j];
        if (i < wsize)
            dw[i] = s;
        else if (db)
            db[i - wsize] = s;
    }
}
