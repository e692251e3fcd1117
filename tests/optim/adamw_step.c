/* adamw_step.c — a filter for adamw_torch.py: reads a problem on stdin
 *   n steps lr wd beta1 beta2 eps n_ranges
 *   n_ranges pairs "begin end"  (the decayed parameters)
 *   n params, then steps x n gradients
 * runs the engine's adamw over it and prints the n parameters after every
 * step, one step a line, so the script can compare them with
 * torch.optim.AdamW. */
#include <stdio.h>
#include <stdlib.h>

#include "optim/optim.h"

static int adamw_step_read(long n, float *x)
{
    for (long i = 0; i < n; i++)
        if (scanf("%f", &x[i]) != 1)
            return -1;
    return 0;
}

int main(void)
{
    long n, steps;
    int n_ranges;
    spec_optimizer c = {.name = OPT_ADAMW};
    if (scanf("%ld %ld %lf %lf %lf %lf %lf %d", &n, &steps, &c.learning_rate,
              &c.weight_decay, &c.beta1, &c.beta2, &c.epsilon, &n_ranges) != 8 || n < 1 ||
        steps < 1 || n_ranges < 0 || n_ranges > 1000) {
        fprintf(stderr, "adamw_step: bad header\n");
        return 2;
    }
    long *ranges = malloc((size_t)(2 * n_ranges + 1) * sizeof *ranges);
    float *p = malloc((size_t)n * sizeof *p), *g = malloc((size_t)n * sizeof *g);
    optimizer *o = optim_create(&c, n);
    int rc = 2;
    if (!ranges || !p || !g || !o)
        goto out;
    for (int r = 0; r < 2 * n_ranges; r++)
        if (scanf("%ld", &ranges[r]) != 1)
            goto out;
    if (optim_set_decay_ranges(o, ranges, n_ranges) != 0 || adamw_step_read(n, p) != 0)
        goto out;
    for (long s = 0; s < steps; s++) {
        if (adamw_step_read(n, g) != 0)
            goto out;
        optim_step(o, p, g, n, (float)c.learning_rate);
        for (long i = 0; i < n; i++)
            printf("%.9g%c", (double)p[i], i + 1 < n ? ' ' : '\n');
    }
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "adamw_step: bad input or out of memory\n");
    optim_free(o);
    free(ranges);
    free(p);
    free(g);
    return rc;
}
