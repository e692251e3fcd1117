/* cpu_pool.c — max and average 2-D pooling on the CPU, planes
 * (sample, channel) split across the pool's threads. Padded positions
 * never win a max and are not counted in an average. */
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

#include <float.h>
#include <string.h>

static long cpu_pool2d_prepare(backend *be, pool2d_desc *d)
{
    (void)be;
    if (d->oh <= 0 || d->ow <= 0 || d->c <= 0)
        return -1;
    return 0;
}

static void cpu_pool2d_release(backend *be, pool2d_desc *d)
{
    (void)be;
    d->impl = NULL;
}

typedef struct pool_job {
    const pool2d_desc *d;
    const float *x, *y, *dy;
    float *out;
    bool accumulate;
} pool_job;

/* The in-bounds window of output (oy, ox): rows [y0, y1), cols [x0, x1). */
static void pool_window(const pool2d_desc *d, int oy, int ox, int *y0, int *y1, int *x0,
                        int *x1)
{
    int ys = oy * d->stride_h - d->pad_top;
    int xs = ox * d->stride_w - d->pad_left;
    *y0 = ys < 0 ? 0 : ys;
    *x0 = xs < 0 ? 0 : xs;
    *y1 = ys + d->kh > d->h ? d->h : ys + d->kh;
    *x1 = xs + d->kw > d->w ? d->w : xs + d->kw;
}

/* 2x2 windows at stride 2 without padding (every preset's pooling): all
 * four inputs are in bounds, so no window arithmetic per output. */
static bool pool_is_2x2(const pool2d_desc *d)
{
    return d->kh == 2 && d->kw == 2 && d->stride_h == 2 && d->stride_w == 2 &&
           d->pad_top == 0 && d->pad_left == 0 && d->pad_bottom == 0 && d->pad_right == 0;
}

static void pool_forward_2x2(const pool2d_desc *d, const float *x, float *y)
{
    for (int oy = 0; oy < d->oh; oy++) {
        const float *r0 = x + (long)(2 * oy) * d->w;
        const float *r1 = r0 + d->w;
        float *out = y + (long)oy * d->ow;
        for (int ox = 0; ox < d->ow; ox++) {
            float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], e = r1[2 * ox + 1];
            if (d->mode == POOL_AVG) {
                out[ox] = (a + b + c + e) * 0.25f;
                continue;
            }
            float m = a > b ? a : b;
            float n = c > e ? c : e;
            out[ox] = m > n ? m : n;
        }
    }
}

/* dx of one plane, already zeroed or holding what to add to. Branch-free
 * (every input of a window gets g or 0), so the loops vectorise; adding
 * 0 leaves a value unchanged. */
static inline void pool_backward_2x2(const pool2d_desc *d, const float *x, const float *y,
                                     const float *dy, float *dx)
{
    for (int oy = 0; oy < d->oh; oy++) {
        const float *x0 = x + (long)(2 * oy) * d->w, *x1 = x0 + d->w;
        float *restrict d0 = dx + (long)(2 * oy) * d->w;
        float *restrict d1 = d0 + d->w;
        const float *ym = y + (long)oy * d->ow, *g = dy + (long)oy * d->ow;
        if (d->mode == POOL_AVG) {
            for (int ox = 0; ox < d->ow; ox++) {
                float q = g[ox] * 0.25f;
                d0[2 * ox] += q;
                d0[2 * ox + 1] += q;
                d1[2 * ox] += q;
                d1[2 * ox + 1] += q;
            }
            continue;
        }
        /* The first maximum in row-major order, as the general path. */
        for (int ox = 0; ox < d->ow; ox++) {
            float m = ym[ox];
            bool a = x0[2 * ox] == m;
            bool b = !a && x0[2 * ox + 1] == m;
            bool c = !a && !b && x1[2 * ox] == m;
            bool e = !a && !b && !c;
            d0[2 * ox] += a ? g[ox] : 0.0f;
            d0[2 * ox + 1] += b ? g[ox] : 0.0f;
            d1[2 * ox] += c ? g[ox] : 0.0f;
            d1[2 * ox + 1] += e ? g[ox] : 0.0f;
        }
    }
}

CPU_SIMD_CLONES
static void pool_forward_planes(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const pool_job *j = ctx;
    const pool2d_desc *d = j->d;
    if (pool_is_2x2(d)) {
        for (long p = begin; p < end; p++)
            pool_forward_2x2(d, j->x + p * d->h * d->w, j->out + p * d->oh * d->ow);
        return;
    }
    for (long p = begin; p < end; p++) {
        const float *x = j->x + p * d->h * d->w;
        float *y = j->out + p * d->oh * d->ow;
        for (int oy = 0; oy < d->oh; oy++) {
            for (int ox = 0; ox < d->ow; ox++) {
                int y0, y1, x0, x1;
                pool_window(d, oy, ox, &y0, &y1, &x0, &x1);
                float acc = d->mode == POOL_MAX ? -FLT_MAX : 0.0f;
                for (int iy = y0; iy < y1; iy++) {
                    const float *row = x + (long)iy * d->w;
                    for (int ix = x0; ix < x1; ix++) {
                        if (d->mode == POOL_MAX)
                            acc = row[ix] > acc ? row[ix] : acc;
                        else
                            acc += row[ix];
                    }
                }
                int count = (y1 - y0) * (x1 - x0);
                if (d->mode == POOL_AVG)
                    acc = count > 0 ? acc / (float)count : 0.0f;
                y[oy * d->ow + ox] = acc;
            }
        }
    }
}

static void cpu_pool2d_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                        float *y)
{
    pool_job j = {.d = d, .x = x, .out = y};
    pool_run(cpu_pool(be), (long)batch * d->c, pool_forward_planes, &j);
}

CPU_SIMD_CLONES
static void pool_backward_planes(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const pool_job *j = ctx;
    const pool2d_desc *d = j->d;
    for (long p = begin; p < end; p++) {
        const float *x = j->x + p * d->h * d->w;
        const float *y = j->y + p * d->oh * d->ow;
        const float *dy = j->dy + p * d->oh * d->ow;
        float *dx = j->out + p * d->h * d->w;
        if (!j->accumulate)
            memset(dx, 0, (size_t)d->h * d->w * sizeof *dx);
        if (pool_is_2x2(d)) {
            pool_backward_2x2(d, x, y, dy, dx);
            continue;
        }
        for (int oy = 0; oy < d->oh; oy++) {
            for (int ox = 0; ox < d->ow; ox++) {
                int y0, y1, x0, x1;
                pool_window(d, oy, ox, &y0, &y1, &x0, &x1);
                float g = dy[oy * d->ow + ox];
                if (d->mode == POOL_AVG) {
                    int count = (y1 - y0) * (x1 - x0);
                    if (count == 0)
                        continue;
                    g /= (float)count;
                    for (int iy = y0; iy < y1; iy++)
                        for (int ix = x0; ix < x1; ix++)
                            dx[(long)iy * d->w + ix] += g;
                    continue;
                }
                float m = y[oy * d->ow + ox];
                bool done = false;
                for (int iy = y0; iy < y1 && !done; iy++) {
                    for (int ix = x0; ix < x1; ix++) {
                        if (x[(long)iy * d->w + ix] == m) {
                            dx[(long)iy * d->w + ix] += g;
                            done = true;
                            break;
                        }
                    }
                }
            }
        }
    }
}

static void cpu_pool2d_backward(backend *be, const pool2d_desc *d, int batch, const float *x,
                         const float *y, const float *dy, float *dx, bool accumulate)
{
    pool_job j = {.d = d, .x = x, .y = y, .dy = dy, .out = dx, .accumulate = accumulate};
    pool_run(cpu_pool(be), (long)batch * d->c, pool_backward_planes, &j);
}

/* ---- relu fused into max pooling ------------------------------------
 * The layer before writes pre-activations; relu touches only the pooled
 * quarter, and the backward pass reads one byte per window instead of
 * re-finding the maximum in the full plane and then masking by relu'. */

typedef struct relu_pool_job {
    const pool2d_desc *d;
    const float *x, *y, *dy;
    float *out;
    const uint8_t *amax_in;
    uint8_t *amax;
    bool accumulate;
} relu_pool_job;

/* Whether the windows tile the plane exactly (2x2 at stride 2, no
 * padding, even sizes): then every dx element is written once. */
static bool pool_tiles_2x2(const pool2d_desc *d)
{
    return pool_is_2x2(d) && d->h == 2 * d->oh && d->w == 2 * d->ow;
}

static inline void relu_pool_fwd_2x2(const pool2d_desc *d, const float *x, float *y,
                                     uint8_t *amax)
{
    for (int oy = 0; oy < d->oh; oy++) {
        const float *r0 = x + (long)(2 * oy) * d->w, *r1 = r0 + d->w;
        float *out = y + (long)oy * d->ow;
        uint8_t *am = amax + (long)oy * d->ow;
        for (int ox = 0; ox < d->ow; ox++) {
            float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], e = r1[2 * ox + 1];
            /* Strictly greater keeps the first maximum. */
            float m = a;
            int i = 0;
            i = b > m ? 1 : i;
            m = b > m ? b : m;
            i = c > m ? 2 : i;
            m = c > m ? c : m;
            i = e > m ? 3 : i;
            m = e > m ? e : m;
            out[ox] = m > 0.0f ? m : 0.0f;
            am[ox] = (uint8_t)i;
        }
    }
}

static void relu_pool_fwd_general(const pool2d_desc *d, const float *x, float *y,
                                  uint8_t *amax)
{
    for (int oy = 0; oy < d->oh; oy++) {
        for (int ox = 0; ox < d->ow; ox++) {
            int y0, y1, x0, x1;
            pool_window(d, oy, ox, &y0, &y1, &x0, &x1);
            int ys = oy * d->stride_h - d->pad_top, xs = ox * d->stride_w - d->pad_left;
            float m = -FLT_MAX;
            int best = (y0 - ys) * d->kw + (x0 - xs);
            for (int iy = y0; iy < y1; iy++) {
                for (int ix = x0; ix < x1; ix++) {
                    float v = x[(long)iy * d->w + ix];
                    if (v > m) {
                        m = v;
                        best = (iy - ys) * d->kw + (ix - xs);
                    }
                }
            }
            y[(long)oy * d->ow + ox] = m > 0.0f ? m : 0.0f;
            amax[(long)oy * d->ow + ox] = (uint8_t)best;
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RELU_POOL_AVX512 1
#include <immintrin.h>

/* The tiled 2x2 case with AVX-512, 16 outputs at a time: the two input
 * rows deinterleaved into even and odd columns with permutes, the same
 * comparisons as relu_pool_fwd_2x2 lane-wise, masked tails. */
static inline __attribute__((always_inline, target("avx512f"))) __mmask16 relu_pool_mask(int n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

__attribute__((target("avx512f")))
static void relu_pool_fwd_tiled_avx512(const pool2d_desc *d, const float *x, float *y,
                                       uint8_t *amax)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                           26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int oy = 0; oy < d->oh; oy++) {
        const float *r0 = x + (long)(2 * oy) * d->w, *r1 = r0 + d->w;
        for (int ox = 0; ox < d->ow; ox += 16) {
            int n = d->ow - ox;
            __mmask16 mo = relu_pool_mask(n), ml = relu_pool_mask(2 * n);
            __mmask16 mh = relu_pool_mask(2 * n - 16 > 0 ? 2 * n - 16 : 0);
            __m512 p0 = _mm512_maskz_loadu_ps(ml, r0 + 2 * ox);
            __m512 p1 = _mm512_maskz_loadu_ps(mh, r0 + 2 * ox + 16);
            __m512 q0 = _mm512_maskz_loadu_ps(ml, r1 + 2 * ox);
            __m512 q1 = _mm512_maskz_loadu_ps(mh, r1 + 2 * ox + 16);
            __m512 a = _mm512_permutex2var_ps(p0, even, p1);
            __m512 b = _mm512_permutex2var_ps(p0, odd, p1);
            __m512 c = _mm512_permutex2var_ps(q0, even, q1);
            __m512 e = _mm512_permutex2var_ps(q0, odd, q1);
            __m512 m = a;
            __m512i i = _mm512_setzero_si512();
            __mmask16 k = _mm512_cmp_ps_mask(b, m, _CMP_GT_OQ);
            i = _mm512_mask_mov_epi32(i, k, _mm512_set1_epi32(1));
            m = _mm512_mask_mov_ps(m, k, b);
            k = _mm512_cmp_ps_mask(c, m, _CMP_GT_OQ);
            i = _mm512_mask_mov_epi32(i, k, _mm512_set1_epi32(2));
            m = _mm512_mask_mov_ps(m, k, c);
            k = _mm512_cmp_ps_mask(e, m, _CMP_GT_OQ);
            i = _mm512_mask_mov_epi32(i, k, _mm512_set1_epi32(3));
            m = _mm512_mask_mov_ps(m, k, e);
            /* m > 0 ? m : 0, as the scalar code (max would keep -0). */
            m = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ), m);
            _mm512_mask_storeu_ps(y + (long)oy * d->ow + ox, mo, m);
            _mm512_mask_cvtepi32_storeu_epi8(amax + (long)oy * d->ow + ox, mo, i);
        }
    }
}

__attribute__((target("avx512f")))
static void relu_pool_bwd_tiled_avx512(const pool2d_desc *d, const uint8_t *amax,
                                       const float *y, const float *dy, float *dx,
                                       bool accumulate)
{
    /* lo: a0 b0 a1 b1 ... a7 b7; hi: a8 b8 ... a15 b15 (b = second operand). */
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7,
                                         23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    for (int oy = 0; oy < d->oh; oy++) {
        float *d0 = dx + (long)(2 * oy) * d->w, *d1 = d0 + d->w;
        for (int ox = 0; ox < d->ow; ox += 16) {
            int n = d->ow - ox;
            __mmask16 mo = relu_pool_mask(n), ml = relu_pool_mask(2 * n);
            __mmask16 mh = relu_pool_mask(2 * n - 16 > 0 ? 2 * n - 16 : 0);
            long o = (long)oy * d->ow + ox;
            uint8_t bytes[16] = {0};
            memcpy(bytes, amax + o, (size_t)(n < 16 ? n : 16));
            __m512i i = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)bytes));
            __m512 yv = _mm512_maskz_loadu_ps(mo, y + o);
            __mmask16 pos = _mm512_cmp_ps_mask(yv, _mm512_setzero_ps(), _CMP_GT_OQ);
            __m512 g = _mm512_maskz_loadu_ps(mo & pos, dy + o);
            __m512 a = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(i, _mm512_set1_epi32(0)), g);
            __m512 b = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(i, _mm512_set1_epi32(1)), g);
            __m512 c = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(i, _mm512_set1_epi32(2)), g);
            __m512 e = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(i, _mm512_set1_epi32(3)), g);
            __m512 t0 = _mm512_permutex2var_ps(a, lo, b), t1 = _mm512_permutex2var_ps(a, hi, b);
            __m512 u0 = _mm512_permutex2var_ps(c, lo, e), u1 = _mm512_permutex2var_ps(c, hi, e);
            float *p0 = d0 + 2 * ox, *p1 = d1 + 2 * ox;
            if (accumulate) {
                t0 = _mm512_add_ps(_mm512_maskz_loadu_ps(ml, p0), t0);
                t1 = _mm512_add_ps(_mm512_maskz_loadu_ps(mh, p0 + 16), t1);
                u0 = _mm512_add_ps(_mm512_maskz_loadu_ps(ml, p1), u0);
                u1 = _mm512_add_ps(_mm512_maskz_loadu_ps(mh, p1 + 16), u1);
            }
            _mm512_mask_storeu_ps(p0, ml, t0);
            _mm512_mask_storeu_ps(p0 + 16, mh, t1);
            _mm512_mask_storeu_ps(p1, ml, u0);
            _mm512_mask_storeu_ps(p1 + 16, mh, u1);
        }
    }
}

static bool relu_pool_avx512(const pool2d_desc *d)
{
    return pool_tiles_2x2(d) && __builtin_cpu_supports("avx512f");
}
#else
#define RELU_POOL_AVX512 0
#endif

CPU_SIMD_CLONES
static void relu_pool_forward_planes(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const relu_pool_job *j = ctx;
    const pool2d_desc *d = j->d;
    long in = (long)d->h * d->w, on = (long)d->oh * d->ow;
#if RELU_POOL_AVX512
    if (relu_pool_avx512(d)) {
        for (long p = begin; p < end; p++)
            relu_pool_fwd_tiled_avx512(d, j->x + p * in, j->out + p * on, j->amax + p * on);
        return;
    }
#endif
    for (long p = begin; p < end; p++) {
        if (pool_is_2x2(d))
            relu_pool_fwd_2x2(d, j->x + p * in, j->out + p * on, j->amax + p * on);
        else
            relu_pool_fwd_general(d, j->x + p * in, j->out + p * on, j->amax + p * on);
    }
}

static void cpu_relu_maxpool_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                              float *y, uint8_t *argmax)
{
    relu_pool_job j = {.d = d, .x = x, .out = y, .amax = argmax};
    pool_run(cpu_pool(be), (long)batch * d->c, relu_pool_forward_planes, &j);
}

/* One plane when the windows tile it: each dx element is set (or added
 * to) once, with g or 0, branch-free. */
static inline void relu_pool_bwd_2x2(const pool2d_desc *d, const uint8_t *amax,
                                     const float *y, const float *dy, float *dx,
                                     bool accumulate)
{
    for (int oy = 0; oy < d->oh; oy++) {
        float *restrict d0 = dx + (long)(2 * oy) * d->w;
        float *restrict d1 = d0 + d->w;
        const float *ym = y + (long)oy * d->ow, *gr = dy + (long)oy * d->ow;
        const uint8_t *am = amax + (long)oy * d->ow;
        for (int ox = 0; ox < d->ow; ox++) {
            float g = ym[ox] > 0.0f ? gr[ox] : 0.0f;
            int i = am[ox];
            float a = i == 0 ? g : 0.0f, b = i == 1 ? g : 0.0f;
            float c = i == 2 ? g : 0.0f, e = i == 3 ? g : 0.0f;
            if (accumulate) {
                d0[2 * ox] += a;
                d0[2 * ox + 1] += b;
                d1[2 * ox] += c;
                d1[2 * ox + 1] += e;
            } else {
                d0[2 * ox] = a;
                d0[2 * ox + 1] = b;
                d1[2 * ox] = c;
                d1[2 * ox + 1] = e;
            }
        }
    }
}

/* Any geometry: dx already zeroed or holding what to add to. */
static void relu_pool_bwd_general(const pool2d_desc *d, const uint8_t *amax, const float *y,
                                  const float *dy, float *dx)
{
    for (int oy = 0; oy < d->oh; oy++) {
        for (int ox = 0; ox < d->ow; ox++) {
            long o = (long)oy * d->ow + ox;
            if (!(y[o] > 0.0f))
                continue;
            int iy = oy * d->stride_h - d->pad_top + amax[o] / d->kw;
            int ix = ox * d->stride_w - d->pad_left + amax[o] % d->kw;
            dx[(long)iy * d->w + ix] += dy[o];
        }
    }
}

/* The backward half of relu_pool_forward_planes, with the same AVX-512
 * dispatch: a deliberate forward/backward pair (as every op of the seam),
 * each pass's plane loop whole in one function. */
CPU_SIMD_CLONES
static void relu_pool_backward_planes(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const relu_pool_job *j = ctx;
    const pool2d_desc *d = j->d;
    long in = (long)d->h * d->w, on = (long)d->oh * d->ow;
#if RELU_POOL_AVX512
    if (relu_pool_avx512(d)) {
        for (long p = begin; p < end; p++)
            relu_pool_bwd_tiled_avx512(d, j->amax_in + p * on, j->y + p * on, j->dy + p * on,
                                       j->out + p * in, j->accumulate);
        return;
    }
#endif
    for (long p = begin; p < end; p++) {
        const uint8_t *am = j->amax_in + p * on;
        float *dx = j->out + p * in;
        if (pool_tiles_2x2(d)) {
            relu_pool_bwd_2x2(d, am, j->y + p * on, j->dy + p * on, dx, j->accumulate);
            continue;
        }
        if (!j->accumulate)
            memset(dx, 0, (size_t)in * sizeof *dx);
        relu_pool_bwd_general(d, am, j->y + p * on, j->dy + p * on, dx);
    }
}

static void cpu_relu_maxpool_backward(backend *be, const pool2d_desc *d, int batch,
                               const uint8_t *argmax, const float *y, const float *dy,
                               float *dx, bool accumulate)
{
    relu_pool_job j = {.d = d, .y = y, .dy = dy, .out = dx, .amax_in = argmax,
                       .accumulate = accumulate};
    pool_run(cpu_pool(be), (long)batch * d->c, relu_pool_backward_planes, &j);
}

/* Sets this file's ops of backend.h on be. */
void cpu_pool_register(backend *be)
{
    be->pool2d_prepare = cpu_pool2d_prepare;
    be->pool2d_release = cpu_pool2d_release;
    be->pool2d_forward = cpu_pool2d_forward;
    be->pool2d_backward = cpu_pool2d_backward;
    be->relu_maxpool_forward = cpu_relu_maxpool_forward;
    be->relu_maxpool_backward = cpu_relu_maxpool_backward;
}
