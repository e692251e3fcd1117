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
#include "cpu/cpu_conv_direct.h"

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

static long direct_portable_scratch(const conv2d_desc *d)
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
static void direct_forward_portable(const conv2d_desc *d, const float *x, const float *w,
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
static void direct_backward_portable(const conv2d_desc *d, int n, const float *x,
                                     const float *w, const float *dz, float *dx,
                                     bool accumulate, float *dw, float *db, float *scratch)
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

/* ---- AVX-512 row kernels --------------------------------------------
 *
 * The portable kernels above compute one output channel at a time and
 * spend a multiply and an add (ISO C forbids contracting them) per tap and
 * lane. Here each padded input row segment is loaded once and feeds every
 * output channel of a block of four (register-blocked: 4 channels x 2
 * vectors = 8 accumulators), with fused multiply-adds; rows are 16-lane
 * vectors, the tail of a row (12 of 28 columns) handled by store masks, so
 * nothing is computed for the padding columns. The input gradient is the
 * same kernel run on the output gradient laid out with a (kh-1)*dil - pad
 * margin, with the filters flipped and their channel axes swapped. The
 * weight gradient keeps, per block of (4 output channels x up to 3 taps),
 * 16 lanes per weight in registers over a whole sample, reading masked
 * (zero-filled) rows, so the lanes hold exact per-lane sums in a fixed
 * order; they are added up in lane order at the end. Results therefore
 * depend only on the thread count (which fixes each thread's samples).
 *
 * Picked at run time when the CPU has AVX-512F; padding larger than the
 * kernel's reach (never produced by "same" or "valid") keeps the portable
 * kernels. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DIRECT_HAVE_AVX512 1
#include <immintrin.h>
#define AVX512_FN static __attribute__((target("avx512f")))
#define AVX512_INLINE static inline __attribute__((always_inline, target("avx512f")))
#else
#define DIRECT_HAVE_AVX512 0
#endif

static bool direct_portable_forced;

void cpu_conv_direct_force_portable(bool on)
{
    direct_portable_forced = on;
}

/* Padded plane of hp x wp with 16 floats of slack (the last row's
 * vectors may read up to 15 floats past the plane), whole vectors. */
static long direct_plane_floats(long hp, long wp)
{
    return round_up(hp * wp + LANES, LANES);
}

#if DIRECT_HAVE_AVX512
static bool direct_use_fast(const conv2d_desc *d)
{
    /* libgcc fills the CPU model before main; reading it is a load. */
    bool have = __builtin_cpu_supports("avx512f");
    int reach_h = (d->kh - 1) * d->dil_h, reach_w = (d->kw - 1) * d->dil_w;
    return have && !direct_portable_forced && d->pad_top <= reach_h &&
           d->pad_bottom <= reach_h && d->pad_left <= reach_w && d->pad_right <= reach_w;
}
#endif

/* The scratch of the fast kernels: padded x, padded dz, two packed
 * filter copies, weight-gradient lanes. */
typedef struct fast_geom {
    int hp, wp;      /* padded input */
    int hq, wq;      /* padded output gradient */
    long xs, zs;     /* floats per padded plane */
    long wsize;
} fast_geom;

static fast_geom fast_geom_of(const conv2d_desc *d)
{
    fast_geom g;
    g.hp = d->h + d->pad_top + d->pad_bottom;
    g.wp = d->w + d->pad_left + d->pad_right;
    g.hq = d->h + (d->kh - 1) * d->dil_h;
    g.wq = d->w + (d->kw - 1) * d->dil_w;
    g.xs = direct_plane_floats(g.hp, g.wp);
    g.zs = direct_plane_floats(g.hq, g.wq);
    g.wsize = (long)d->k * d->c * d->kh * d->kw;
    return g;
}

static long direct_fast_scratch(const conv2d_desc *d)
{
    fast_geom g = fast_geom_of(d);
    return d->c * g.xs + d->k * g.zs + 2 * round_up(g.wsize, LANES) + (g.wsize + d->k) * LANES;
}

long cpu_conv_direct_scratch(const conv2d_desc *d)
{
    long a = direct_portable_scratch(d), b = direct_fast_scratch(d);
    return a > b ? a : b;
}

/* dst (planes, hp x wp with margins top/left) = src (planes, h x w); the
 * margins, right and bottom borders and slack zero. */
static void direct_pad_planes(const float *src, int planes, int h, int w, float *dst,
                              long plane, int wp, int top, int left)
{
    memset(dst, 0, (size_t)(planes * plane) * sizeof *dst);
    for (int c = 0; c < planes; c++)
        for (int iy = 0; iy < h; iy++)
            memcpy(dst + c * plane + (long)(iy + top) * wp + left,
                   src + ((long)c * h + iy) * w, (size_t)w * sizeof *dst);
}

#if DIRECT_HAVE_AVX512

/* A stride-1 correlation over padded planes: out (cout, oh, ow) (+)=
 * sum over cin and taps of wt * in, wt packed (cin, kh, kw, cout). */
typedef struct rows_conv {
    const float *in;
    long in_plane;
    int in_wp, cin, cout, kh, kw, dil_h, dil_w;
    const float *wt;
    const float *bias;   /* (cout) or NULL */
    float *out;
    int oh, ow;
    bool relu, accumulate;
} rows_conv;

static inline __mmask16 direct_mask(int n)
{
    return n >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* KB output channels from k0, NV vectors of output row oy from column c0. */
AVX512_INLINE void rows_block(const rows_conv *r, int oy, int c0, int k0, const int KB,
                              const int NV)
{
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int kk = 0; kk < KB; kk++) {
        __m512 b = _mm512_set1_ps(r->bias ? r->bias[k0 + kk] : 0.0f);
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[kk][v] = b;
    }
    long taps = (long)r->kh * r->kw;
    for (int c = 0; c < r->cin; c++) {
        const float *plane = r->in + c * r->in_plane + c0;
        const float *wc = r->wt + c * taps * r->cout + k0;
        for (int ki = 0; ki < r->kh; ki++) {
            const float *row = plane + (long)(oy + ki * r->dil_h) * r->in_wp;
            const float *wr = wc + (long)ki * r->kw * r->cout;
            for (int kj = 0; kj < r->kw; kj++) {
                const float *s = row + kj * r->dil_w;
                const float *wk = wr + (long)kj * r->cout;
                __m512 v0 = _mm512_loadu_ps(s);
                __m512 v1 = NV > 1 ? _mm512_loadu_ps(s + LANES) : v0;
#pragma GCC unroll 4
                for (int kk = 0; kk < KB; kk++) {
                    __m512 wb = _mm512_set1_ps(wk[kk]);
                    acc[kk][0] = _mm512_fmadd_ps(wb, v0, acc[kk][0]);
                    if (NV > 1)
                        acc[kk][1] = _mm512_fmadd_ps(wb, v1, acc[kk][1]);
                }
            }
        }
    }
    long ohw = (long)r->oh * r->ow;
#pragma GCC unroll 4
    for (int kk = 0; kk < KB; kk++) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            __mmask16 m = direct_mask(r->ow - c0 - v * LANES);
            float *o = r->out + (k0 + kk) * ohw + (long)oy * r->ow + c0 + v * LANES;
            __m512 a = acc[kk][v];
            if (r->relu)
                a = _mm512_max_ps(a, _mm512_setzero_ps());
            if (r->accumulate)
                a = _mm512_add_ps(_mm512_maskz_loadu_ps(m, o), a);
            _mm512_mask_storeu_ps(o, m, a);
        }
    }
}

AVX512_FN void rows_conv_run(const rows_conv *r)
{
    for (int oy = 0; oy < r->oh; oy++) {
        for (int c0 = 0; c0 < r->ow; c0 += 2 * LANES) {
            bool two = r->ow - c0 > LANES;
            int k0 = 0;
            for (; k0 + 4 <= r->cout; k0 += 4) {
                if (two)
                    rows_block(r, oy, c0, k0, 4, 2);
                else
                    rows_block(r, oy, c0, k0, 4, 1);
            }
            for (; k0 < r->cout; k0++) {
                if (two)
                    rows_block(r, oy, c0, k0, 1, 2);
                else
                    rows_block(r, oy, c0, k0, 1, 1);
            }
        }
    }
}

/* Weight-gradient lanes of KB output channels from k0 and KJ taps (ki,
 * kj0..) of input channel c, over one sample: lanes[tap][16] += the
 * products dz * x of each column lane. */
AVX512_INLINE void dw_block(const conv2d_desc *d, const fast_geom *g, const float *dz,
                            const float *xpad, int c, int ki, int kj0, int k0, const int KB,
                            const int KJ, float *lanes)
{
    long ohw = (long)d->oh * d->ow;
    long tap0 = (long)c * d->kh * d->kw + (long)ki * d->kw + kj0;
    long kstride = (long)d->c * d->kh * d->kw;
    __m512 acc[4][3];
#pragma GCC unroll 4
    for (int kk = 0; kk < KB; kk++)
#pragma GCC unroll 3
        for (int jj = 0; jj < KJ; jj++)
            acc[kk][jj] = _mm512_loadu_ps(lanes + ((k0 + kk) * kstride + tap0 + jj) * LANES);
    const float *xc = xpad + c * g->xs + (long)ki * d->dil_h * g->wp + (long)kj0 * d->dil_w;
    for (int oy = 0; oy < d->oh; oy++) {
        const float *xr = xc + (long)oy * g->wp;
        const float *zr = dz + k0 * ohw + (long)oy * d->ow;
        for (int c0 = 0; c0 < d->ow; c0 += LANES) {
            __mmask16 m = direct_mask(d->ow - c0);
            __m512 z[4];
#pragma GCC unroll 4
            for (int kk = 0; kk < KB; kk++)
                z[kk] = _mm512_maskz_loadu_ps(m, zr + kk * ohw + c0);
#pragma GCC unroll 3
            for (int jj = 0; jj < KJ; jj++) {
                __m512 xv = _mm512_maskz_loadu_ps(m, xr + c0 + (long)jj * d->dil_w);
#pragma GCC unroll 4
                for (int kk = 0; kk < KB; kk++)
                    acc[kk][jj] = _mm512_fmadd_ps(z[kk], xv, acc[kk][jj]);
            }
        }
    }
#pragma GCC unroll 4
    for (int kk = 0; kk < KB; kk++)
#pragma GCC unroll 3
        for (int jj = 0; jj < KJ; jj++)
            _mm512_storeu_ps(lanes + ((k0 + kk) * kstride + tap0 + jj) * LANES, acc[kk][jj]);
}

#define DW_CASE(KB, KJ) dw_block(d, g, dz, xpad, c, ki, kj, k0, KB, KJ, lanes)

AVX512_FN void dw_sample(const conv2d_desc *d, const fast_geom *g, const float *dz,
                         const float *xpad, float *lanes, bool with_db)
{
    for (int c = 0; c < d->c; c++) {
        for (int ki = 0; ki < d->kh; ki++) {
            for (int kj = 0; kj < d->kw; kj += 3) {
                int nj = d->kw - kj < 3 ? d->kw - kj : 3;
                int k0 = 0;
                for (; k0 + 4 <= d->k; k0 += 4) {
                    if (nj == 3)
                        DW_CASE(4, 3);
                    else if (nj == 2)
                        DW_CASE(4, 2);
                    else
                        DW_CASE(4, 1);
                }
                for (; k0 < d->k; k0++) {
                    if (nj == 3)
                        DW_CASE(1, 3);
                    else if (nj == 2)
                        DW_CASE(1, 2);
                    else
                        DW_CASE(1, 1);
                }
            }
        }
    }
    if (!with_db)
        return;
    long ohw = (long)d->oh * d->ow;
    for (int k = 0; k < d->k; k++) {
        float *l = lanes + (g->wsize + k) * LANES;
        __m512 acc = _mm512_loadu_ps(l);
        for (int oy = 0; oy < d->oh; oy++) {
            const float *zr = dz + k * ohw + (long)oy * d->ow;
            for (int c0 = 0; c0 < d->ow; c0 += LANES)
                acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(direct_mask(d->ow - c0), zr + c0));
        }
        _mm512_storeu_ps(l, acc);
    }
}

#undef DW_CASE

/* wt (c, kh, kw, k) = w (k, c, kh, kw): the forward's packing. */
static void direct_pack_forward(const conv2d_desc *d, const float *w, float *wt)
{
    long taps = (long)d->kh * d->kw;
    for (int k = 0; k < d->k; k++)
        for (int c = 0; c < d->c; c++)
            for (long t = 0; t < taps; t++)
                wt[(c * taps + t) * d->k + k] = w[((long)k * d->c + c) * taps + t];
}

/* wt (k, kh, kw, c) = w (k, c, kh-1-ki, kw-1-kj): the input gradient's. */
static void direct_pack_backward(const conv2d_desc *d, const float *w, float *wt)
{
    long taps = (long)d->kh * d->kw;
    for (int k = 0; k < d->k; k++)
        for (int c = 0; c < d->c; c++)
            for (int ki = 0; ki < d->kh; ki++)
                for (int kj = 0; kj < d->kw; kj++)
                    wt[((k * (long)d->kh + ki) * d->kw + kj) * d->c + c] =
                        w[((long)k * d->c + c) * taps + (long)(d->kh - 1 - ki) * d->kw +
                          (d->kw - 1 - kj)];
}

static void direct_forward_fast(const conv2d_desc *d, const float *x, const float *w,
                                const float *bias, spec_activation act, float *y,
                                float *scratch)
{
    fast_geom g = fast_geom_of(d);
    float *xpad = scratch, *wt = xpad + d->c * g.xs;
    direct_pad_planes(x, d->c, d->h, d->w, xpad, g.xs, g.wp, d->pad_top, d->pad_left);
    direct_pack_forward(d, w, wt);
    rows_conv r = {.in = xpad, .in_plane = g.xs, .in_wp = g.wp, .cin = d->c, .cout = d->k,
                   .kh = d->kh, .kw = d->kw, .dil_h = d->dil_h, .dil_w = d->dil_w,
                   .wt = wt, .bias = bias, .out = y, .oh = d->oh, .ow = d->ow,
                   .relu = act == ACT_RELU};
    rows_conv_run(&r);
    if (act != ACT_RELU && act != ACT_NONE)
        cpu_activate(act, y, (long)d->k * d->oh * d->ow);
}

static void direct_backward_fast(const conv2d_desc *d, int n, const float *x, const float *w,
                                 const float *dz, float *dx, bool accumulate, float *dw,
                                 float *db, float *scratch)
{
    fast_geom g = fast_geom_of(d);
    long xsize = (long)d->c * d->h * d->w, ohw = (long)d->oh * d->ow;
    float *xpad = scratch, *zpad = xpad + d->c * g.xs;
    float *wt = zpad + d->k * g.zs;
    float *lanes = wt + 2 * round_up(g.wsize, LANES);
    memset(lanes, 0, (size_t)((g.wsize + d->k) * LANES) * sizeof *lanes);
    if (dx)
        direct_pack_backward(d, w, wt);
    int qt = (d->kh - 1) * d->dil_h - d->pad_top, ql = (d->kw - 1) * d->dil_w - d->pad_left;
    for (int b = 0; b < n; b++) {
        const float *dzb = dz + b * d->k * ohw;
        direct_pad_planes(x + b * xsize, d->c, d->h, d->w, xpad, g.xs, g.wp, d->pad_top,
                          d->pad_left);
        dw_sample(d, &g, dzb, xpad, lanes, db != NULL);
        if (!dx)
            continue;
        direct_pad_planes(dzb, d->k, d->oh, d->ow, zpad, g.zs, g.wq, qt, ql);
        rows_conv r = {.in = zpad, .in_plane = g.zs, .in_wp = g.wq, .cin = d->k,
                       .cout = d->c, .kh = d->kh, .kw = d->kw, .dil_h = d->dil_h,
                       .dil_w = d->dil_w, .wt = wt, .out = dx + b * xsize, .oh = d->h,
                       .ow = d->w, .accumulate = accumulate};
        rows_conv_run(&r);
    }
    for (long i = 0; i < g.wsize + d->k; i++) {
        const float *l = lanes + i * LANES;
        float s = 0.0f;
        for (int j = 0; j < LANES; j++)
            s += l[j];
        if (i < g.wsize)
            dw[i] = s;
        else if (db)
            db[i - g.wsize] = s;
    }
}

#endif /* DIRECT_HAVE_AVX512 */

void cpu_conv_direct_forward(const conv2d_desc *d, const float *x, const float *w,
                             const float *bias, spec_activation act, float *y, float *scratch)
{
#if DIRECT_HAVE_AVX512
    if (direct_use_fast(d)) {
        direct_forward_fast(d, x, w, bias, act, y, scratch);
        return;
    }
#endif
    direct_forward_portable(d, x, w, bias, act, y, scratch);
}

void cpu_conv_direct_backward(const conv2d_desc *d, int n, const float *x, const float *w,
                              const float *dz, float *dx, bool accumulate, float *dw,
                              float *db, float *scratch)
{
#if DIRECT_HAVE_AVX512
    if (direct_use_fast(d)) {
        direct_backward_fast(d, n, x, w, dz, dx, accumulate, dw, db, scratch);
        return;
    }
#endif
    direct_backward_portable(d, n, x, w, dz, dx, accumulate, dw, db, scratch);
}
