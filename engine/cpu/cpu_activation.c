/* cpu_activation.c — activations on the CPU backend: in place on
 * contiguous values (also applied by dense and convolution after their
 * GEMMs), softmax per row, and backward from the output. */
#include "cpu/cpu_activation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

/* ---- activations ----------------------------------------------------- */

CPU_SIMD_CLONES
void cpu_activate(spec_activation act, float *y, long n)
{
    switch (act) {
    case ACT_RELU:
        for (long i = 0; i < n; i++)
            y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        break;
    case ACT_SIGMOID:
        for (long i = 0; i < n; i++)
            y[i] = 1.0f / (1.0f + expf(-y[i]));
        break;
    case ACT_TANH:
        for (long i = 0; i < n; i++)
            y[i] = tanhf(y[i]);
        break;
    case ACT_GELU:
    case ACT_GELU_EXACT:
        cpu_gelu_inplace(act == ACT_GELU_EXACT, y, n);
        break;
    case ACT_NONE:
    case ACT_SOFTMAX:
        break;
    }
}

void cpu_softmax_row(float *y, int n)
{
    float mx = y[0];
    for (int j = 1; j < n; j++)
        mx = y[j] > mx ? y[j] : mx;
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        y[j] = expf(y[j] - mx);
        sum += y[j];
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < n; j++)
        y[j] *= inv;
}

void cpu_act_forward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const cpu_act_job *j = ctx;
    for (long r = begin; r < end; r++) {
        float *o = j->out + r * j->cols;
        if (j->x && j->x != o)
            memcpy(o, j->x + r * j->cols, (size_t)j->cols * sizeof *o);
        if (j->bias)
            for (long c = 0; c < j->cols; c++)
                o[c] += j->bias[c];
        if (j->act == ACT_SOFTMAX)
            cpu_softmax_row(o, (int)j->cols);
        else
            cpu_activate(j->act, o, j->cols);
    }
}

static void cpu_activation_forward(backend *be, spec_activation act, long rows, long cols,
                                   const float *x, float *y)
{
    cpu_act_job j = {act, cols, false, x, NULL, NULL, NULL, y};
    pool_run_min(cpu_pool(be), rows, CPU_ELEM_MIN_PARALLEL / (cols > 0 ? cols : 1) + 1,
                 cpu_act_forward_rows, &j);
}

/* g = dy * act'(y) from the output y, written once for the two loops below;
 * DY is the expression of the incoming gradient at c (g[c] in place). */
#define CPU_ACT_BACKWARD_LOOPS(act, y, DY, g, n)                                          \
    switch (act) {                                                                       \
    case ACT_RELU:                                                                       \
        for (long c = 0; c < (n); c++)                                                   \
            (g)[c] = (y)[c] > 0.0f ? (DY) : 0.0f;                                        \
        return;                                                                          \
    case ACT_SIGMOID:                                                                    \
        for (long c = 0; c < (n); c++)                                                   \
            (g)[c] = (DY) * (y)[c] * (1.0f - (y)[c]);                                    \
        return;                                                                          \
    case ACT_TANH:                                                                       \
        for (long c = 0; c < (n); c++)                                                   \
            (g)[c] = (DY) * (1.0f - (y)[c] * (y)[c]);                                    \
        return;                                                                          \
    case ACT_SOFTMAX:                                                                    \
    case ACT_NONE:                                                                       \
    case ACT_GELU: /* from the input only: gelu_backward */                              \
    case ACT_GELU_EXACT:                                                                 \
        return;                                                                          \
    }

/* g *= act'(y) in place (the conv and dense layers' common case): its own
 * loops, because a loop reading dy and writing g == dy fails the compiler's
 * overlap check and runs scalar. */
CPU_SIMD_CLONES
static void act_backward_inplace(spec_activation act, const float *restrict y,
                                 float *restrict g, long n)
{
    CPU_ACT_BACKWARD_LOOPS(act, y, g[c], g, n)
}

/* g = dy * act'(y) into a g apart from dy. restrict and the SIMD clones
 * matter: without them the compiler must allow for overlap, and at -O2 it
 * leaves such a loop scalar, relu's with a branch per element that random
 * signs mispredict half the time (12% of a resnet20 step, measured by
 * perf, before this loop had its own function). */
CPU_SIMD_CLONES
static void act_backward_apart(spec_activation act, const float *restrict y,
                               const float *restrict dy, float *restrict g, long n)
{
    CPU_ACT_BACKWARD_LOOPS(act, y, dy[c], g, n)
}

/* g = dy * act'(y) for one row. */
static void act_backward_row(spec_activation act, const float *y, const float *dy, float *g,
                             long n)
{
    if (g == dy && act != ACT_SOFTMAX) {
        act_backward_inplace(act, y, g, n);
        return;
    }
    switch (act) {
    case ACT_RELU:
    case ACT_SIGMOID:
    case ACT_TANH:
        act_backward_apart(act, y, dy, g, n);
        return;
    case ACT_SOFTMAX: {
        double dot = 0.0;
        for (long c = 0; c < n; c++)
            dot += (double)dy[c] * y[c];
        for (long c = 0; c < n; c++)
            g[c] = y[c] * (dy[c] - (float)dot);
        return;
    }
    case ACT_NONE:
    case ACT_GELU:
    case ACT_GELU_EXACT:
        break;
    }
    if (g != dy)
        memcpy(g, dy, (size_t)n * sizeof *g);
}

static void act_backward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const cpu_act_job *j = ctx;
    for (long r = begin; r < end; r++) {
        const float *y = j->y + r * j->cols;
        const float *dy = j->dy + r * j->cols;
        float *dx = j->out + r * j->cols;
        if (!j->accumulate) {
            /* In place (dx == dy) is fine: element c reads only dy[c]. */
            act_backward_row(j->act, y, dy, dx, j->cols);
            continue;
        }
        /* Accumulating: compute into dx's row in chunks via a small buffer. */
        float buf[256];
        for (long c0 = 0; c0 < j->cols; c0 += 256) {
            long n = j->cols - c0 < 256 ? j->cols - c0 : 256;
            if (j->act == ACT_SOFTMAX) {
                double dot = 0.0;
                for (long c = 0; c < j->cols; c++)
                    dot += (double)dy[c] * y[c];
                for (long c = 0; c < j->cols; c++)
                    dx[c] += y[c] * (dy[c] - (float)dot);
                break;
            }
            act_backward_row(j->act, y + c0, dy + c0, buf, n);
            for (long c = 0; c < n; c++)
                dx[c0 + c] += buf[c];
        }
    }
}

static void cpu_activation_backward(backend *be, spec_activation act, long rows, long cols,
                                    const float *y, const float *dy, float *dx,
                                    bool accumulate)
{
    cpu_act_job j = {act, cols, accumulate, NULL, y, dy, NULL, dx};
    pool_run_min(cpu_pool(be), rows, CPU_ELEM_MIN_PARALLEL / (cols > 0 ? cols : 1) + 1,
                 act_backward_rows, &j);
}

/* Sets this file's ops of backend.h on be. */
void cpu_activation_register(backend *be)
{
    be->activation_forward = cpu_activation_forward;
    be->activation_backward = cpu_activation_backward;
}
