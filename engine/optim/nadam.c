/* nadam.c — Nadam in Keras 2's formulation (Dozat 2016 with its momentum
 * schedule), not Dozat's simplified form nor PyTorch's:
 *     t = iterations + 1,  mu_t = beta1 * (1 - 0.5 * 0.96^(t * 0.004)),
 *     S_t = mu_1 * ... * mu_t  (o->m_schedule),
 *     m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2,
 *     m_bar = (1 - mu_t) / (1 - S_t) * g + mu_{t+1} / (1 - S_t * mu_{t+1}) * m,
 *     p -= lr * m_bar / (sqrt(v / (1 - b2^t)) + eps).
 * S_t is kept in float like Keras's variable and saved with the state, so
 * a resumed run continues from the same bits. */
#include "optim_internal.h"

/* Keras's schedule_decay: how fast the momentum schedule approaches beta1. */
#define NADAM_SCHEDULE_DECAY 0.004

typedef struct nadam_coeffs {
    float lr, wd, b1, one_b1, b2, one_b2, eps;
    float cg;     /* (1 - mu_t) / (1 - S_t): weight of the raw gradient */
    float cm;     /* mu_{t+1} / (1 - S_t * mu_{t+1}): weight of the first moment */
    float vscale; /* 1 / (1 - b2^t) */
} nadam_coeffs;

static double nadam_momentum(double beta1, double t)
{
    return beta1 * (1.0 - 0.5 * pow(0.96, t * NADAM_SCHEDULE_DECAY));
}

static inline void nadam_block(float *restrict p, const float *restrict g, float *restrict m,
                               float *restrict v, int len, const nadam_coeffs *c)
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

float optim_nadam_schedule_next(const optimizer *o)
{
    double t = (double)(o->iterations + 1);
    return (float)((double)o->m_schedule * nadam_momentum(o->cfg.beta1, t));
}

OPTIM_CLONES
void optim_nadam_step(optimizer *o, float *restrict params, const float *restrict grads,
                      long begin, long end, optim_coeffs oc)
{
    double t = (double)(o->iterations + 1);
    double b1 = o->cfg.beta1, b2 = o->cfg.beta2;
    double mu_t = nadam_momentum(b1, t);
    double mu_next = nadam_momentum(b1, t + 1.0);
    double s_t = (double)o->m_schedule * mu_t;
    double s_next = s_t * mu_next;
    nadam_coeffs c = {
        .lr = oc.lr, .wd = oc.wd,
        .b1 = (float)b1, .one_b1 = (float)(1.0 - b1),
        .b2 = (float)b2, .one_b2 = (float)(1.0 - b2),
        .eps = (float)o->cfg.epsilon,
        .cg = (float)((1.0 - mu_t) / (1.0 - s_t)),
        .cm = (float)(mu_next / (1.0 - s_next)),
        .vscale = (float)(1.0 / (1.0 - pow(b2, t))),
    };
    float *m = o->slots;
    float *v = o->slots + o->n;
    long i = begin;
    for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
        nadam_block(params + i, grads + i, m + i, v + i, OPTIM_BLOCK, &c);
    nadam_block(params + i, grads + i, m + i, v + i, (int)(end - i), &c);
}
