/* gpu_optim_coeffs.c — optim_coeffs_for's result in the device kernel's
 * form; see gpu_optim_coeffs.h. */
#include "gpu/gpu_optim_coeffs.h"

#include "optim/optim.h"

static gpu_optim_kind gpu_optim_kind_of(const spec_optimizer *cfg)
{
    switch (cfg->name) {
    case OPT_SGD:
        return cfg->momentum == 0.0 ? GPU_OPT_SGD
               : cfg->nesterov      ? GPU_OPT_NESTEROV
                                    : GPU_OPT_MOMENTUM;
    case OPT_RMSPROP:
        return GPU_OPT_RMSPROP;
    case OPT_ADAM:
        return GPU_OPT_ADAM;
    case OPT_NADAM:
        return GPU_OPT_NADAM;
    case OPT_ADAMW: /* refused by gpu_optim_create */
        return GPU_OPT_ADAM;
    }
    return GPU_OPT_SGD;
}

gpu_optim_coeffs gpu_optim_coeffs_for(const spec_optimizer *cfg, long iterations, float lr,
                                      float *m_schedule)
{
    optim_coeffs c = optim_coeffs_for(cfg, iterations, lr, *m_schedule);
    *m_schedule = c.m_schedule;
    return (gpu_optim_coeffs){
        .kind = gpu_optim_kind_of(cfg),
        .lr = c.lr, .wd = c.wd, .mu = c.mu,
        .rho = c.rho, .one_rho = c.one_rho,
        .b1 = c.b1, .one_b1 = c.one_b1, .b2 = c.b2, .one_b2 = c.one_b2,
        .eps = c.eps, .lr_t = c.lr_t,
        .cg = c.cg, .cm = c.cm, .vscale = c.vscale,
    };
}
