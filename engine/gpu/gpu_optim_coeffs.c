/* gpu_optim_coeffs.c — host-side coefficients of the device optimizer.
 * Each line mirrors the matching one in engine/optim/ (sgd.c, rmsprop.c,
 * adam.c, nadam.c, optim.c); test_gpu_host checks the two stay equal. */
#include "gpu/gpu_optim_coeffs.h"

#include <math.h>
#include <string.h>

/* Keras's Nadam schedule_decay (nadam.c). */
#define GPU_NADAM_SCHEDULE_DECAY 0.004

int gpu_optim_slots(const spec_optimizer *cfg)
{
    switch (cfg->name) {
    case OPT_SGD:
        return cfg->momentum != 0.0 ? 1 : 0;
    case OPT_RMSPROP:
        return 1;
    case OPT_ADAM:
    case OPT_NADAM:
        return 2;
    }
    return 0;
}

static double gpu_nadam_momentum(double beta1, double t)
{
    return beta1 * (1.0 - 0.5 * pow(0.96, t * GPU_NADAM_SCHEDULE_DECAY));
}

gpu_optim_coeffs gpu_optim_coeffs_for(const spec_optimizer *cfg, long iterations, float lr,
                                      float *m_schedule)
{
    gpu_optim_coeffs k;
    memset(&k, 0, sizeof k);
    /* optim.c: decay applies from the count before this step. */
    double rate = (double)lr / (1.0 + cfg->decay * (double)iterations);
    k.lr = (float)rate;
    k.wd = (float)cfg->weight_decay;
    k.eps = (float)cfg->epsilon;
    double t = (double)(iterations + 1);
    switch (cfg->name) {
    case OPT_SGD:
        k.mu = (float)cfg->momentum;
        k.kind = cfg->momentum == 0.0 ? GPU_OPT_SGD
                 : cfg->nesterov      ? GPU_OPT_NESTEROV
                                      : GPU_OPT_MOMENTUM;
        break;
    case OPT_RMSPROP:
        k.kind = GPU_OPT_RMSPROP;
        k.rho = (float)cfg->rho;
        k.one_rho = (float)(1.0 - cfg->rho);
        break;
    case OPT_ADAM:
        k.kind = GPU_OPT_ADAM;
        k.lr_t = (float)((double)k.lr * sqrt(1.0 - pow(cfg->beta2, t)) /
                         (1.0 - pow(cfg->beta1, t)));
        break;
    case OPT_NADAM: {
        k.kind = GPU_OPT_NADAM;
        double mu_t = gpu_nadam_momentum(cfg->beta1, t);
        double mu_next = gpu_nadam_momentum(cfg->beta1, t + 1.0);
        double s_t = (double)*m_schedule * mu_t;
        double s_next = s_t * mu_next;
        k.cg = (float)((1.0 - mu_t) / (1.0 - s_t));
        k.cm = (float)(mu_next / (1.0 - s_next));
        k.vscale = (float)(1.0 / (1.0 - pow(cfg->beta2, t)));
        *m_schedule = (float)s_t;
        break;
    }
    }
    if (k.kind == GPU_OPT_ADAM || k.kind == GPU_OPT_NADAM) {
        k.b1 = (float)cfg->beta1;
        k.one_b1 = (float)(1.0 - cfg->beta1);
        k.b2 = (float)cfg->beta2;
        k.one_b2 = (float)(1.0 - cfg->beta2);
    }
    return k;
}
