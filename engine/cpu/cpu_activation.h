/* cpu_activation.h — the CPU backend's activation helpers
 * (cpu_activation.c), also applied by its dense and convolution ops. */
#ifndef PUNCH_CPU_ACTIVATION_H
#define PUNCH_CPU_ACTIVATION_H

#include <stdbool.h>

#include "backend/backend.h"

/* In-place activation of `n` contiguous values (not softmax). */
void cpu_activate(spec_activation act, float *y, long n);
/* In-place softmax of one row of n values. */
void cpu_softmax_row(float *y, int n);

/* One activation over rows of cols values, a job for the pool: the dense
 * forward runs it on its rows while they are still in cache. */
typedef struct cpu_act_job {
    spec_activation act;
    long cols;
    bool accumulate;
    const float *x, *y, *dy, *bias;
    float *out;
    int rows;               /* dense_forward_cols: the batch */
} cpu_act_job;

/* Rows [begin, end) of the cpu_act_job ctx: out = act(x (+ bias)). */
void cpu_act_forward_rows(void *ctx, long begin, long end, int tid);

#endif
