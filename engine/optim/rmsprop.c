/* rmsprop.c — RMSprop as Keras and PyTorch define it (no momentum, not
 * centered): a = rho * a + (1 - rho) * g^2; p -= lr * g / (sqrt(a) + eps).
 * epsilon sits outside the square root, as in both; TensorFlow's fused
 * kernel puts it inside. */
#include "optim_internal.h"

typedef struct rmsprop_coeffs {
    float lr, wd, rho, one_rho, eps;
} rmsprop_coeffs;

static inline void rmsprop_block(float *restrict p, const float *restrict g,
                                 float *restrict a, int len, const rmsprop_coeffs *c)
{
    float gk[OPTIM_BLOCK], root[OPTIM_BLOCK];
    for (int k = 0; k < len; k++) {
        gk[k] = g[k] + c->wd * p[k];
        root[k] = c->rho * a[k] + c->one_rho * gk[k] * gk[k];
        a[k] = root[k];
    }
    optim_sqrt_block(root, len);
    for (int k = 0; k < len; k++)
        p[k] -= c->lr * gk[k] / (root[k] + c->eps);
}

OPTIM_CLONES
void optim_rmsprop_step(optimizer *o, float *restrict params, const float *restrict grads,
                        long begin, long end, optim_coeffs oc)
{
    rmsprop_coeffs c = {
        .lr = oc.lr, .wd = oc.wd,
        .rho = (float)o->cfg.rho, .one_rho = (float)(1.0 - o->cfg.rho),
        .eps = (float)o->cfg.epsilon,
    };
    float *a = o->slots;
    long i = begin;
    for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
        rmsprop_block(params + i, grads + i, a + i, OPTIM_BLOCK, &c);
    rmsprop_block(params + i, grads + i, a + i, (int)(end - i), &c);
}
