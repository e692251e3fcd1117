/* cpu_winograd.c — Winograd F(2x2, 5x5) convolution (see cpu_winograd.h).
 *
 * The transforms come from Toom-Cook on the points 0, 1, -1, 1/2, -2 and
 * infinity (Lavin & Gray's minimal filtering). For the correlation
 * y[i] = sum_j g[j] d[i+j] (2 outputs, 5 taps, 6 inputs), with E_r the
 * 6 x r evaluation matrix of a degree < r polynomial at those points (the
 * row of infinity picks the leading coefficient) and C the inverse of E_6
 * (interpolation), the trilinear form sum y*_i g_j d_(i+j) equals
 * sum_p (E_2 y*)_p (E_5 g)_p (C^T d)_p, which gives all three passes:
 *   forward        y  = E_2^T [(E_5 g) . (C^T d)]      A = E_2, G = E_5, B^T = C^T
 *   input grad     dd = C [(E_5 g) . (E_2 dy)]         per 6x6 tile, tiles overlap
 *   weight grad    dg = E_5^T [(E_2 dy) . (C^T d)]     F(5, 2) on the same tiles
 * (both gradients share the transformed output gradient E_2 dy E_2^T, and
 * the weight gradient the forward's input tiles). Row p of
 * C^T is scaled by s_p and row p of E_5 by 1/s_p (s = 2, 6, 6, 15/16, 30,
 * 2), which makes B^T integral:
 *
 *   B^T = [ 2 -3 -4  3  2  0 ]   G = [ 1/2                        ]
 *         [ 0 -2  1  5  2  0 ]       [ 1/6   1/6  1/6  1/6  1/6   ]
 *         [ 0 -2  5 -1 -2  0 ]       [ 1/6  -1/6  1/6 -1/6  1/6   ]
 *         [ 0  2  1 -2 -1  0 ]       [ 16/15 8/15 4/15 2/15 1/15  ]
 *         [ 0  1 -2 -1  2  0 ]       [ 1/30 -2/30 4/30 -8/30 16/30]
 *         [ 0  2 -3 -4  3  2 ]       [                       1/2  ]
 *
 *   A^T = [ 1 1  1  1    1  0 ]
 *         [ 0 1 -1  1/2 -2  1 ]
 *
 * Of the point sets tried (0, +-1 with +-2, +-1/2, or one of each) this
 * mix had the smallest float32 error for forward and weight gradient
 * together (~5e-5 and ~4e-6 of the largest output on random data).
 *
 * Layouts. Per chunk of ns samples with T output tiles each (N = ns * T
 * GEMM columns): V (36, cin, N) the transformed input tiles, M (36, cout,
 * N) the products, so point p's GEMM is M_p = U_p V_p with U_p (cout,
 * cin). Every transform works on rows of T lanes (one plane's tiles), so
 * it vectorises; the hot functions are cloned for AVX-512/AVX2. */
#include "cpu/cpu_winograd.h"

#include <string.h>

#define WINO_POINTS 36
/* Floats per vector block of the transforms. */
#define WINO_LANES 16
/* Floats past the end of a buffer that an 8-float copy may touch. */
#define WINO_SLACK 16
/* GEMM columns per chunk (convnet's conv2: 2 samples of 49 tiles). Larger
 * chunks give OpenBLAS longer GEMMs but push V and M (36 points x channels
 * x columns) out of L2, and the transforms then cost more than the GEMMs
 * gain: CPU time per step measured with perf, 49 / 98 / 196 / 392 columns:
 * 3770 / 3664 / 3935 / 4065 samples. */
#define WINO_TARGET_COLUMNS 98
/* Filters transformed together (lanes of the weight transforms). */
#define WINO_FILTER_BLOCK 32

/* A stride-1 5x5 correlation's planes and tiles. */
typedef struct wino_geom {
    int cin, cout;
    int h, w;               /* input plane */
    int oh, ow;             /* output plane */
    int pad_top, pad_left;  /* input row of output row 0's tile is -pad_top */
    int th, tw, tiles;      /* 2x2 output tiles */
    int ph, pw;             /* the zero-padded input plane the tiles read */
} wino_geom;

static wino_geom wino_geom_make(int cin, int cout, int h, int w, int oh, int ow, int pad_top,
                                int pad_left)
{
    wino_geom g = {.cin = cin, .cout = cout, .h = h, .w = w, .oh = oh, .ow = ow,
                   .pad_top = pad_top, .pad_left = pad_left};
    g.th = (oh + 1) / 2;
    g.tw = (ow + 1) / 2;
    g.tiles = g.th * g.tw;
    g.ph = 2 * g.th + 4;
    g.pw = 2 * g.tw + 4;
    return g;
}

static wino_geom wino_forward_geom(const conv2d_desc *d)
{
    return wino_geom_make(d->c, d->k, d->h, d->w, d->oh, d->ow, d->pad_top, d->pad_left);
}

bool cpu_winograd_can(const conv2d_desc *d)
{
    return d->kh == 5 && d->kw == 5 && d->stride_h == 1 && d->stride_w == 1 &&
           d->dil_h == 1 && d->dil_w == 1 && d->pad_top >= 0 && d->pad_top <= 4 &&
           d->pad_left >= 0 && d->pad_left <= 4 && d->oh > 0 && d->ow > 0;
}

bool cpu_winograd_suits(const conv2d_desc *d)
{
    return cpu_winograd_can(d) && d->c >= CPU_WINOGRAD_MIN_CHANNELS &&
           d->k >= CPU_WINOGRAD_MIN_CHANNELS;
}

static int wino_chunk_samples(const conv2d_desc *d)
{
    int t = wino_forward_geom(d).tiles;
    int s = (WINO_TARGET_COLUMNS + t - 1) / t;
    return s < d->max_batch ? s : (d->max_batch > 0 ? d->max_batch : 1);
}

static long max_l(long a, long b)
{
    return a > b ? a : b;
}

static long round16(long n)
{
    return (n + 15) / 16 * 16;
}

/* Lanes a transform computes for T tiles: whole 16-float blocks. */
static int wino_lanes(int tiles)
{
    return (tiles + 15) / 16 * 16;
}

/* Floats between point p's and point p+1's matrix in a chunk buffer: the
 * matrix, then room for the last plane's whole-block overrun. */
static long wino_point_stride(long rows, long n)
{
    return rows * n + WINO_LANES;
}

/* One thread's scratch, carved from its block. */
typedef struct wino_bufs {
    float *v;    /* (36, cin, N) transformed input tiles */
    float *m;    /* (36, cout, N) products; also the transformed dz tiles */
    float *mw;   /* (36, k, c) the weight gradient in the transform domain */
    float *pad;  /* one zero-padded input plane */
    float *t1, *t2; /* per-plane transform rows */
} wino_bufs;

typedef struct wino_sizes {
    long v, m, mw, pad, t;
} wino_sizes;

static wino_sizes wino_sizes_of(const conv2d_desc *d)
{
    wino_geom f = wino_forward_geom(d);
    long n = (long)wino_chunk_samples(d) * f.tiles;
    wino_sizes z;
    /* v also holds the input gradient's products (c rows), m the
     * transformed output gradient (k rows). */
    z.v = round16(WINO_POINTS * wino_point_stride(f.cin, n));
    z.m = round16(WINO_POINTS * wino_point_stride(f.cout, n));
    z.mw = round16((long)WINO_POINTS * d->k * d->c);
    /* pw = 2 (tw + 2): the even and odd columns */
    z.pad = round16((long)f.ph * f.pw + WINO_SLACK);
    z.t = round16(WINO_POINTS * max_l(wino_lanes(f.tiles), WINO_FILTER_BLOCK) + WINO_SLACK);
    return z;
}

long cpu_winograd_thread_scratch(const conv2d_desc *d)
{
    wino_sizes z = wino_sizes_of(d);
    return z.v + z.m + z.mw + z.pad + 2 * z.t;
}

long cpu_winograd_weight_size(const conv2d_desc *d)
{
    return (long)WINO_POINTS * d->k * d->c;
}

static wino_bufs wino_bufs_of(const conv2d_desc *d, float *scratch)
{
    wino_sizes z = wino_sizes_of(d);
    wino_bufs b;
    b.v = scratch;
    b.m = b.v + z.v;
    b.mw = b.m + z.m;
    b.pad = b.mw + z.mw;
    b.t1 = b.pad + z.pad;
    b.t2 = b.t1 + z.t;
    return b;
}

/* ---- 1-D transforms over lanes --------------------------------------------
 * Each block reads rows in[r * is + t] and writes rows out[q * os + t] for
 * 16 lanes t; WINO_ROWS runs one over n lanes. They are inlined into the
 * cloned callers, so the 16-float vectors become one zmm, two ymm or four
 * xmm per the clone's ISA. */

#define WINO_INLINE static inline __attribute__((always_inline))

/* aligned(4) and may_alias: loads and stores from any float pointer. */
typedef float wino_v __attribute__((vector_size(WINO_LANES * sizeof(float)), aligned(4),
                                    may_alias));
#define WLOAD(p) (*(const wino_v *)(p))
#define WSTORE(p, v) (*(wino_v *)(p) = (v))
typedef float wino_v8 __attribute__((vector_size(8 * sizeof(float)), aligned(4), may_alias));
#define WLOAD8(p) (*(const wino_v8 *)(p))
#define WSTORE8(p, v) (*(wino_v8 *)(p) = (v))

/* Whole blocks in place; the tail (n not a multiple of 16) through
 * zero-padded copies, so nothing outside the n lanes is read or written. */
#define WINO_ROWS(block, rin, rout, in, is, out, os, n)                                     \
    do {                                                                                 \
        long t_ = 0;                                                                     \
        for (; t_ + WINO_LANES <= (n); t_ += WINO_LANES)                                 \
            block((in) + t_, (is), (out) + t_, (os));                                    \
        if (t_ < (n)) {                                                                  \
            float ti_[6 * WINO_LANES] = {0}, to_[6 * WINO_LANES];                        \
            size_t b_ = (size_t)((n) - t_) * sizeof(float);                              \
            for (int r_ = 0; r_ < (rin); r_++)                                           \
                memcpy(ti_ + r_ * WINO_LANES, (in) + r_ * (long)(is) + t_, b_);          \
            block(ti_, WINO_LANES, to_, WINO_LANES);                                     \
            for (int q_ = 0; q_ < (rout); q_++)                                          \
                memcpy((out) + q_ * (long)(os) + t_, to_ + q_ * WINO_LANES, b_);         \
        }                                                                                \
    } while (0)

/* out = B^T in (6 -> 6): the input tiles. */
WINO_INLINE void wino_bt_block(const float *in, long is, float *out, long os)
{
    wino_v d0 = WLOAD(in), d1 = WLOAD(in + is), d2 = WLOAD(in + 2 * is);
    wino_v d3 = WLOAD(in + 3 * is), d4 = WLOAD(in + 4 * is), d5 = WLOAD(in + 5 * is);
    WSTORE(out, 2.0f * d0 - 3.0f * d1 - 4.0f * d2 + 3.0f * d3 + 2.0f * d4);
    WSTORE(out + os, -2.0f * d1 + d2 + 5.0f * d3 + 2.0f * d4);
    WSTORE(out + 2 * os, -2.0f * d1 + 5.0f * d2 - d3 - 2.0f * d4);
    WSTORE(out + 3 * os, 2.0f * d1 + d2 - 2.0f * d3 - d4);
    WSTORE(out + 4 * os, d1 - 2.0f * d2 - d3 + 2.0f * d4);
    WSTORE(out + 5 * os, 2.0f * d1 - 3.0f * d2 - 4.0f * d3 + 3.0f * d4 + 2.0f * d5);
}

/* out = B in (6 -> 6): input-gradient tiles back from the transform domain
 * (column j of B^T above). */
WINO_INLINE void wino_b_block(const float *in, long is, float *out, long os)
{
    wino_v m0 = WLOAD(in), m1 = WLOAD(in + is), m2 = WLOAD(in + 2 * is);
    wino_v m3 = WLOAD(in + 3 * is), m4 = WLOAD(in + 4 * is), m5 = WLOAD(in + 5 * is);
    WSTORE(out, 2.0f * m0);
    WSTORE(out + os, -3.0f * m0 - 2.0f * m1 - 2.0f * m2 + 2.0f * m3 + m4 + 2.0f * m5);
    WSTORE(out + 2 * os, -4.0f * m0 + m1 + 5.0f * m2 + m3 - 2.0f * m4 - 3.0f * m5);
    WSTORE(out + 3 * os, 3.0f * m0 + 5.0f * m1 - m2 - 2.0f * m3 - m4 - 4.0f * m5);
    WSTORE(out + 4 * os, 2.0f * m0 + 2.0f * m1 - 2.0f * m2 - m3 + 2.0f * m4 + 3.0f * m5);
    WSTORE(out + 5 * os, 2.0f * m5);
}

/* out = A^T in (6 -> 2): products back to output tiles. */
WINO_INLINE void wino_at_block(const float *in, long is, float *out, long os)
{
    wino_v m0 = WLOAD(in), m1 = WLOAD(in + is), m2 = WLOAD(in + 2 * is);
    wino_v m3 = WLOAD(in + 3 * is), m4 = WLOAD(in + 4 * is), m5 = WLOAD(in + 5 * is);
    WSTORE(out, m0 + m1 + m2 + m3 + m4);
    WSTORE(out + os, m1 - m2 + 0.5f * m3 - 2.0f * m4 + m5);
}

/* out = A in (2 -> 6): output-gradient tiles into the transform domain. */
WINO_INLINE void wino_a_block(const float *in, long is, float *out, long os)
{
    wino_v a0 = WLOAD(in), a1 = WLOAD(in + is);
    WSTORE(out, a0);
    WSTORE(out + os, a0 + a1);
    WSTORE(out + 2 * os, a0 - a1);
    WSTORE(out + 3 * os, a0 + 0.5f * a1);
    WSTORE(out + 4 * os, a0 - 2.0f * a1);
    WSTORE(out + 5 * os, a1);
}

/* out = G in (5 -> 6): filters into the transform domain. */
WINO_INLINE void wino_g_block(const float *in, long is, float *out, long os)
{
    wino_v g0 = WLOAD(in), g1 = WLOAD(in + is), g2 = WLOAD(in + 2 * is);
    wino_v g3 = WLOAD(in + 3 * is), g4 = WLOAD(in + 4 * is);
    WSTORE(out, 0.5f * g0);
    WSTORE(out + os, (g0 + g1 + g2 + g3 + g4) * (1.0f / 6.0f));
    WSTORE(out + 2 * os, (g0 - g1 + g2 - g3 + g4) * (1.0f / 6.0f));
    WSTORE(out + 3 * os, (16.0f * g0 + 8.0f * g1 + 4.0f * g2 + 2.0f * g3 + g4) * (1.0f / 15.0f));
    WSTORE(out + 4 * os, (g0 - 2.0f * g1 + 4.0f * g2 - 8.0f * g3 + 16.0f * g4) * (1.0f / 30.0f));
    WSTORE(out + 5 * os, 0.5f * g4);
}

/* out = G^T in (6 -> 5): the weight gradient back from the transform domain. */
WINO_INLINE void wino_gt_block(const float *in, long is, float *out, long os)
{
    wino_v s0 = WLOAD(in), s1 = WLOAD(in + is), s2 = WLOAD(in + 2 * is);
    wino_v s3 = WLOAD(in + 3 * is), s4 = WLOAD(in + 4 * is), s5 = WLOAD(in + 5 * is);
    wino_v e = (s1 + s2) * (1.0f / 6.0f), o = (s1 - s2) * (1.0f / 6.0f);
    wino_v h = s3 * (1.0f / 15.0f), q = s4 * (1.0f / 30.0f);
    WSTORE(out, 0.5f * s0 + e + 16.0f * h + q);
    WSTORE(out + os, o + 8.0f * h - 2.0f * q);
    WSTORE(out + 2 * os, e + 4.0f * h + 4.0f * q);
    WSTORE(out + 3 * os, o + 2.0f * h - 8.0f * q);
    WSTORE(out + 4 * os, e + h + 16.0f * q + 0.5f * s5);
}

/* Whole blocks only, over n rounded up to 16 lanes: for rows whose
 * storage has room past n (wino_lanes; the chunk layout's slack). */
#define WINO_BLOCKS(block, in, is, out, os, n)                                              \
    do {                                                                                 \
        for (long t_ = 0; t_ < (n); t_ += WINO_LANES)                                    \
            block((in) + t_, (is), (out) + t_, (os));                                    \
    } while (0)

/* ---- plane transforms ---------------------------------------------------- */

/* The 36 transformed values of every tile of one input plane x (h, w):
 * point p of tile t goes to v[p * pstride + t]. The plane is first copied,
 * zero-padded, into its even and odd columns (pe, po: ph rows of tw + 2),
 * so that element (i, j) of the tiles of a tile row is one contiguous run. */
CPU_SIMD_CLONES
static void wino_input_plane(const wino_geom *g, const float *x, float *v, long pstride,
                             const wino_bufs *b)
{
    int T = g->tiles, L = wino_lanes(T), tw = g->tw, w2 = g->tw + 2;
    float *pe = b->pad, *po = pe + (long)g->ph * w2, *dt = b->t1, *et = b->t2;
    memset(pe, 0, 2 * (size_t)g->ph * w2 * sizeof *pe);
    int x0 = g->pad_left < 0 ? -g->pad_left : 0;
    int x1 = g->w < g->pw - g->pad_left ? g->w : g->pw - g->pad_left;
    for (int iy = 0; iy < g->h; iy++) {
        int py = iy + g->pad_top;
        if (py < 0 || py >= g->ph)
            continue;
        const float *src = x + (long)iy * g->w;
        /* Columns ix with px = ix + pad_left even go to pe, odd to po; each
         * set is every other ix, so two branch-free strided loops. */
        float *re = pe + (long)py * w2, *ro = po + (long)py * w2;
        int ie = x0 + ((x0 + g->pad_left) & 1), io = x0 + ((x0 + g->pad_left + 1) & 1);
        for (int ix = ie; ix < x1; ix += 2)
            re[(ix + g->pad_left) >> 1] = src[ix];
        for (int ix = io; ix < x1; ix += 2)
            ro[(ix + g->pad_left) >> 1] = src[ix];
    }
    /* dt[(i*6 + j) * T + t]: element (i, j) of tile t, copied 8 floats at
     * a time: a copy may run up to 7 floats past its tw, into the next
     * tile row or element written after it, or the slack at the end. */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            float *row = dt + (i * 6 + j) * L;
            const float *src = (j & 1 ? po : pe) + (j >> 1);
            for (int ty = 0; ty < g->th; ty++) {
                const float *sr = src + (long)(2 * ty + i) * w2;
                float *dst = row + ty * tw;
                for (int tx = 0; tx < tw; tx += 8)
                    WSTORE8(dst + tx, WLOAD8(sr + tx));
            }
        }
    for (int i = 0; i < 6; i++) /* along rows: et[(i*6 + q) * T] */
        WINO_BLOCKS(wino_bt_block, dt + i * 6 * L, L, et + i * 6 * L, L, T);
    for (int q = 0; q < 6; q++) /* along columns: point p*6 + q */
        WINO_BLOCKS(wino_bt_block, et + q * L, 6L * L, v + q * pstride, 6 * pstride, T);
}

/* One output plane y (oh, ow) from the products of its tiles (point p of
 * tile t at m[p * pstride + t]): y = act(A^T m A + bias). */
CPU_SIMD_CLONES
static void wino_output_plane(const wino_geom *g, const float *m, long pstride, float bias,
                              spec_activation act, float *y, const wino_bufs *b)
{
    int T = g->tiles, L = wino_lanes(T), tw = g->tw;
    float *ft = b->t1, *ot = b->t2;
    for (int i = 0; i < 6; i++) /* ft[(i*2 + jj) * L] */
        WINO_BLOCKS(wino_at_block, m + i * 6 * pstride, pstride, ft + i * 2 * L, L, T);
    for (int jj = 0; jj < 2; jj++) /* ot[(ii*2 + jj) * L] */
        WINO_BLOCKS(wino_at_block, ft + jj * L, 2L * L, ot + jj * L, 2L * L, T);
    for (int oy = 0; oy < g->oh; oy++) {
        float *row = y + (long)oy * g->ow;
        const float *o0 = ot + (oy & 1) * 2 * L + (oy >> 1) * tw, *o1 = o0 + L;
        int pairs = g->ow >> 1;
        for (int tx = 0; tx < pairs; tx++) {
            row[2 * tx] = o0[tx] + bias;
            row[2 * tx + 1] = o1[tx] + bias;
        }
        if (g->ow & 1)
            row[g->ow - 1] = o0[pairs] + bias;
    }
    cpu_activate(act, y, (long)g->oh * g->ow);
}

/* The 36 transformed values A dz A^T of every 2x2 tile of one output
 * gradient plane dz (oh, ow), to z[p * pstride + t]. */
CPU_SIMD_CLONES
static void wino_dz_plane(const wino_geom *g, const float *dz, float *z, long pstride,
                          const wino_bufs *b)
{
    int T = g->tiles, L = wino_lanes(T), tw = g->tw;
    float *dt = b->t1, *rt = b->t2;
    /* dt[(ii*2 + jj) * L + t]: element (ii, jj) of tile t, zero past the plane. */
    for (int ty = 0; ty < g->th; ty++)
        for (int ii = 0; ii < 2; ii++) {
            int oy = 2 * ty + ii;
            float *d0 = dt + (ii * 2) * L + ty * tw, *d1 = d0 + L;
            if (oy >= g->oh) {
                memset(d0, 0, (size_t)tw * sizeof *d0);
                memset(d1, 0, (size_t)tw * sizeof *d1);
                continue;
            }
            const float *src = dz + (long)oy * g->ow;
            int pairs = g->ow >> 1;
            for (int tx = 0; tx < pairs; tx++) {
                d0[tx] = src[2 * tx];
                d1[tx] = src[2 * tx + 1];
            }
            if (g->ow & 1) {
                d0[pairs] = src[g->ow - 1];
                d1[pairs] = 0.0f;
            }
        }
    for (int ii = 0; ii < 2; ii++) /* rt[(ii*6 + q) * L] */
        WINO_BLOCKS(wino_a_block, dt + ii * 2 * L, L, rt + ii * 6 * L, L, T);
    for (int q = 0; q < 6; q++)
        WINO_BLOCKS(wino_a_block, rt + q * L, 6L * L, z + q * pstride, 6 * pstride, T);
}

/* One input-gradient plane dx (h, w) from its tiles' products (point p
 * of tile t at m[p * pstride + t]): each tile's 6x6 gradient is B m B^T,
 * and overlapping tiles add up. They are summed into the zero-padded even
 * and odd column planes (as wino_input_plane reads them), where element
 * (i, j) of a tile row's tiles is one contiguous run, then dx (+)= the
 * plane's interior. */
CPU_SIMD_CLONES
static void wino_dx_plane(const wino_geom *g, const float *m, long pstride, bool accumulate,
                          float *dx, const wino_bufs *b)
{
    int T = g->tiles, L = wino_lanes(T), tw = g->tw, w2 = g->tw + 2;
    float *pe = b->pad, *po = pe + (long)g->ph * w2, *ft = b->t1, *ot = b->t2;
    for (int p = 0; p < 6; p++) /* along columns: ft[(p*6 + j) * L] */
        WINO_BLOCKS(wino_b_block, m + p * 6 * pstride, pstride, ft + p * 6 * L, L, T);
    for (int j = 0; j < 6; j++) /* along rows: ot[(i*6 + j) * L] */
        WINO_BLOCKS(wino_b_block, ft + j * L, 6L * L, ot + j * L, 6L * L, T);
    memset(pe, 0, 2 * (size_t)g->ph * w2 * sizeof *pe);
    /* 8 lanes at a time, the lanes past tw masked to +0 (a read-modify-
     * write of a neighbour or the slack that leaves it as it was). */
    typedef int wino_i8 __attribute__((vector_size(8 * sizeof(int))));
    const wino_i8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            const float *row = ot + (i * 6 + j) * L;
            float *dst = (j & 1 ? po : pe) + (j >> 1);
            for (int ty = 0; ty < g->th; ty++) {
                const float *sr = row + ty * tw;
                float *dr = dst + (long)(2 * ty + i) * w2;
                for (int tx = 0; tx < tw; tx += 8) {
                    wino_i8 keep = lane < tw - tx;
                    wino_v8 add = (wino_v8)((wino_i8)WLOAD8(sr + tx) & keep);
                    WSTORE8(dr + tx, WLOAD8(dr + tx) + add);
                }
            }
        }
    for (int iy = 0; iy < g->h; iy++) {
        long py = iy + g->pad_top;
        const float *re = pe + py * w2, *ro = po + py * w2;
        float *out = dx + (long)iy * g->w;
        int ie = (g->pad_left & 1), io = 1 - (g->pad_left & 1); /* first ix with px even, odd */
        if (accumulate) {
            for (int ix = ie; ix < g->w; ix += 2)
                out[ix] += re[(ix + g->pad_left) >> 1];
            for (int ix = io; ix < g->w; ix += 2)
                out[ix] += ro[(ix + g->pad_left) >> 1];
        } else {
            for (int ix = ie; ix < g->w; ix += 2)
                out[ix] = re[(ix + g->pad_left) >> 1];
            for (int ix = io; ix < g->w; ix += 2)
                out[ix] = ro[(ix + g->pad_left) >> 1];
        }
    }
}

CPU_SIMD_CLONES
void cpu_winograd_weights(const conv2d_desc *d, const float *w, long begin, long end,
                          float *u)
{
    enum { B = WINO_FILTER_BLOCK };
    long kc = (long)d->k * d->c;
    float gt[25 * B], rt[30 * B];
    for (long f0 = begin; f0 < end; f0 += B) {
        int n = end - f0 < B ? (int)(end - f0) : B;
        for (int l = 0; l < n; l++)
            for (int e = 0; e < 25; e++)
                gt[e * B + l] = w[(f0 + l) * 25 + e];
        for (int i = 0; i < 5; i++) /* rt[(i*6 + q) * B] */
            WINO_ROWS(wino_g_block, 5, 6, gt + i * 5 * B, B, rt + i * 6 * B, B, n);
        for (int q = 0; q < 6; q++)
            WINO_ROWS(wino_g_block, 5, 6, rt + q * B, 6L * B, u + q * kc + f0, 6 * kc, n);
    }
}

/* dw (k, c, 5, 5) = G^T mw G for every filter, mw (36, k, c). */
CPU_SIMD_CLONES
static void wino_weight_grad_out(const conv2d_desc *d, const float *mw, float *dw,
                                 const wino_bufs *b)
{
    enum { B = WINO_FILTER_BLOCK };
    long kc = (long)d->k * d->c;
    float *rt = b->t1, *ot = b->t2;
    for (long f0 = 0; f0 < kc; f0 += B) {
        int n = kc - f0 < B ? (int)(kc - f0) : B;
        for (int i = 0; i < 6; i++) /* rt[(i*5 + j) * B] */
            WINO_ROWS(wino_gt_block, 6, 5, mw + i * 6 * kc + f0, kc, rt + i * 5 * B, B, n);
        for (int j = 0; j < 5; j++) /* ot[(i*5 + j) * B] */
            WINO_ROWS(wino_gt_block, 6, 5, rt + j * B, 5L * B, ot + j * B, 5L * B, n);
        for (int l = 0; l < n; l++)
            for (int e = 0; e < 25; e++)
                dw[(f0 + l) * 25 + e] = ot[e * B + l];
    }
}

/* ---- passes ---------------------------------------------------------------- */

/* y = act(conv(x) + bias) for ns samples of geometry g: transform the
 * input tiles, one GEMM per point, transform back. u is (36, cout, cin). */
static void wino_conv_chunk(const wino_geom *g, int ns, const float *x, const float *u,
                            const float *bias, spec_activation act, float *y,
                            const wino_bufs *b)
{
    long T = g->tiles, N = ns * T;
    long xs = (long)g->h * g->w, ys = (long)g->oh * g->ow;
    long vstride = wino_point_stride(g->cin, N), mstride = wino_point_stride(g->cout, N);
    long ustride = (long)g->cin * g->cout;
    /* Planes in storage order: each one's whole-block overrun lands on the
     * next, written after it, or on the point's slack. */
    for (int c = 0; c < g->cin; c++)
        for (int s = 0; s < ns; s++)
            wino_input_plane(g, x + ((long)s * g->cin + c) * xs, b->v + c * N + s * T, vstride,
                             b);
    for (int p = 0; p < WINO_POINTS; p++)
        cpu_sgemm(false, false, g->cout, (int)N, g->cin, 1.0f, u + p * ustride, g->cin,
                  b->v + p * vstride, (int)N, 0.0f, b->m + p * mstride, (int)N);
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < g->cout; k++)
            wino_output_plane(g, b->m + k * N + s * T, mstride, bias ? bias[k] : 0.0f, act,
                              y + ((long)s * g->cout + k) * ys, b);
}

void cpu_winograd_forward(const conv2d_desc *d, int n, const float *x, const float *u,
                          const float *bias, spec_activation act, float *y, float *scratch)
{
    wino_geom g = wino_forward_geom(d);
    wino_bufs b = wino_bufs_of(d, scratch);
    int chunk = wino_chunk_samples(d);
    long xs = (long)d->c * d->h * d->w, ys = (long)d->k * d->oh * d->ow;
    for (int s0 = 0; s0 < n; s0 += chunk) {
        int ns = n - s0 < chunk ? n - s0 : chunk;
        wino_conv_chunk(&g, ns, x + s0 * xs, u, bias, act, y + s0 * ys, &b);
    }
}

void cpu_winograd_backward(const conv2d_desc *d, int n, const float *x, const float *u,
                           const float *dz, float *dx, bool accumulate, float *dw, float *db,
                           float *scratch)
{
    wino_geom g = wino_forward_geom(d);
    wino_bufs b = wino_bufs_of(d, scratch);
    int chunk = wino_chunk_samples(d);
    long hw = (long)d->h * d->w, xs = d->c * hw, ohw = (long)d->oh * d->ow, ys = d->k * ohw;
    long T = g.tiles;
    if (db)
        memset(db, 0, (size_t)d->k * sizeof *db);
    if (n <= 0) {
        memset(dw, 0, (size_t)d->k * d->c * 25 * sizeof *dw);
        return;
    }
    for (int s0 = 0; s0 < n; s0 += chunk) {
        int ns = n - s0 < chunk ? n - s0 : chunk;
        long N = ns * T, vstride = wino_point_stride(d->c, N);
        long zstride = wino_point_stride(d->k, N);
        const float *xb = x + s0 * xs, *dzb = dz + s0 * ys;
        /* Planes in storage order (see wino_conv_chunk). */
        for (int c = 0; c < d->c; c++)
            for (int s = 0; s < ns; s++)
                wino_input_plane(&g, xb + ((long)s * d->c + c) * hw, b.v + c * N + s * T,
                                 vstride, &b);
        for (int k = 0; k < d->k; k++)
            for (int s = 0; s < ns; s++) {
                const float *plane = dzb + ((long)s * d->k + k) * ohw;
                wino_dz_plane(&g, plane, b.m + k * N + s * T, zstride, &b);
                if (db)
                    db[k] += cpu_sum(plane, ohw);
            }
        /* mw_p (k, c) += z_p (k, N) @ v_p^T (N, c) */
        for (int p = 0; p < WINO_POINTS; p++)
            cpu_sgemm(false, true, d->k, d->c, (int)N, 1.0f, b.m + p * zstride, (int)N,
                      b.v + p * vstride, (int)N, s0 == 0 ? 0.0f : 1.0f,
                      b.mw + (long)p * d->k * d->c, d->c);
        if (!dx)
            continue;
        /* dx tiles: m2_p (c, N) = u_p^T (c, k) @ z_p (k, N), into v */
        for (int p = 0; p < WINO_POINTS; p++)
            cpu_sgemm(true, false, d->c, (int)N, d->k, 1.0f, u + (long)p * d->k * d->c, d->c,
                      b.m + p * zstride, (int)N, 0.0f, b.v + p * vstride, (int)N);
        for (int s = 0; s < ns; s++)
            for (int c = 0; c < d->c; c++)
                wino_dx_plane(&g, b.v + c * N + s * T, vstride, accumulate,
                              dx + (s0 + s) * xs + c * hw, &b);
    }
    wino_weight_grad_out(d, b.mw, dw, &b);
}
