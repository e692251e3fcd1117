/* cpu_dropout.c — dropout on the CPU backend, with backend.h's mask rule
 * (backend_dropout_keep), so every backend drops the same elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

/* ---- dropout --------------------------------------------------------- */

typedef struct dropout_job {
    float rate, keep_scale;
    uint64_t seed;
    bool accumulate;
    const float *x, *mask;
    float *m, *y;
} dropout_job;

static void dropout_fwd_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dropout_job *j = ctx;
    for (long i = begin; i < end; i++) {
        float m = backend_dropout_keep(j->seed, (uint64_t)i, j->rate) ? j->keep_scale : 0.0f;
        j->m[i] = m;
        j->y[i] = j->x[i] * m;
    }
}

static void cpu_dropout_forward(backend *be, long n, float rate, uint64_t seed,
                                const float *x, float *mask, float *y)
{
    dropout_job j = {rate, 1.0f / (1.0f - rate), seed, false, x, NULL, mask, y};
    pool_run_min(cpu_pool(be), n, CPU_ELEM_MIN_PARALLEL, dropout_fwd_chunk, &j);
}

static void dropout_bwd_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dropout_job *j = ctx;
    for (long i = begin; i < end; i++) {
        float g = j->x[i] * j->mask[i];
        j->y[i] = j->accumulate ? j->y[i] + g : g;
    }
}

static void cpu_dropout_backward(backend *be, long n, const float *mask, const float *dy,
                                 float *dx, bool accumulate)
{
    dropout_job j = {0, 0, 0, accumulate, dy, mask, NULL, dx};
    pool_run_min(cpu_pool(be), n, CPU_ELEM_MIN_PARALLEL, dropout_bwd_chunk, &j);
}

/* Sets this file's ops of backend.h on be. */
void cpu_dropout_register(backend *be)
{
    be->dropout_forward = cpu_dropout_forward;
    be->dropout_backward = cpu_dropout_backward;
}
