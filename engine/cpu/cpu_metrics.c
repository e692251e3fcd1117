/* cpu_metrics.c — a batch's metric sums on the CPU backend: correct
 * argmax, squared and absolute error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

static int argmax_row(const float *v, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (v[j] > v[best])
            best = j;
    return best;
}

static void cpu_metrics(backend *be, int batch, int n, const float *y, const float *targets,
                        batch_metrics *out)
{
    (void)be;
    memset(out, 0, sizeof *out);
    for (int r = 0; r < batch; r++) {
        const float *yr = y + (long)r * n;
        const float *tr = targets + (long)r * n;
        if (argmax_row(yr, n) == argmax_row(tr, n))
            out->correct += 1.0;
        for (int j = 0; j < n; j++) {
            double e = (double)yr[j] - tr[j];
            out->sq_err += e * e;
            out->abs_err += fabs(e);
        }
    }
}

/* Sets this file's ops of backend.h on be. */
void cpu_metrics_register(backend *be)
{
    be->metrics = cpu_metrics;
}
