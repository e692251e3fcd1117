/* cpu_conv_direct.c — direct 2-D convolution for layers with few channels
 * (simplecnn's 1->4 and 4->4), where im2col + GEMM is mostly overhead: a
 * 4 x 784 x 9 GEMM per sample spends its time packing and in edge kernels,
 * and im2col copies 28-float rows.
 *
 * Each sample is first copied into a zero-padded plane per channel, of
 * width wp = w + pad_left + pad_right. In that layout every kernel tap is a
 * fixed shift: output p = oy * wp + ox reads padded input p + off(ki, kj),
 * off = ki*dil_h*wp + kj*dil_w, so a block of 64 consecutive outputs is
 * the sum over taps of w_tap * (64 inputs starting at p + off), kept in
 * four 16-float registers until every tap is in (the columns ox >= ow are
 * computed and dropped). The input gradient is the same gather from the
 * output gradient laid out alike (its dropped columns zero, and a zero
 * margin in front for the negative shifts). The functions are cloned for
 * AVX-512/AVX2 (CPU_SIMD_CLONES) and picked at load time.
 *
 * Only stride 1 (any padding and dilation). Every output sums its terms in
 * a fixed order; the weight and bias gradients are reduced in 64 lanes
 * (lane j takes positions p = j mod 64, in order) added in a fixed order at
 * the end, so results depend only on the thread count. */
#include "core/cpu_conv_direct.h"

#include <string.h>

#define LANES 16
#define BLOCK (4 * LANES)

/* 16 floats as one value: GCC/Clang lower it to the widest vectors the
 * clone targets (one zmm, two ymm, four xmm); aligned(4) and may_alias let
 * it load from any float pointer. */
typedef float lanes_v __attribute__((vector_size(LANES * sizeof(float)), aligned(4), may_alias));

/* Helpers called from the cloned functions: inlined so they get the
 * clone's instruction set. */
#define DIRECT_INLINE static inline __attribute__((always_inline))

#define LOADV(p) (*(const lanes_v *)(p))
#define STOREV(p, v) (*(lanes_v *)(p) = (v))

typedef struct direct_geom {
    int hp, wp;      /* padded input plane */
    long maxoff;     /* the largest tap shift */
    long sy;         /* output positions computed: oh*wp rounded up to BLOCK */
    long qn;         /* input positions computed: hp*wp rounded up to BLOCK */
    long sx;         /* floats per padded input plane (with slack for shifts) */
    long mz;         /* zero margin in front of each output-gradient plane */
    long sz;         /* floats per output-gradient plane, margin included */
} direct_geom;

static long round_up(long n, long to)
{
    return (n + to - 1) / to * to;
}

static direct_geom direct_geom_of(const conv2d_desc *d)
{
    direct_geom g;
    g.hp = d->h + d->pad_top + d->pad_bottom;
    g.wp = d->w + d->pad_left + d->pad_right;
    g.maxoff = (long)(d->kh - 1) * d->dil_h * g.wp + (long)(d->kw - 1) * d->dil_w;
    g.sy = round_up((long)d->oh * g.wp, BLOCK);
    g.qn = round_up((long)g.hp * g.wp, BLOCK);
    g.sx = round_up(g.sy + g.maxoff, LANES);
    if (g.sx < g.qn)
        g.sx = g.qn;
    g.mz = round_up(g.maxoff, LANES);
    g.sz = g.mz + (g.qn > g.sy ? g.qn : g.sy);
    return g;
}

static long direct_tap_offset(const conv2d_desc *d, const direct_geom *g, int ki, int kj)
{
    return (long)ki * d->dil_h * g->wp + (long)kj * d->dil_w;
}

bool cpu_conv_direct_suits(const conv2d_desc *d)
{
    return d->stride_h == 1 && d->stride_w == 1 && (long)d->c * d->k <= CPU_CONV_DIRECT_MAX_CK;
}

long cpu_conv_direct_scratch(const conv2d_desc *d)
{
    direct_geom g = direct_geom_of(d);
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    return d->c * g.sx + d->k * g.sy + d->c * g.qn + d->k * g.sz + (wsize + d->k) * BLOCK;
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

CPU_SIMD_CLONES
void cpu_conv_direct_forward(const conv2d_desc *d, const float *x, const float *w,
                             const float *bias, spec_activation act, float *y,
                             float *scratch)
{
    direct_geom g = direct_geom_of(d);
    float *xpad = scratch, *ypad = xpad + d->c * g.sx;
    long ohw = (long)d->oh * d->ow, taps = (long)d->kh * d->kw;
    direct_pad_input(d, &g, x, xpad);
    for (int k = 0; k < d->k; k++) {
        float *yk = ypad + k * g.sy;
        float b0 = bias ? bias[k] : 0.0f;
        for (long p = 0; p < g.sy; p += BLOCK) {
            lanes_v a0 = {0}, a1, a2, a3;
            a0 += b0;
            a1 = a0, a2 = a0, a3 = a0;
            for (int c = 0; c < d->c; c++) {
                const float *wkc = w + ((long)k * d->c + c) * taps;
                for (int ki = 0; ki < d->kh; ki++) {
                    for (int kj = 0; kj < d->kw; kj++) {
                        float wv = wkc[ki * d->kw + kj];
                        const float *s = xpad + c * g.sx + direct_tap_offset(d, &g, ki, kj) + p;
                        a0 += wv * LOADV(s);
                        a1 += wv * LOADV(s + LANES);
                        a2 += wv * LOADV(s + 2 * LANES);
                        a3 += wv * LOADV(s + 3 * LANES);
                    }
                }
            }
            STOREV(yk + p, a0);
            STOREV(yk + p + LANES, a1);
            STOREV(yk + p + 2 * LANES, a2);
            STOREV(yk + p + 3 * LANES, a3);
        }
        float *out = y + k * ohw;
        for (int oy = 0; oy < d->oh; oy++)
            memcpy(out + (long)oy * d->ow, yk + (long)oy * g.wp, (size_t)d->ow * sizeof *out);
        cpu_activate(act, out, ohw);
    }
}

/* BLOCK lanes of sum over p of a[p] * b[p] (b NULL: of a[p]), p < n. */
DIRECT_INLINE void direct_dot_lanes(const float *a, const float *b, long n, float *lanes)
{
    lanes_v a0 = LOADV(lanes), a1 = LOADV(lanes + LANES);
    lanes_v a2 = LOADV(lanes + 2 * LANES), a3 = LOADV(lanes + 3 * LANES);
    for (long p = 0; p < n; p += BLOCK) {
        if (b) {
            a0 += LOADV(a + p) * LOADV(b + p);
            a1 += LOADV(a + p + LANES) * LOADV(b + p + LANES);
            a2 += LOADV(a + p + 2 * LANES) * LOADV(b + p + 2 * LANES);
            a3 += LOADV(a + p + 3 * LANES) * LOADV(b + p + 3 * LANES);
        } else {
            a0 += LOADV(a + p);
            a1 += LOADV(a + p + LANES);
            a2 += LOADV(a + p + 2 * LANES);
            a3 += LOADV(a + p + 3 * LANES);
        }
    }
    STOREV(lanes, a0);
    STOREV(lanes + LANES, a1);
    STOREV(lanes + 2 * LANES, a2);
    STOREV(lanes + 3 * LANES, a3);
}

/* Lanes of dw (per tap) and db from one padded sample. */
DIRECT_INLINE void direct_grad_lanes(const conv2d_desc *d, const direct_geom *g,
                                     const float *xpad, const float *dzpad, float *lanes)
{
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    for (int k = 0; k < d->k; k++) {
        const float *dzk = dzpad + k * g->sz + g->mz;
        for (int c = 0; c < d->c; c++)
            for (int ki = 0; ki < d->kh; ki++)
                for (int kj = 0; kj < d->kw; kj++) {
                    long tap = (((long)k * d->c + c) * d->kh + ki) * d->kw + kj;
                    direct_dot_lanes(dzk, xpad + c * g->sx + direct_tap_offset(d, g, ki, kj),
                                     g->sy, lanes + tap * BLOCK);
                }
        direct_dot_lanes(dzk, NULL, g->sy, lanes + (wsize + k) * BLOCK);
    }
}

/* dxpad (c, qn) = the input gradient in the padded layout: each position
 * gathers w_tap * dz[q - off] over output channels and taps. */
DIRECT_INLINE void direct_input_grad(const conv2d_desc *d, const direct_geom *g, const float *w,
                                     const float *dzpad, float *dxpad)
{
    long taps = (long)d->kh * d->kw;
    for (int c = 0; c < d->c; c++) {
        for (long q = 0; q < g->qn; q += BLOCK) {
            lanes_v a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int k = 0; k < d->k; k++) {
                const float *wkc = w + ((long)k * d->c + c) * taps;
                const float *dzk = dzpad + k * g->sz + g->mz + q;
                for (int ki = 0; ki < d->kh; ki++) {
                    for (int kj = 0; kj < d->kw; kj++) {
                        float wv = wkc[ki * d->kw + kj];
                        const float *s = dzk - direct_tap_offset(d, g, ki, kj);
                        a0 += wv * LOADV(s);
                        a1 += wv * LOADV(s + LANES);
                        a2 += wv * LOADV(s + 2 * LANES);
                        a3 += wv * LOADV(s + 3 * LANES);
                    }
                }
            }
            float *o = dxpad + c * g->qn + q;
            STOREV(o, a0);
            STOREV(o + LANES, a1);
            STOREV(o + 2 * LANES, a2);
            STOREV(o + 3 * LANES, a3);
        }
    }
}

/* dx (+)= the unpadded interior of dxpad, for one sample. */
DIRECT_INLINE void direct_unpad_add(const conv2d_desc *d, const direct_geom *g,
                                    const float *dxpad, float *dx, bool accumulate)
{
    for (int c = 0; c < d->c; c++) {
        for (int iy = 0; iy < d->h; iy++) {
            const float *restrict src =
                dxpad + c * g->qn + (long)(iy + d->pad_top) * g->wp + d->pad_left;
            float *restrict dst = dx + ((long)c * d->h + iy) * d->w;
            if (accumulate)
                for (int ix = 0; ix < d->w; ix++)
                    dst[ix] += src[ix];
            else
                memcpy(dst, src, (size_t)d->w * sizeof *dst);
        }
    }
}

/* Sum of BLOCK lanes: four 16-lane groups pairwise, then the 16 in order. */
static float direct_lane_sum(const float *l)
{
    float s = 0.0f;
    for (int j = 0; j < LANES; j++)
        s += (l[j] + l[j + LANES]) + (l[j + 2 * LANES] + l[j + 3 * LANES]);
    return s;
}

CPU_SIMD_CLONES
void cpu_conv_direct_backward(const conv2d_desc *d, int n, const float *x, const float *w,
                              const float *dz, float *dx, bool accumulate, float *dw,
                              float *db, float *scratch)
{
    direct_geom g = direct_geom_of(d);
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    long xsize = (long)d->c * d->h * d->w, ohw = (long)d->oh * d->ow;
    float *xpad = scratch;
    float *dxpad = xpad + d->c * g.sx + d->k * g.sy;
    float *dzpad = dxpad + d->c * g.qn;
    float *lanes = dzpad + d->k * g.sz;
    memset(lanes, 0, (size_t)((wsize + d->k) * BLOCK) * sizeof *lanes);
    /* Only the real columns are written below: margins and the dropped
     * columns stay zero. */
    memset(dzpad, 0, (size_t)(d->k * g.sz) * sizeof *dzpad);
    for (int b = 0; b < n; b++) {
        direct_pad_input(d, &g, x + b * xsize, xpad);
        for (int k = 0; k < d->k; k++)
            for (int oy = 0; oy < d->oh; oy++)
                memcpy(dzpad + k * g.sz + g.mz + (long)oy * g.wp,
                       dz + b * d->k * ohw + k * ohw + (long)oy * d->ow,
                       (size_t)d->ow * sizeof *dzpad);
        direct_grad_lanes(d, &g, xpad, dzpad, lanes);
        if (!dx)
            continue;
        direct_input_grad(d, &g, w, dzpad, dxpad);
        direct_unpad_add(d, &g, dxpad, dx + b * xsize, accumulate);
    }
    for (long i = 0; i < wsize + d->k; i++) {
        float s = direct_lane_sum(lanes + i * BLOCK);
        if (i < wsize)
            dw[i] = s;
        else if (db)
            db[i - wsize] = s;
    }
}
