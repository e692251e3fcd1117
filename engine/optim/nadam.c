/* nadam.c — Nadam in Keras 2's formulation (Dozat 2016 with its momentum
 * schedule), not Dozat's simplified form nor PyTorch's:
 *     t = iterations + 1,  mu_t = beta1 * (1 - 0.5 * 0.96^(t * 0.004)),
 *     S_t = mu_1 * ... * mu_t  (o->m_schedule),
 *     m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2,
 *     m_bar = (1 - mu_t) / (1 - S_t) * g + mu_{t+1} / (1 - S_t * mu_{t+1}) * m,
 *     p -= lr * m_bar / (sqrt(v / (1 - b2^t)) + eps).
 * S_t is kept in float like Keras's variable and saved with the state, so
 * a resumed run continues from the same bits. */
#include "optim/optim_internal.h"

/* Keras's schedule_decay: how fast the momentum schedule approaches beta1. */
#define NADAM_SCHEDULE_DECAY 0.004

static double nadam_momentum(double beta1, double t)
{
    return beta1 * (1.0 - 0.5 * pow(0.96, t * NADAM_SCHEDULE_DECAY));
}

static inline void nadam_block(float *restrict p, const float *restrict g, float *restrict m,
                               float *restrict v, int len, const optim_coeffs *c)
{
    float mbar[OPTIM_BLOCK], root[OPTIM_BLOCK];
    for (int k = 0; k < len; k++) {
        float gk = g[k] + c->wd * p[k];
        float mk = c->b1 * m[k] + c->one_b1 * gk;
        float vk = c->b2 * v[k] + c->one_b2 * gk * gk;
        m[k] = mk;
        v[k] = vk;
        mbar[k] = c->cg * gk + c->cm * mk;
        root[k] = vk * c->vscale;
    }
    optim_sqrt_block(root, len);
    for (int k = 0; k < len; k++)
        p[k] -= c->lr * mbar[k] / (root[k] + c->eps);
}

/* cg = (1 - mu_t) / (1 - S_t) weighs the raw gradient, cm = mu_{t+1} /
 * (1 - S_t * mu_{t+1}) the first moment, vscale = 1 / (1 - b2^t). */
void optim_nadam_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c)
{
    double b1 = cfg->beta1, b2 = cfg->beta2;
    double mu_t = nadam_momentum(b1, t);
    double mu_next = nadam_momentum(b1, t + 1.0);
    double s_t = (double)c->m_schedule * mu_t;
    double s_next = s_t * mu_next;
    c->b1 = (float)b1;
    c->one_b1 = (float)(1.0 - b1);
    c->b2 = (float)b2;
    c->one_b2 = (float)(1.0 - b2);
    c->cg = (float)((1.0 - mu_t) / (1.0 - s_t));
    c->cm = (float)(mu_next / (1.0 - s_next));
    c->vscale = (float)(1.0 / (1.0 - pow(b2, t)));
    c->m_schedule = (float)s_t;
}

OPTIM_CLONES
void optim_nadam_step(optimizer *o, float *restrict params, const float *restrict grads,
                      long begin, long end, const optim_coeffs *c)
{
    optim_blocks2(nadam_block, o, params, grads, begin, end, c);
}
