/* rmsprop.c — RMSprop as Keras and PyTorch define it (no momentum, not
 * centered): a = rho * a + (1 - rho) * g^2; p -= lr * g / (sqrt(a) + eps).
 * epsilon sits outside the square root, as in both; TensorFlow's fused
 * kernel puts it inside. */
#include "optim/optim_internal.h"

static inline void rmsprop_block(float *restrict p, const float *restrict g,
                                 float *restrict a, int len, const optim_coeffs *c)
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

void optim_rmsprop_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c)
{
    (void)t;
    c->rho = (float)cfg->rho;
    c->one_rho = (float)(1.0 - cfg->rho);
}

OPTIM_CLONES
void optim_rmsprop_step(optimizer *o, float *restrict params, const float *restrict grads,
                        long begin, long end, const optim_coeffs *c)
{
    /* A local copy: no store through the restrict buffers can reach it,
     * so its fields stay in registers across the blocks. */
    const optim_coeffs k = *c;
    float *a = o->slots;
    long i = begin;
    for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
        rmsprop_block(params + i, grads + i, a + i, OPTIM_BLOCK, &k);
    rmsprop_block(params + i, grads + i, a + i, (int)(end - i), &k);
}
