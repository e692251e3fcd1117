/* cpu_batchnorm.c — batch normalisation on the CPU, channels split across
 * the pool's threads. Statistics are accumulated in double, sample by
 * sample in order, so they are deterministic and accurate for large
 * batch * spatial. */
#include "cpu/cpu_backend.h"

#include <math.h>

long cpu_batchnorm_prepare(backend *be, batchnorm_desc *d)
{
    (void)be;
    if (d->c <= 0 || d->spatial <= 0)
        return -1;
    return 0;
}

void cpu_batchnorm_release(backend *be, batchnorm_desc *d)
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

static void bn_train_channels(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const bn_job *j = ctx;
    const batchnorm_desc *d = j->d;
    double m = (double)j->batch * d->spatial;
    for (long c = begin; c < end; c++) {
        double sum = 0.0;
        for (int b = 0; b < j->batch; b++) {
            const float *x = bn_plane(j, j->x, b, c);
            for (int i = 0; i < d->spatial; i++)
                sum += x[i];
        }
        double mean = sum / m;
        double sq = 0.0;
        for (int b = 0; b < j->batch; b++) {
            const float *x = bn_plane(j, j->x, b, c);
            for (int i = 0; i < d->spatial; i++) {
                double e = x[i] - mean;
                sq += e * e;
            }
        }
        double var = sq / m;
        double invstd = 1.0 / sqrt(var + d->epsilon);
        j->out_mean[c] = (float)mean;
        j->out_invstd[c] = (float)invstd;
        double unbiased = m > 1.0 ? var * m / (m - 1.0) : var;
        j->running_mean[c] = d->momentum * j->running_mean[c] + (1.0f - d->momentum) * (float)mean;
        j->running_var[c] = d->momentum * j->running_var[c] + (1.0f - d->momentum) * (float)unbiased;
        float scale = j->gamma[c] * (float)invstd;
        float shift = j->beta[c] - (float)mean * scale;
        for (int b = 0; b < j->batch; b++) {
            const float *x = bn_plane(j, j->x, b, c);
            float *y = (float *)bn_plane(j, j->y, b, c);
            for (int i = 0; i < d->spatial; i++)
                y[i] = x[i] * scale + shift;
        }
    }
}

void cpu_batchnorm_forward_train(backend *be, const batchnorm_desc *d, int batch,
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
        for (int b = 0; b < j->batch; b++) {
            const float *x = bn_plane(j, j->x, b, c);
            float *y = (float *)bn_plane(j, j->y, b, c);
            for (int i = 0; i < d->spatial; i++)
                y[i] = x[i] * scale + shift;
        }
    }
}

void cpu_batchnorm_forward_eval(backend *be, const batchnorm_desc *d, int batch,
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
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int b = 0; b < j->batch; b++) {
            const float *x = bn_plane(j, j->x, b, c);
            const float *dy = bn_plane(j, j->dy, b, c);
            for (int i = 0; i < d->spatial; i++) {
                sum_dy += dy[i];
                sum_dy_xhat += (double)dy[i] * (x[i] - mean) * invstd;
            }
        }
        j->dgamma[c] = (float)sum_dy_xhat;
        j->dbeta[c] = (float)sum_dy;
        if (!j->dx)
            continue;
        float k = j->gamma[c] * invstd;
        float a = (float)(sum_dy / m);
        float bcoef = (float)(sum_dy_xhat / m);
        for (int b = 0; b < j->batch; b++) {
            const float *x = bn_plane(j, j->x, b, c);
            const float *dy = bn_plane(j, j->dy, b, c);
            float *dx = (float *)bn_plane(j, j->dx, b, c);
            for (int i = 0; i < d->spatial; i++) {
                float xhat = (x[i] - mean) * invstd;
                float g = k * (dy[i] - a - xhat * bcoef);
                dx[i] = j->accumulate ? dx[i] + g : g;
            }
        }
    }
}

void cpu_batchnorm_backward(backend *be, const batchnorm_desc *d, int batch, const float *x,
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
