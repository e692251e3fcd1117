/* cpu_rnn.c — LSTM and GRU over whole sequences on the CPU (backend.h's
 * rnn_* ops), the reference the cuDNN path will be tested against.
 *
 * Why it is shaped this way:
 * - The input projection x W of every step of every sample is one GEMM
 *   (batch * T rows) before the recurrence; in backward the kernel gradient
 *   and dx are one GEMM each after it. Only h R must run step by step.
 *   Padding rows ride along: their projections are never used and their
 *   gradient rows are zero, so x's padding adds nothing to dw (it is zero,
 *   or at least finite, by the layers' contract) and dx gets exact zeros.
 * - Samples are ordered by length, longest first (as PyTorch's packed
 *   sequences), so the samples still running at step s are a prefix of
 *   that order: the per-step GEMM covers exactly them, and padding steps
 *   cost nothing and are never read.
 * - The saved states are step-major in that order ((T+1, batch, U), state
 *   0 zero), so h_{s-1} of the running samples is one contiguous matrix,
 *   and the recurrent kernel's gradient is a single GEMM over all steps.
 * - The gate arithmetic is one fused pass per step over the running rows,
 *   split over the pool; every element is computed by one thread in a
 *   fixed order, so results are bit-identical run after run.
 * - Token ids (one_hot) replace the projection GEMM with a row gather and
 *   the kernel's gradient GEMM with a scatter-add of the real steps' rows.
 *   The scatter splits W's columns over the threads and adds rows in
 *   sample-then-step order, so each element sums in one order whatever the
 *   thread count: bit-identical across thread counts, with no atomics. */
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Below this many gate elements a step's fused pass runs on the caller. */
#define RNN_MIN_PARALLEL 4096L

/* Per-call sample order, sized at prepare so forward/backward never
 * allocate. */
typedef struct rnn_plan {
    int *len;     /* (max_batch) each sample's length, clamped to [1, T] */
    int *order;   /* (max_batch) sample of slot j, longest first, stable */
    int *slot;    /* (max_batch) slot of sample n (order's inverse) */
    int *active;  /* (T) slots running at step s: a prefix of order */
    int *count;   /* (T + 1) counting-sort buckets */
} rnn_plan;

static int rnn_gates(const rnn_desc *d)
{
    return d->mode == RNN_LSTM ? 4 * d->units : 3 * d->units;
}

/* Fill the plan for this call; returns the longest length. */
static int rnn_plan_fill(const rnn_desc *d, int batch, const int32_t *lengths)
{
    rnn_plan *p = d->impl;
    int T = d->steps;
    memset(p->count, 0, (size_t)(T + 1) * sizeof *p->count);
    for (int n = 0; n < batch; n++) {
        int L = lengths ? lengths[n] : T;
        L = L < 1 ? 1 : L > T ? T : L;
        p->len[n] = L;
        p->count[L]++;
    }
    /* Bucket starts, longest lengths first. */
    int at = 0;
    for (int L = T; L >= 1; L--) {
        int c = p->count[L];
        p->count[L] = at;
        at += c;
    }
    for (int n = 0; n < batch; n++) {
        int j = p->count[p->len[n]]++;
        p->order[j] = n;
        p->slot[n] = j;
    }
    int j = batch;
    for (int s = 0; s < T; s++) {
        while (j > 0 && p->len[p->order[j - 1]] <= s)
            j--;
        p->active[s] = j;
    }
    return p->len[p->order[0]];
}

/* Aux layout for `batch` samples: H (T+1, batch, U) first, C likewise (lstm),
 * A (T, batch, 4U): per step the activated gates (lstm i f g o; gru z r hh
 * and, in the 4th block, h'R_h + rb_h or r*h'), overwritten by backward
 * with the pre-activation gradients the recurrent GEMMs need. */
static float *rnn_aux_c(const rnn_desc *d, int batch, float *aux)
{
    return aux + (long)(d->steps + 1) * batch * d->units;
}

static float *rnn_aux_a(const rnn_desc *d, int batch, float *aux)
{
    int blocks = d->mode == RNN_LSTM ? 2 : 1;
    return aux + (long)blocks * (d->steps + 1) * batch * d->units;
}

static long cpu_rnn_prepare(backend *be, rnn_desc *d)
{
    (void)be;
    if (d->max_batch < 1 || d->steps < 1 || d->in < 1 || d->units < 1)
        return -1;
    long B = d->max_batch, T = d->steps, U = d->units;
    rnn_plan *p = calloc(1, sizeof *p);
    int *ints = calloc((size_t)(3 * B + 2 * T + 1), sizeof *ints);
    if (!p || !ints) {
        free(p);
        free(ints);
        return -1;
    }
    p->len = ints;
    p->order = ints + B;
    p->slot = ints + 2 * B;
    p->active = ints + 3 * B;
    p->count = ints + 3 * B + T;
    d->impl = p;
    int blocks = d->mode == RNN_LSTM ? 2 : 1;
    d->aux_floats = blocks * (T + 1) * B * U + T * B * 4 * U;
    /* The projections (backward: their gradients), then backward's dh and
     * dc carries and gru's d(r h'). */
    return B * T * rnn_gates(d) + 3 * B * U;
}

static void cpu_rnn_release(backend *be, rnn_desc *d)
{
    (void)be;
    rnn_plan *p = d->impl;
    if (p)
        free(p->len);
    free(p);
    d->impl = NULL;
}

/* The gate functions, written so the gate loops vectorise: glibc's expf
 * and tanhf are one call per element, most of an LSTM step's element-wise
 * time. Every selection is done on the bits (a float comparison keeps GCC
 * from if-converting the loop under the default -ftrapping-math), and only
 * IEEE operations in a fixed order are used, so every SIMD clone gives
 * the same bits. Absolute error against double precision below 1e-7 over
 * [-100, 100]; NaN stays NaN. */
static inline int32_t rnn_bits(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

static inline float rnn_float(int32_t i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

/* e^a for a <= 0: a = n ln2 + r, |r| <= ln2/2 (n rounded by the 1.5 * 2^23
 * trick, ln2 split in two so r is exact), e^r by its degree-6 Taylor
 * polynomial (relative error below 1.2e-7 there), 2^n in the exponent
 * bits; 0 below 2^-126. */
static inline float rnn_exp_neg(float a)
{
    float t = a * 1.44269504f;
    float kf = t + 12582912.0f;
    float fn = kf - 12582912.0f;
    int32_t n = rnn_bits(kf) - 0x4B400000;
    float r = (a - fn * 0.693145751953125f) - fn * 1.428606765330187e-6f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t nan = (rnn_bits(a) & 0x7fffffff) > 0x7f800000;
    int32_t keep = n >= -126 || nan ? -1 : 0;
    int32_t nn = n >= -126 ? n : -126;
    float v = p * rnn_float((int32_t)((uint32_t)(nn + 127) << 23));
    return rnn_float(rnn_bits(v) & keep);
}

/* 1 / (1 + e^-x) from e = e^-|x|, so nothing overflows. */
static inline float rnn_sigmoid(float x)
{
    float e = rnn_exp_neg(-fabsf(x));
    float pos = 1.0f / (1.0f + e), neg = e * pos;
    int32_t m = rnn_bits(x) >> 31; /* all ones when x < 0 */
    return rnn_float((rnn_bits(pos) & ~m) | (rnn_bits(neg) & m));
}

static inline float rnn_tanh(float x)
{
    float e = rnn_exp_neg(-2.0f * fabsf(x));
    return copysignf((1.0f - e) / (1.0f + e), x);
}

/* One step's fused pass, forward or backward, over slots [begin, end). */
typedef struct rnn_step {
    const rnn_desc *d;
    const rnn_plan *p;
    int batch, s;
    const float *bias;        /* forward */
    const float *pre;         /* forward: (batch, T, G) projections */
    float *dpre;              /* backward: (batch, T, G) their gradients */
    const float *hp, *cp;     /* state before the step (slot rows) */
    float *hn, *cn;           /* state after the step */
    float *a;                 /* (batch, 4U) this step's gates */
    float *dh, *dc, *tmp;     /* backward carries, (batch, U) */
    const float *dy;          /* backward */
    int ldy;
} rnn_step;

/* The input step a slot reads at processing step s. */
static inline long rnn_row(const rnn_step *k, int j)
{
    int n = k->p->order[j], L = k->p->len[n];
    int t = k->d->go_backwards ? L - 1 - k->s : k->s;
    return (long)n * k->d->steps + t;
}

/* One slot's LSTM step: a holds h'R (4U) on entry, the gates on return. */
CPU_SIMD_CLONES
static void rnn_lstm_fwd_row(int U, float *restrict a, const float *restrict x,
                             const float *restrict b, const float *restrict cp,
                             float *restrict cn, float *restrict hn)
{
    for (int u = 0; u < U; u++) {
        float i = rnn_sigmoid(a[u] + x[u] + b[u]);
        float f = rnn_sigmoid(a[U + u] + x[U + u] + b[U + u]);
        float g = rnn_tanh(a[2 * U + u] + x[2 * U + u] + b[2 * U + u]);
        float o = rnn_sigmoid(a[3 * U + u] + x[3 * U + u] + b[3 * U + u]);
        float c = f * cp[u] + i * g;
        a[u] = i;
        a[U + u] = f;
        a[2 * U + u] = g;
        a[3 * U + u] = o;
        cn[u] = c;
        hn[u] = o * rnn_tanh(c);
    }
}

static void rnn_lstm_fwd(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_step *k = ctx;
    int U = k->d->units;
    for (long j = begin; j < end; j++)
        rnn_lstm_fwd_row(U, k->a + j * 4 * U, k->pre + rnn_row(k, (int)j) * 4 * U, k->bias,
                         k->cp + j * U, k->cn + j * U, k->hn + j * U);
}

/* gru, reset_after: a holds h'R (3U) on entry. */
static void rnn_gru_fwd_after(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_step *k = ctx;
    int U = k->d->units;
    const float *b = k->bias, *rb = k->bias + 3 * U;
    for (long j = begin; j < end; j++) {
        float *a = k->a + j * 4 * U;
        const float *x = k->pre + rnn_row(k, (int)j) * 3 * U;
        const float *hp = k->hp + j * U;
        float *hn = k->hn + j * U;
        for (int u = 0; u < U; u++) {
            float z = rnn_sigmoid(x[u] + b[u] + a[u] + rb[u]);
            float r = rnn_sigmoid(x[U + u] + b[U + u] + a[U + u] + rb[U + u]);
            float rh = a[2 * U + u] + rb[2 * U + u];
            float hh = rnn_tanh(x[2 * U + u] + b[2 * U + u] + r * rh);
            a[u] = z;
            a[U + u] = r;
            a[2 * U + u] = hh;
            a[3 * U + u] = rh;
            hn[u] = z * hp[u] + (1.0f - z) * hh;
        }
    }
}

/* gru, reset before the product, in two passes over rows [begin, end)
 * around the candidate's GEMM. The gates pass: a holds h'R_zr (2U) on
 * entry and leaves z, r and r*h' for the GEMM; the state pass, with
 * a[2U..3U) then holding (r*h')R_h, the candidate and the new state. */
static void rnn_gru_fwd_rows(const rnn_step *k, long begin, long end, bool state)
{
    int U = k->d->units;
    const float *b = k->bias;
    for (long j = begin; j < end; j++) {
        float *a = k->a + j * 4 * U;
        const float *x = k->pre + rnn_row(k, (int)j) * 3 * U;
        const float *hp = k->hp + j * U;
        float *hn = k->hn + j * U;
        for (int u = 0; u < U && !state; u++) {
            float z = rnn_sigmoid(x[u] + b[u] + a[u]);
            float r = rnn_sigmoid(x[U + u] + b[U + u] + a[U + u]);
            a[u] = z;
            a[U + u] = r;
            a[3 * U + u] = r * hp[u];
        }
        for (int u = 0; u < U && state; u++) {
            float z = a[u];
            float hh = rnn_tanh(x[2 * U + u] + b[2 * U + u] + a[2 * U + u]);
            a[2 * U + u] = hh;
            hn[u] = z * hp[u] + (1.0f - z) * hh;
        }
    }
}

static void rnn_gru_fwd_gates(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    rnn_gru_fwd_rows(ctx, begin, end, false);
}

static void rnn_gru_fwd_state(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    rnn_gru_fwd_rows(ctx, begin, end, true);
}

static void rnn_parallel(backend *be, int rows, int units, pool_fn fn, void *ctx)
{
    if ((long)rows * units < RNN_MIN_PARALLEL || be->threads == 1)
        fn(ctx, 0, rows, 0);
    else
        pool_run(cpu_pool(be), rows, fn, ctx);
}

typedef struct rnn_out_job {
    const rnn_desc *d;
    const rnn_plan *p;
    int batch;
    const float *h;   /* aux H */
    float *y;
    int ldy;
} rnn_out_job;

/* Copy each sample's states into y in its order, zeros at padding rows. */
static void rnn_output(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_out_job *o = ctx;
    const rnn_desc *d = o->d;
    int T = d->steps, U = d->units;
    size_t row = (size_t)U * sizeof(float);
    for (long n = begin; n < end; n++) {
        int L = o->p->len[n], j = o->p->slot[n];
        if (!d->return_sequences) {
            memcpy(o->y + n * o->ldy, o->h + ((long)L * o->batch + j) * U, row);
            continue;
        }
        for (int s = 0; s < L; s++) {
            int t = d->time_order && d->go_backwards ? L - 1 - s : s;
            memcpy(o->y + ((long)n * T + t) * o->ldy,
                   o->h + ((long)(s + 1) * o->batch + j) * U, row);
        }
        for (int t = L; t < T; t++)
            memset(o->y + ((long)n * T + t) * o->ldy, 0, row);
    }
}

/* Row of W a token id selects, or -1 for anything outside [0, V) (NaN
 * included), checked before the conversion so no id can index outside W. */
static inline long rnn_token(float id, int V)
{
    return id >= 0.0f && id < (float)V ? (long)id : -1;
}

typedef struct rnn_onehot_job {
    const rnn_desc *d;
    const rnn_plan *p;
    int batch;
    const float *ids; /* (batch, T) */
    const float *src; /* gather: W (V, G); scatter: dpre (batch, T, G) */
    float *dst;       /* gather: pre (batch, T, G); scatter: dW (V, G) */
} rnn_onehot_job;

/* pre rows [begin, end) = W[id]: x W for a one-hot x. */
static void rnn_gather(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_onehot_job *o = ctx;
    int V = o->d->in;
    size_t G = (size_t)rnn_gates(o->d);
    for (long row = begin; row < end; row++) {
        long id = rnn_token(o->ids[row], V);
        if (id < 0)
            memset(o->dst + row * G, 0, G * sizeof(float));
        else
            memcpy(o->dst + row * G, o->src + id * G, G * sizeof(float));
    }
}

/* dW[:, begin:end) = sum of dpre rows of the real steps into their ids'
 * rows (x^T dpre for a one-hot x), in a fixed order. */
static void rnn_scatter(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_onehot_job *o = ctx;
    int T = o->d->steps, V = o->d->in;
    long G = rnn_gates(o->d);
    for (int n = 0; n < o->batch; n++)
        for (int t = 0; t < o->p->len[n]; t++) {
            long row = (long)n * T + t, id = rnn_token(o->ids[row], V);
            if (id < 0)
                continue;
            const float *src = o->src + row * G;
            float *dst = o->dst + id * G;
            for (long g = begin; g < end; g++)
                dst[g] += src[g];
        }
}

static void cpu_rnn_forward(backend *be, const rnn_desc *d, int batch, const int32_t *lengths,
                     const float *x, const float *w, const float *r, const float *bias,
                     float *y, int ldy, float *aux, float *workspace)
{
    const rnn_plan *p = d->impl;
    int T = d->steps, F = d->in, U = d->units, G = rnn_gates(d);
    int steps = rnn_plan_fill(d, batch, lengths);
    float *h = aux, *c = rnn_aux_c(d, batch, aux);
    float *a = rnn_aux_a(d, batch, aux);
    float *pre = workspace;
    long rows = (long)batch * U;
    if (d->one_hot) {
        rnn_onehot_job o = {d, p, batch, x, w, pre};
        rnn_parallel(be, batch * T, G, rnn_gather, &o);
    } else {
        be->gemm(be, false, false, batch * T, G, F, 1.0f, x, F, w, G, 0.0f, pre, G);
    }
    memset(h, 0, (size_t)rows * sizeof *h);
    if (d->mode == RNN_LSTM)
        memset(c, 0, (size_t)rows * sizeof *c);
    for (int s = 0; s < steps; s++) {
        int B = p->active[s];
        rnn_step k = {.d = d, .p = p, .batch = batch, .s = s, .bias = bias, .pre = pre,
                      .hp = h + s * rows, .hn = h + (s + 1) * rows,
                      .cp = c + s * rows, .cn = c + (s + 1) * rows,
                      .a = a + (long)s * batch * 4 * U};
        if (d->mode == RNN_LSTM) {
            be->gemm(be, false, false, B, G, U, 1.0f, k.hp, U, r, G, 0.0f, k.a, 4 * U);
            rnn_parallel(be, B, 4 * U, rnn_lstm_fwd, &k);
        } else if (d->reset_after) {
            be->gemm(be, false, false, B, G, U, 1.0f, k.hp, U, r, G, 0.0f, k.a, 4 * U);
            rnn_parallel(be, B, 3 * U, rnn_gru_fwd_after, &k);
        } else {
            be->gemm(be, false, false, B, 2 * U, U, 1.0f, k.hp, U, r, G, 0.0f, k.a, 4 * U);
            rnn_parallel(be, B, 2 * U, rnn_gru_fwd_gates, &k);
            be->gemm(be, false, false, B, U, U, 1.0f, k.a + 3 * U, 4 * U, r + 2 * U, G, 0.0f,
                     k.a + 2 * U, 4 * U);
            rnn_parallel(be, B, U, rnn_gru_fwd_state, &k);
        }
        /* Finished samples' rows stay finite (zero) for backward's GEMM
         * over all steps, which multiplies them by zero gradients. */
        memset(k.hn + (long)B * U, 0, (size_t)(batch - B) * U * sizeof *h);
        if (d->mode == RNN_LSTM)
            memset(k.cn + (long)B * U, 0, (size_t)(batch - B) * U * sizeof *c);
    }
    rnn_out_job o = {d, p, batch, h, y, ldy};
    rnn_parallel(be, batch, T * U, rnn_output, &o);
}

/* dL/dh of slot j at step s: the carry plus dy where this step is an output. */
static inline const float *rnn_dy_row(const rnn_step *k, int j)
{
    int n = k->p->order[j], L = k->p->len[n];
    if (!k->d->return_sequences)
        return k->s == L - 1 ? k->dy + (long)n * k->ldy : NULL;
    int t = k->d->time_order && k->d->go_backwards ? L - 1 - k->s : k->s;
    return k->dy + ((long)n * k->d->steps + t) * k->ldy;
}

/* One slot's LSTM step backward: dh, dc carry in and out; the gates in a
 * become the pre-activation gradients, also written to the slot's input
 * row dp. dy may be NULL (no output at this step). */
CPU_SIMD_CLONES
static void rnn_lstm_bwd_row(int U, float *restrict a, float *restrict dp,
                             const float *restrict dy, const float *restrict c,
                             const float *restrict cp, float *restrict dh,
                             float *restrict dc)
{
    for (int u = 0; u < U; u++) {
        float i = a[u], f = a[U + u], g = a[2 * U + u], o = a[3 * U + u];
        float gh = dh[u] + (dy ? dy[u] : 0.0f);
        float tc = rnn_tanh(c[u]);
        float dcu = dc[u] + gh * o * (1.0f - tc * tc);
        float di = dcu * g * i * (1.0f - i);
        float df = dcu * cp[u] * f * (1.0f - f);
        float dg = dcu * i * (1.0f - g * g);
        float dO = gh * tc * o * (1.0f - o);
        dc[u] = dcu * f;
        dh[u] = 0.0f; /* the recurrent GEMM adds dz R^T */
        a[u] = dp[u] = di;
        a[U + u] = dp[U + u] = df;
        a[2 * U + u] = dp[2 * U + u] = dg;
        a[3 * U + u] = dp[3 * U + u] = dO;
    }
}

static void rnn_lstm_bwd(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_step *k = ctx;
    int U = k->d->units;
    for (long j = begin; j < end; j++)
        rnn_lstm_bwd_row(U, k->a + j * 4 * U, k->dpre + rnn_row(k, (int)j) * 4 * U,
                         rnn_dy_row(k, (int)j), k->cn + j * U, k->cp + j * U,
                         k->dh + j * U, k->dc + j * U);
}

static void rnn_gru_bwd_after(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_step *k = ctx;
    int U = k->d->units;
    for (long j = begin; j < end; j++) {
        float *a = k->a + j * 4 * U;
        float *dp = k->dpre + rnn_row(k, (int)j) * 3 * U;
        const float *dy = rnn_dy_row(k, (int)j);
        const float *hp = k->hp + j * U;
        float *dh = k->dh + j * U;
        for (int u = 0; u < U; u++) {
            float z = a[u], r = a[U + u], hh = a[2 * U + u], rh = a[3 * U + u];
            float gh = dh[u] + (dy ? dy[u] : 0.0f);
            float dhh = gh * (1.0f - z) * (1.0f - hh * hh);
            float dz = gh * (hp[u] - hh) * z * (1.0f - z);
            float dr = dhh * rh * r * (1.0f - r);
            dh[u] = gh * z;
            a[u] = dp[u] = dz;
            a[U + u] = dp[U + u] = dr;
            dp[2 * U + u] = dhh;
            a[2 * U + u] = dhh * r;
        }
    }
}

/* gru without reset_after, first half: dz and d(candidate pre-activation);
 * r stays in a for the second half. */
static void rnn_gru_bwd_state(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_step *k = ctx;
    int U = k->d->units;
    for (long j = begin; j < end; j++) {
        float *a = k->a + j * 4 * U;
        const float *dy = rnn_dy_row(k, (int)j);
        const float *hp = k->hp + j * U;
        float *dh = k->dh + j * U;
        for (int u = 0; u < U; u++) {
            float z = a[u], hh = a[2 * U + u];
            float gh = dh[u] + (dy ? dy[u] : 0.0f);
            dh[u] = gh * z;
            a[u] = gh * (hp[u] - hh) * z * (1.0f - z);
            a[2 * U + u] = gh * (1.0f - z) * (1.0f - hh * hh);
        }
    }
}

/* ... second half: tmp holds d(r*h') = dhh R_h^T. */
static void rnn_gru_bwd_gates(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_step *k = ctx;
    int U = k->d->units;
    for (long j = begin; j < end; j++) {
        float *a = k->a + j * 4 * U;
        float *dp = k->dpre + rnn_row(k, (int)j) * 3 * U;
        const float *hp = k->hp + j * U, *drh = k->tmp + j * U;
        float *dh = k->dh + j * U;
        for (int u = 0; u < U; u++) {
            float r = a[U + u];
            float dr = drh[u] * hp[u] * r * (1.0f - r);
            dh[u] += drh[u] * r;
            a[U + u] = dr;
            dp[u] = a[u];
            dp[U + u] = dr;
            dp[2 * U + u] = a[2 * U + u];
        }
    }
}

typedef struct rnn_colsum_job {
    long rows;
    int ld;
    const float *src;
    float *dst;
} rnn_colsum_job;

/* dst[c] = sum over rows of src[row][c], rows in order, columns split. */
static void rnn_colsum(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_colsum_job *c = ctx;
    for (long i = begin; i < end; i++)
        c->dst[i] = 0.0f;
    for (long row = 0; row < c->rows; row++) {
        const float *s = c->src + row * c->ld;
        for (long i = begin; i < end; i++)
            c->dst[i] += s[i];
    }
}

static void rnn_bias_grad(backend *be, long rows, int cols, int ld, const float *src,
                          float *dst)
{
    rnn_colsum_job c = {rows, ld, src, dst};
    if (rows * cols < RNN_MIN_PARALLEL || be->threads == 1)
        rnn_colsum(&c, 0, cols, 0);
    else
        pool_run(cpu_pool(be), cols, rnn_colsum, &c);
}

/* One backward step of the recurrence over the running slots. */
static void rnn_backward_step(backend *be, rnn_step *k, const float *r, int B)
{
    const rnn_desc *d = k->d;
    int U = d->units, G = rnn_gates(d);
    if (d->mode == RNN_LSTM) {
        rnn_parallel(be, B, 4 * U, rnn_lstm_bwd, k);
        be->gemm(be, false, true, B, U, G, 1.0f, k->a, 4 * U, r, G, 1.0f, k->dh, U);
    } else if (d->reset_after) {
        rnn_parallel(be, B, 3 * U, rnn_gru_bwd_after, k);
        be->gemm(be, false, true, B, U, G, 1.0f, k->a, 4 * U, r, G, 1.0f, k->dh, U);
    } else {
        rnn_parallel(be, B, 2 * U, rnn_gru_bwd_state, k);
        be->gemm(be, false, true, B, U, U, 1.0f, k->a + 2 * U, 4 * U, r + 2 * U, G, 0.0f,
                 k->tmp, U);
        rnn_parallel(be, B, 2 * U, rnn_gru_bwd_gates, k);
        be->gemm(be, false, true, B, U, 2 * U, 1.0f, k->a, 4 * U, r, G, 1.0f, k->dh, U);
    }
    /* Slots not running at this step carry no gradient into the kernel's
     * GEMM over all steps. */
    memset(k->a + (long)B * 4 * U, 0, (size_t)(k->batch - B) * 4 * U * sizeof(float));
}

static void cpu_rnn_backward(backend *be, const rnn_desc *d, int batch, const int32_t *lengths,
                      const float *x, const float *w, const float *r, const float *dy,
                      int ldy, float *dx, bool accumulate, float *dw, float *dr,
                      float *dbias, float *aux, float *workspace)
{
    const rnn_plan *p = d->impl;
    int T = d->steps, F = d->in, U = d->units, G = rnn_gates(d);
    int steps = rnn_plan_fill(d, batch, lengths);
    float *h = aux, *c = rnn_aux_c(d, batch, aux);
    float *a = rnn_aux_a(d, batch, aux);
    long rows = (long)batch * U;
    float *dpre = workspace, *dh = dpre + (long)batch * T * G, *dc = dh + rows;
    float *tmp = dc + rows;
    /* Padding rows of dpre stay zero: the GEMMs below then add nothing
     * for them to dw and write exact zeros into dx there. */
    memset(dpre, 0, (size_t)batch * T * G * sizeof *dpre);
    memset(dh, 0, (size_t)2 * rows * sizeof *dh);
    for (int s = steps - 1; s >= 0; s--) {
        rnn_step k = {.d = d, .p = p, .batch = batch, .s = s, .dpre = dpre,
                      .hp = h + s * rows, .cp = c + s * rows, .cn = c + (s + 1) * rows,
                      .a = a + (long)s * batch * 4 * U, .dh = dh, .dc = dc, .tmp = tmp,
                      .dy = dy, .ldy = ldy};
        rnn_backward_step(be, &k, r, p->active[s]);
    }
    long k = (long)steps * batch;
    if (d->mode == RNN_GRU && !d->reset_after) {
        be->gemm(be, true, false, U, 2 * U, (int)k, 1.0f, h, U, a, 4 * U, 0.0f, dr, G);
        be->gemm(be, true, false, U, U, (int)k, 1.0f, a + 3 * U, 4 * U, a + 2 * U, 4 * U,
                 0.0f, dr + 2 * U, G);
    } else {
        be->gemm(be, true, false, U, G, (int)k, 1.0f, h, U, a, 4 * U, 0.0f, dr, G);
    }
    if (d->one_hot) {
        memset(dw, 0, (size_t)F * G * sizeof *dw);
        rnn_onehot_job o = {d, p, batch, x, dpre, dw};
        rnn_parallel(be, G, (int)((long)batch * T), rnn_scatter, &o);
    } else {
        be->gemm(be, true, false, F, G, batch * T, 1.0f, x, F, dpre, G, 0.0f, dw, G);
    }
    rnn_bias_grad(be, (long)batch * T, G, G, dpre, dbias);
    if (d->mode == RNN_GRU && d->reset_after)
        rnn_bias_grad(be, k, G, 4 * U, a, dbias + G);
    if (dx && !d->one_hot)
        be->gemm(be, false, true, batch * T, F, G, 1.0f, dpre, G, w, G,
                 accumulate ? 1.0f : 0.0f, dx, F);
}

typedef struct rnn_mul_job {
    const float *a, *b;
    float *y;
    bool accumulate;
} rnn_mul_job;

static void rnn_mul_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const rnn_mul_job *m = ctx;
    if (m->accumulate)
        for (long i = begin; i < end; i++)
            m->y[i] += m->a[i] * m->b[i];
    else
        for (long i = begin; i < end; i++)
            m->y[i] = m->a[i] * m->b[i];
}

static void cpu_mul(backend *be, long n, const float *a, const float *b, float *y, bool accumulate)
{
    rnn_mul_job m = {a, b, y, accumulate};
    pool_run_min(cpu_pool(be), n, 1L << 15, rnn_mul_chunk, &m);
}

/* Sets this file's ops of backend.h on be. */
void cpu_rnn_register(backend *be)
{
    be->rnn_prepare = cpu_rnn_prepare;
    be->rnn_release = cpu_rnn_release;
    be->rnn_forward = cpu_rnn_forward;
    be->rnn_backward = cpu_rnn_backward;
    be->mul = cpu_mul;
}
