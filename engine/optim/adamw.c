/* adamw.c — PyTorch's AdamW (Loshchilov & Hutter), step for step as
 * torch.optim.AdamW computes it:
 *     p *= 1 - lr * wd                     (decoupled decay, first)
 *     m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2
 *     p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * The last line is written as Adam's (adam.c) with the bias corrections
 * folded into the step size and epsilon:
 *     p -= lr_t * m / (sqrt(v) + eps_t),
 *     lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t),  eps_t = eps * sqrt(1 - b2^t),
 * which is the same quantity. Parameters outside the decayed ranges
 * (optim_set_decay_ranges: biases, normalisation scales and shifts,
 * embeddings) step with wd = 0. The gradient gets no L2 term. */
#include "optim/optim_internal.h"

static inline void adamw_block(float *restrict p, const float *restrict g, float *restrict m,
                               float *restrict v, int len, const optim_coeffs *c)
{
    float mk[OPTIM_BLOCK], root[OPTIM_BLOCK];
    for (int k = 0; k < len; k++) {
        mk[k] = c->b1 * m[k] + c->one_b1 * g[k];
        root[k] = c->b2 * v[k] + c->one_b2 * g[k] * g[k];
        m[k] = mk[k];
        v[k] = root[k];
    }
    optim_sqrt_block(root, len);
    for (int k = 0; k < len; k++) {
        float pk = p[k] * c->keep;
        p[k] = pk - c->lr_t * mk[k] / (root[k] + c->eps);
    }
}

void optim_adamw_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c)
{
    double b1 = cfg->beta1, b2 = cfg->beta2;
    double bc2 = sqrt(1.0 - pow(b2, t));
    c->lr_t = (float)((double)c->lr * bc2 / (1.0 - pow(b1, t)));
    c->eps = (float)(cfg->epsilon * bc2);
    c->keep = (float)(1.0 - (double)c->lr * cfg->weight_decay);
    c->b1 = (float)b1;
    c->one_b1 = (float)(1.0 - b1);
    c->b2 = (float)b2;
    c->one_b2 = (float)(1.0 - b2);
}

OPTIM_CLONES
static void optim_adamw_kernel(optimizer *o, float *restrict params, const float *restrict grads,
                               long begin, long end, const optim_coeffs *c)
{
    optim_blocks2(adamw_block, o, params, grads, begin, end, c);
}

void optim_adamw_step(optimizer *o, float *restrict params, const float *restrict grads,
                      long begin, long end, const optim_coeffs *c)
{
    /* Walk the decayed ranges, stepping the gaps between them without
     * decay. Ranges are sorted and disjoint (optim_set_decay_ranges). */
    if (!o->decay) {
        optim_adamw_kernel(o, params, grads, begin, end, c);
        return;
    }
    optim_coeffs plain = *c;
    plain.keep = 1.0f;
    long at = begin;
    for (int r = 0; r < o->n_decay && at < end; r++) {
        long lo = o->decay[2 * r], hi = o->decay[2 * r + 1];
        if (hi <= at)
            continue;
        if (lo > at)
            optim_adamw_kernel(o, params, grads, at, lo < end ? lo : end, &plain);
        lo = lo > at ? lo : at;
        hi = hi < end ? hi : end;
        if (lo < hi)
            optim_adamw_kernel(o, params, grads, lo, hi, c);
        at = hi > at ? hi : at;
    }
    if (at < end)
        optim_adamw_kernel(o, params, grads, at, end, &plain);
}
