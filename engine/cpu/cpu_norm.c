/* cpu_norm.c — layer normalisation and GELU on the CPU backend: per-row
 * loops over contiguous features, parallel over rows (forward, dx) or
 * over features (dgamma, dbeta, so each column sum runs in one fixed
 * order whatever the thread count). GELU runs in oneDNN's vectorised
 * eltwise primitives (cpu_gelu_dnnl.h) in builds with oneDNN; the scalar
 * loops here serve builds without it, a failed oneDNN and the
 * activation helper cpu_gelu_inplace. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"
#ifdef PUNCH_HAVE_DNNL
#include "cpu/cpu_gelu_dnnl.h"
#endif

/* Rows per parallel chunk below which one thread does everything. */
#define NORM_MIN_PARALLEL 64L
#define GELU_MIN_PARALLEL (1L << 15)

/* ---- GELU ------------------------------------------------------------ */

#define GELU_SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_COEF 0.044715f
#define GELU_INV_SQRT2 0.7071067811865476f
#define GELU_INV_SQRT_2PI 0.3989422804014327f

typedef struct gelu_job {
    bool exact, accumulate;
    const float *x, *dy;
    float *out;
} gelu_job;

CPU_SIMD_CLONES
static void gelu_fwd_range(bool exact, const float *restrict x, float *restrict y, long n)
{
    if (exact) {
        for (long i = 0; i < n; i++)
            y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * GELU_INV_SQRT2));
        return;
    }
    for (long i = 0; i < n; i++) {
        float u = GELU_SQRT_2_OVER_PI * (x[i] + GELU_COEF * x[i] * x[i] * x[i]);
        y[i] = 0.5f * x[i] * (1.0f + tanhf(u));
    }
}

/* d gelu / dx at x: exact Phi(x) + x phi(x); tanh form
 * 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2). */
CPU_SIMD_CLONES
static void gelu_grad_range(bool exact, const float *restrict x, float *restrict g, long n)
{
    if (exact) {
        for (long i = 0; i < n; i++)
            g[i] = 0.5f * (1.0f + erff(x[i] * GELU_INV_SQRT2)) +
                   x[i] * GELU_INV_SQRT_2PI * expf(-0.5f * x[i] * x[i]);
        return;
    }
    for (long i = 0; i < n; i++) {
        float x2 = x[i] * x[i];
        float t = tanhf(GELU_SQRT_2_OVER_PI * (x[i] + GELU_COEF * x2 * x[i]));
        g[i] = 0.5f * (1.0f + t) +
               0.5f * x[i] * (1.0f - t * t) * GELU_SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_COEF * x2);
    }
}

void cpu_gelu_inplace(bool exact, float *y, long n)
{
    float buf[1024];
    for (long i = 0; i < n; i += 1024) {
        long m = n - i < 1024 ? n - i : 1024;
        gelu_fwd_range(exact, y + i, buf, m);
        memcpy(y + i, buf, (size_t)m * sizeof *buf);
    }
}

static void gelu_forward_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const gelu_job *j = ctx;
    if (j->x == j->out) {
        /* In place: through a small buffer, so the clone's restrict holds. */
        cpu_gelu_inplace(j->exact, j->out + begin, end - begin);
        return;
    }
    gelu_fwd_range(j->exact, j->x + begin, j->out + begin, end - begin);
}

/* The backend's oneDNN GELU context, made on first use; NULL without
 * oneDNN or when it cannot be made (the scalar loops then run). */
#ifdef PUNCH_HAVE_DNNL
static cpu_gelu_dnnl *cpu_gelu_ctx(backend *be)
{
    cpu_backend *cb = be->impl;
    if (!cb->gelu_dnnl)
        cb->gelu_dnnl = cpu_gelu_dnnl_create(pool_threads(cb->pool));
    return cb->gelu_dnnl;
}
#endif

void cpu_gelu_release(backend *be)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_backend *cb = be->impl;
    cpu_gelu_dnnl_destroy(cb->gelu_dnnl);
    cb->gelu_dnnl = NULL;
#else
    (void)be;
#endif
}

static void cpu_gelu_forward(backend *be, bool exact, long n, const float *x, float *y)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_gelu_dnnl *g = cpu_gelu_ctx(be);
    if (g && cpu_gelu_dnnl_forward(g, cpu_pool(be), exact, n, x, y))
        return;
#endif
    gelu_job j = {exact, false, x, NULL, y};
    pool_run_min(cpu_pool(be), n, GELU_MIN_PARALLEL, gelu_forward_chunk, &j);
}

static void gelu_backward_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const gelu_job *j = ctx;
    float buf[1024];
    for (long i = begin; i < end; i += 1024) {
        long m = end - i < 1024 ? end - i : 1024;
        gelu_grad_range(j->exact, j->x + i, buf, m);
        float *dx = j->out + i;
        const float *dy = j->dy + i;
        if (j->accumulate)
            for (long c = 0; c < m; c++)
                dx[c] += dy[c] * buf[c];
        else
            for (long c = 0; c < m; c++)
                dx[c] = dy[c] * buf[c];
    }
}

static void cpu_gelu_backward(backend *be, bool exact, long n, const float *x, const float *dy,
                              float *dx, bool accumulate)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_gelu_dnnl *g = cpu_gelu_ctx(be);
    if (g && cpu_gelu_dnnl_backward(g, cpu_pool(be), exact, n, x, dy, dx, accumulate))
        return;
#endif
    gelu_job j = {exact, accumulate, x, dy, dx};
    pool_run_min(cpu_pool(be), n, GELU_MIN_PARALLEL, gelu_backward_chunk, &j);
}

/* ---- layer norm ------------------------------------------------------ */

typedef struct norm_job {
    int features;
    float epsilon;
    bool accumulate;
    const float *x, *gamma, *beta, *stats, *dy;
    float *y, *out_stats, *dx, *dgamma, *dbeta;
    long rows;
} norm_job;

CPU_SIMD_CLONES
static void norm_row_forward(int f, float eps, const float *restrict x,
                             const float *restrict gamma, const float *restrict beta,
                             float *restrict y, float *restrict stats)
{
    float mean = cpu_sum(x, f) / (float)f;
    float var = 0.0f;
    for (int c = 0; c < f; c++)
        var += (x[c] - mean) * (x[c] - mean);
    float rstd = 1.0f / sqrtf(var / (float)f + eps);
    for (int c = 0; c < f; c++)
        y[c] = (x[c] - mean) * rstd * gamma[c] + beta[c];
    stats[0] = mean;
    stats[1] = rstd;
}

static void norm_forward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const norm_job *j = ctx;
    long f = j->features;
    for (long r = begin; r < end; r++)
        norm_row_forward(j->features, j->epsilon, j->x + r * f, j->gamma, j->beta,
                         j->y + r * f, j->out_stats + 2 * r);
}

static void cpu_layer_norm_forward(backend *be, long rows, int features, float epsilon,
                                   const float *x, const float *gamma, const float *beta,
                                   float *y, float *stats)
{
    norm_job j = {.features = features, .epsilon = epsilon, .x = x, .gamma = gamma,
                  .beta = beta, .y = y, .out_stats = stats};
    pool_run_min(cpu_pool(be), rows, NORM_MIN_PARALLEL, norm_forward_rows, &j);
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma. */
static void norm_backward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const norm_job *j = ctx;
    int f = j->features;
    for (long r = begin; r < end; r++) {
        const float *x = j->x + r * f, *dy = j->dy + r * f;
        float mean = j->stats[2 * r], rstd = j->stats[2 * r + 1];
        float sg = 0.0f, sgx = 0.0f;
        for (int c = 0; c < f; c++) {
            float g = dy[c] * j->gamma[c];
            sg += g;
            sgx += g * (x[c] - mean) * rstd;
        }
        sg /= (float)f;
        sgx /= (float)f;
        float *dx = j->dx + r * f;
        for (int c = 0; c < f; c++) {
            float v = rstd * (dy[c] * j->gamma[c] - sg - (x[c] - mean) * rstd * sgx);
            dx[c] = j->accumulate ? dx[c] + v : v;
        }
    }
}

static void norm_param_grads(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const norm_job *j = ctx;
    int f = j->features;
    for (long c = begin; c < end; c++) {
        j->dgamma[c] = 0.0f;
        j->dbeta[c] = 0.0f;
    }
    for (long r = 0; r < j->rows; r++) {
        const float *x = j->x + r * f, *dy = j->dy + r * f;
        float mean = j->stats[2 * r], rstd = j->stats[2 * r + 1];
        for (long c = begin; c < end; c++) {
            j->dgamma[c] += dy[c] * (x[c] - mean) * rstd;
            j->dbeta[c] += dy[c];
        }
    }
}

static void cpu_layer_norm_backward(backend *be, long rows, int features, const float *x,
                                    const float *gamma, const float *stats, const float *dy,
                                    float *dx, bool accumulate, float *dgamma, float *dbeta)
{
    norm_job j = {.features = features, .accumulate = accumulate, .x = x, .gamma = gamma,
                  .stats = stats, .dy = dy, .dx = dx, .dgamma = dgamma, .dbeta = dbeta,
                  .rows = rows};
    pool_run_min(cpu_pool(be), features, rows * features < (1L << 14) ? features + 1 : 16,
                 norm_param_grads, &j);
    if (dx)
        pool_run_min(cpu_pool(be), rows, NORM_MIN_PARALLEL, norm_backward_rows, &j);
}

void cpu_norm_register(backend *be)
{
    be->gelu_forward = cpu_gelu_forward;
    be->gelu_backward = cpu_gelu_backward;
    be->layer_norm_forward = cpu_layer_norm_forward;
    be->layer_norm_backward = cpu_layer_norm_backward;
}
