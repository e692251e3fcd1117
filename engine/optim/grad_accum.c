/* grad_accum.c — training.grad_accum_steps: the mean of K micro-batches'
 * gradients, each already a mean over its batch, so K micro-batches of B
 * step like one batch of K x B (to float rounding). */
#include <stdlib.h>
#include <string.h>

#include "optim/optim.h"

int grad_accum_init(grad_accum *a, long n, int k)
{
    memset(a, 0, sizeof *a);
    a->n = n;
    a->k = k > 1 ? k : 1;
    if (a->k == 1)
        return 0;
    a->sum = calloc((size_t)(n > 0 ? n : 1), sizeof *a->sum);
    return a->sum ? 0 : -1;
}

void grad_accum_free(grad_accum *a)
{
    free(a->sum);
    a->sum = NULL;
}

float *grad_accum_add(grad_accum *a, float *g)
{
    if (a->k == 1)
        return g;
    float *s = a->sum;
    if (a->count == 0)
        memcpy(s, g, (size_t)a->n * sizeof *s);
    else
        for (long i = 0; i < a->n; i++)
            s[i] += g[i];
    a->count++;
    return a->count == a->k ? grad_accum_mean(a) : NULL;
}

float *grad_accum_mean(grad_accum *a)
{
    if (a->count == 0)
        return NULL;
    float inv = 1.0f / (float)a->count;
    for (long i = 0; i < a->n; i++)
        a->sum[i] *= inv;
    a->count = 0;
    return a->sum;
}
