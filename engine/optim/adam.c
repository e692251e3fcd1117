/* adam.c — Adam (Kingma & Ba) in Keras's formulation: the bias correction
 * is folded into the step size,
 *     lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t),  t = iterations + 1,
 *     m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2,
 *     p -= lr_t * m / (sqrt(v) + eps).
 * PyTorch divides by sqrt(v / (1 - beta2^t)) + eps instead; the two differ
 * only in how much epsilon weighs (negligible at the default 1e-7). */
#include "optim/optim_internal.h"

static inline void adam_block(float *restrict p, const float *restrict g, float *restrict m,
                              float *restrict v, int len, const optim_coeffs *c)
{
    float mk[OPTIM_BLOCK], root[OPTIM_BLOCK];
    for (int k = 0; k < len; k++) {
        float gk = g[k] + c->wd * p[k];
        mk[k] = c->b1 * m[k] + c->one_b1 * gk;
        root[k] = c->b2 * v[k] + c->one_b2 * gk * gk;
        m[k] = mk[k];
        v[k] = root[k];
    }
    optim_sqrt_block(root, len);
    for (int k = 0; k < len; k++)
        p[k] -= c->lr_t * mk[k] / (root[k] + c->eps);
}

void optim_adam_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c)
{
    double b1 = cfg->beta1, b2 = cfg->beta2;
    c->lr_t = (float)((double)c->lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t)));
    c->b1 = (float)b1;
    c->one_b1 = (float)(1.0 - b1);
    c->b2 = (float)b2;
    c->one_b2 = (float)(1.0 - b2);
}

OPTIM_CLONES
void optim_adam_step(optimizer *o, float *restrict params, const float *restrict grads,
                     long begin, long end, const optim_coeffs *c)
{
    optim_blocks2(adam_block, o, params, grads, begin, end, c);
}
