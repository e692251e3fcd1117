/* cpu_concat.c — channel concatenation and its backward on the CPU
 * backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

/* ---- concat ---------------------------------------------------------- */

static void cpu_concat_forward(backend *be, int batch, int n_in, const int *c_in,
                               long spatial, const float *const *xs, float *y)
{
    (void)be;
    long total = 0;
    for (int i = 0; i < n_in; i++)
        total += c_in[i];
    for (int b = 0; b < batch; b++) {
        float *dst = y + (long)b * total * spatial;
        for (int i = 0; i < n_in; i++) {
            long len = (long)c_in[i] * spatial;
            memcpy(dst, xs[i] + (long)b * len, (size_t)len * sizeof *dst);
            dst += len;
        }
    }
}

static void cpu_concat_backward(backend *be, int batch, int n_in, const int *c_in,
                                long spatial, const float *dy, float *const *dxs,
                                const bool *accumulate)
{
    (void)be;
    long total = 0;
    for (int i = 0; i < n_in; i++)
        total += c_in[i];
    for (int b = 0; b < batch; b++) {
        const float *src = dy + (long)b * total * spatial;
        for (int i = 0; i < n_in; i++) {
            long len = (long)c_in[i] * spatial;
            float *dx = dxs[i] ? dxs[i] + (long)b * len : NULL;
            if (dx && accumulate[i])
                for (long e = 0; e < len; e++)
                    dx[e] += src[e];
            else if (dx)
                memcpy(dx, src, (size_t)len * sizeof *dx);
            src += len;
        }
    }
}

/* Sets this file's ops of backend.h on be. */
void cpu_concat_register(backend *be)
{
    be->concat_forward = cpu_concat_forward;
    be->concat_backward = cpu_concat_backward;
}
