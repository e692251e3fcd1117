/* adam.c — Adam (Kingma & Ba) in Keras's formulation: the bias correction
 * is folded into the step size,
 *     lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t),  t = iterations + 1,
 *     m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2,
 *     p -= lr_t * m / (sqrt(v) + eps).
 * PyTorch divides by sqrt(v / (1 - beta2^t)) + eps instead; the two differ
 * only in how much epsilon weighs (negligible at the default 1e-7). */
#include "optim_internal.h"

typedef struct adam_coeffs {
    float lr_t, wd, b1, one_b1, b2, one_b2, eps;
} adam_coeffs;

static inline void adam_block(float *restrict p, const float *restrict g, float *restrict m,
                              float *restrict v, int len, const adam_coeffs *c)
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

OPTIM_CLONES
void optim_adam_step(optimizer *o, float *restrict params, const float *restrict grads,
                     long begin, long end, optim_coeffs oc)
{
    double t = (double)(o->iterations + 1);
    double b1 = o->cfg.beta1, b2 = o->cfg.beta2;
    adam_coeffs c = {
        .lr_t = (float)((double)oc.lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t))),
        .wd = oc.wd,
        .b1 = (float)b1, .one_b1 = (float)(1.0 - b1),
        .b2 = (float)b2, .one_b2 = (float)(1.0 - b2),
        .eps = (float)o->cfg.epsilon,
    };
    float *m = o->slots;
    float *v = o->slots + o->n;
    long i = begin;
    for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
        adam_block(params + i, grads + i, m + i, v + i, OPTIM_BLOCK, &c);
    adam_block(params + i, grads + i, m + i, v + i, (int)(end - i), &c);
}
