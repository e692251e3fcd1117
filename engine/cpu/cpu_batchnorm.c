/* cpu_batchnorm.c — batch normalisation on the CPU, channels split across
 * the pool's threads. Statistics are accumulated in double, sample by
 * sample in order, each plane over BN_LANES running sums (element i of a
 * plane into lane i % BN_LANES, the lanes added in index order at the
 * end): deterministic and independent of the instruction set, accurate
 * for large batch * spatial, and a vector of doubles wide, so the loops
 * vectorise; one running sum made every element wait for the previous
 * add (13% of a resnet20_cifar10 step, measured by perf). */
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

#include <math.h>

static long cpu_batchnorm_prepare(backend *be, batchnorm_desc *d)
{
    (void)be;
    if (d->c <= 0 || d->spatial <= 0)
        return -1;
    return 0;
}

static void cpu_batchnorm_release(backend *be, batchnorm_desc *d)
{
    (void)be;
    d->impl = NULL;
}

typedef struct bn_job {
    const batchnorm_desc *d;
    int batch;
    const float *x, *dy, *gamma, *beta, *mean_in, *var_in, *save_mean, *save_invstd;
    float *running_mean, *running_var, *out_mean, *out_invstd, *y, *dx, *dgamma, *dbeta;
    bool accumulate;
} bn_job;

static const float *bn_plane(const bn_job *j, const float *t, int b, long c)
{
    return t + ((long)b * j->d->c + c) * j->d->spatial;
}

#define BN_LANES 8

static double bn_lanes_total(const double *lane)
{
    double t = 0.0;
    for (int k = 0; k < BN_LANES; k++)
        t += lane[k];
    return t;
}

/* lane[i % BN_LANES] += x[i] */
CPU_SIMD_CLONES
static void bn_lanes_sum(const float *restrict x, int n, double *restrict lane)
{
    int i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int k = 0; k < BN_LANES; k++)
            lane[k] += x[i + k];
    for (int k = 0; i < n; i++, k++)
        lane[k] += x[i];
}

/* lane[i % BN_LANES] += (x[i] - mean)^2 */
CPU_SIMD_CLONES
static void bn_lanes_sq(const float *restrict x, int n, double mean, double *restrict lane)
{
    int i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int k = 0; k < BN_LANES; k++) {
            double e = x[i + k] - mean;
            lane[k] += e * e;
        }
    for (int k = 0; i < n; i++, k++) {
        double e = x[i] - mean;
        lane[k] += e * e;
    }
}

/* ldy[i % L] += dy[i]; lxh[i % L] += dy[i] * xhat[i] */
CPU_SIMD_CLONES
static void bn_lanes_dy(const float *restrict x, const float *restrict dy, int n, float mean,
                        float invstd, double *restrict ldy, double *restrict lxh)
{
    int i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int k = 0; k < BN_LANES; k++) {
            ldy[k] += dy[i + k];
            lxh[k] += (double)dy[i + k] * (x[i + k] - mean) * invstd;
        }
    for (int k = 0; i < n; i++, k++) {
        ldy[k] += dy[i];
        lxh[k] += (double)dy[i] * (x[i] - mean) * invstd;
    }
}

/* y = x * scale + shift over one plane. */
CPU_SIMD_CLONES
static void bn_affine(const float *restrict x, float *restrict y, int n, float scale,
                      float shift)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] * scale + shift;
}

/* dx (+)= k * (dy - a - xhat * bcoef) over one plane. */
CPU_SIMD_CLONES
static void bn_dx(const float *restrict x, const float *restrict dy, float *restrict dx, int n,
                  float mean, float invstd, float k, float a, float bcoef, bool accumulate)
{
    if (accumulate)
        for (int i = 0; i < n; i++)
            dx[i] += k * (dy[i] - a - (x[i] - mean) * invstd * bcoef);
    else
        for (int i = 0; i < n; i++)
            dx[i] = k * (dy[i] - a - (x[i] - mean) * invstd * bcoef);
}

static void bn_train_channels(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const bn_job *j = ctx;
    const batchnorm_desc *d = j->d;
    double m = (double)j->batch * d->spatial;
    for (long c = begin; c < end; c++) {
        double lane[BN_LANES] = {0};
        for (int b = 0; b < j->batch; b++)
            bn_lanes_sum(bn_plane(j, j->x, b, c), d->spatial, lane);
        double mean = bn_lanes_total(lane) / m;
        double lsq[BN_LANES] = {0};
        for (int b = 0; b < j->batch; b++)
            bn_lanes_sq(bn_plane(j, j->x, b, c), d->spatial, mean, lsq);
        double var = bn_lanes_total(lsq) / m;
        double invstd = 1.0 / sqrt(var + d->epsilon);
        j->out_mean[c] = (float)mean;
        j->out_invstd[c] = (float)invstd;
        double unbiased = m > 1.0 ? var * m / (m - 1.0) : var;
        j->running_mean[c] = d->momentum * j->running_mean[c] + (1.0f - d->momentum) * (float)mean;
        j->running_var[c] = d->momentum * j->running_var[c] + (1.0f - d->momentum) * (float)unbiased;
        float scale = j->gamma[c] * (float)invstd;
        float shift = j->beta[c] - (float)mean * scale;
        for (int b = 0; b < j->batch; b++)
            bn_affine(bn_plane(j, j->x, b, c), (float *)bn_plane(j, j->y, b, c), d->spatial,
                      scale, shift);
    }
}

static void cpu_batchnorm_forward_train(backend *be, const batchnorm_desc *d, int batch,
                                 const float *x, const float *gamma, const float *beta,
                                 float *running_mean, float *running_var, float *save_mean,
                                 float *save_invstd, float *y, float *workspace)
{
    (void)workspace;
    bn_job j = {.d = d, .batch = batch, .x = x, .gamma = gamma, .beta = beta,
                .running_mean = running_mean, .running_var = running_var,
                .out_mean = save_mean, .out_invstd = save_invstd, .y = y};
    pool_run(cpu_pool(be), d->c, bn_train_channels, &j);
}

static void bn_eval_channels(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const bn_job *j = ctx;
    const batchnorm_desc *d = j->d;
    for (long c = begin; c < end; c++) {
        float scale = j->gamma[c] / sqrtf(j->var_in[c] + d->epsilon);
        float shift = j->beta[c] - j->mean_in[c] * scale;
        for (int b = 0; b < j->batch; b++)
            bn_affine(bn_plane(j, j->x, b, c), (float *)bn_plane(j, j->y, b, c), d->spatial,
                      scale, shift);
    }
}

static void cpu_batchnorm_forward_eval(backend *be, const batchnorm_desc *d, int batch,
                                const float *x, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var,
                                float *y)
{
    bn_job j = {.d = d, .batch = batch, .x = x, .gamma = gamma, .beta = beta,
                .mean_in = running_mean, .var_in = running_var, .y = y};
    pool_run(cpu_pool(be), d->c, bn_eval_channels, &j);
}

/* dx = invstd/m * (m*g*dy - sum(g*dy) - xhat * sum(g*dy*xhat)), g = gamma. */
static void bn_backward_channels(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const bn_job *j = ctx;
    const batchnorm_desc *d = j->d;
    double m = (double)j->batch * d->spatial;
    for (long c = begin; c < end; c++) {
        float mean = j->save_mean[c], invstd = j->save_invstd[c];
        double ldy[BN_LANES] = {0}, lxh[BN_LANES] = {0};
        for (int b = 0; b < j->batch; b++)
            bn_lanes_dy(bn_plane(j, j->x, b, c), bn_plane(j, j->dy, b, c), d->spatial, mean,
                        invstd, ldy, lxh);
        double sum_dy = bn_lanes_total(ldy), sum_dy_xhat = bn_lanes_total(lxh);
        j->dgamma[c] = (float)sum_dy_xhat;
        j->dbeta[c] = (float)sum_dy;
        if (!j->dx)
            continue;
        float k = j->gamma[c] * invstd;
        float a = (float)(sum_dy / m);
        float bcoef = (float)(sum_dy_xhat / m);
        for (int b = 0; b < j->batch; b++)
            bn_dx(bn_plane(j, j->x, b, c), bn_plane(j, j->dy, b, c),
                  (float *)bn_plane(j, j->dx, b, c), d->spatial, mean, invstd, k, a, bcoef,
                  j->accumulate);
    }
}

static void cpu_batchnorm_backward(backend *be, const batchnorm_desc *d, int batch, const float *x,
                            const float *dy, const float *gamma, const float *save_mean,
                            const float *save_invstd, float *dx, bool accumulate,
                            float *dgamma, float *dbeta, float *workspace)
{
    (void)workspace;
    bn_job j = {.d = d, .batch = batch, .x = x, .dy = dy, .gamma = gamma,
                .save_mean = save_mean, .save_invstd = save_invstd, .dx = dx,
                .dgamma = dgamma, .dbeta = dbeta, .accumulate = accumulate};
    pool_run(cpu_pool(be), d->c, bn_backward_channels, &j);
}

/* Sets this file's ops of backend.h on be. */
void cpu_batchnorm_register(backend *be)
{
    be->batchnorm_prepare = cpu_batchnorm_prepare;
    be->batchnorm_release = cpu_batchnorm_release;
    be->batchnorm_forward_train = cpu_batchnorm_forward_train;
    be->batchnorm_forward_eval = cpu_batchnorm_forward_eval;
    be->batchnorm_backward = cpu_batchnorm_backward;
}
