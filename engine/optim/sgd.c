/* sgd.c — stochastic gradient descent with Keras's momentum and Nesterov
 * formulation. The velocity carries the learning rate inside it
 * (v = momentum * v - lr * g), as in Keras; PyTorch keeps lr outside
 * (v = momentum * v + g; p -= lr * v). The two agree while lr is constant
 * and differ once a schedule or `decay` changes it. */
#include "optim/optim_internal.h"

/* Without momentum: p -= lr * g; no state. */
static inline void sgd_plain_block(float *restrict p, const float *restrict g, int len,
                                   const optim_coeffs *c)
{
    for (int k = 0; k < len; k++) {
        float gk = g[k] + c->wd * p[k];
        p[k] -= c->lr * gk;
    }
}

/* v = mu * v - lr * g; then p += v, or with Nesterov p += mu * v - lr * g. */
static inline void sgd_momentum_block(float *restrict p, const float *restrict g,
                                      float *restrict v, int len, const optim_coeffs *c,
                                      bool nesterov)
{
    for (int k = 0; k < len; k++) {
        float gk = g[k] + c->wd * p[k];
        float vk = c->mu * v[k] - c->lr * gk;
        v[k] = vk;
        p[k] += nesterov ? c->mu * vk - c->lr * gk : vk;
    }
}

void optim_sgd_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c)
{
    (void)t;
    c->mu = (float)cfg->momentum;
}

OPTIM_CLONES
void optim_sgd_step(optimizer *o, float *restrict params, const float *restrict grads,
                    long begin, long end, const optim_coeffs *c)
{
    /* A local copy: no store through the restrict buffers can reach it,
     * so its fields stay in registers across the blocks. */
    const optim_coeffs k = *c;
    long i = begin;
    if (o->n_slots == 0) {
        for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
            sgd_plain_block(params + i, grads + i, OPTIM_BLOCK, &k);
        sgd_plain_block(params + i, grads + i, (int)(end - i), &k);
        return;
    }
    float *v = o->slots;
    /* nesterov is a constant in each loop, so neither carries a select. */
    if (o->cfg.nesterov) {
        for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
            sgd_momentum_block(params + i, grads + i, v + i, OPTIM_BLOCK, &k, true);
    } else {
        for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
            sgd_momentum_block(params + i, grads + i, v + i, OPTIM_BLOCK, &k, false);
    }
    sgd_momentum_block(params + i, grads + i, v + i, (int)(end - i), &k, o->cfg.nesterov);
}
