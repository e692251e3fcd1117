/* gpu_optim.c — the optimizer with its state on the device: coefficients
 * per step on the host (gpu_optim_coeffs.c), one kernel over the flat
 * parameter buffer (gpu_kernels.cu). The state's checkpoint layout is
 * optim.c's (optim_header_save/load, then the slots), so a checkpoint
 * moves between CPU and GPU runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ctx.h"
#include "gpu/gpu_kernels.h"
#include "gpu/gpu_optim_coeffs.h"
#include "optim/optim.h"

struct gpu_optim {
    backend *be;
    spec_optimizer cfg;
    long n;
    long iterations;
    float m_schedule;
    int n_slots;
    float *slots;   /* device, n_slots * n */
};

gpu_optim *gpu_optim_create(backend *be, const spec_optimizer *cfg, long n, char *err,
                            size_t errlen)
{
    if (cfg->name == OPT_ADAMW) {
        snprintf(err, errlen, "training.optimizer: adamw is not implemented on the GPU backend "
                 "yet; run the job on the CPU (resources.gpus 0) or use adam");
        return NULL;
    }
    gpu_optim *o = calloc(1, sizeof *o);
    if (!o || n < 0) {
        free(o);
        snprintf(err, errlen, "optimizer: %s", n < 0 ? "negative size" : "out of host memory");
        return NULL;
    }
    o->be = be;
    o->cfg = *cfg;
    o->n = n;
    o->m_schedule = 1.0f;
    o->n_slots = optim_slots(cfg);
    if (o->n_slots > 0) {
        o->slots = be->alloc(be, (long)o->n_slots * n);
        if (!o->slots) {
            snprintf(err, errlen, "optimizer: out of device memory for %ld floats of state",
                     (long)o->n_slots * n);
            free(o);
            return NULL;
        }
    }
    return o;
}

void gpu_optim_free(gpu_optim *o)
{
    if (!o)
        return;
    if (o->slots)
        o->be->free(o->be, o->slots);
    free(o);
}

void gpu_optim_step(gpu_optim *o, float *params, const float *grads, float lr)
{
    gpu_optim_coeffs k = gpu_optim_coeffs_for(&o->cfg, o->iterations, lr, &o->m_schedule);
    float *s0 = o->n_slots > 0 ? o->slots : NULL;
    float *s1 = o->n_slots > 1 ? o->slots + o->n : NULL;
    GPU_MUST(gpu_k_optim_step(gpu_ctx_of(o->be)->stream, k, o->n, params, grads, s0, s1));
    o->iterations++;
}

long gpu_optim_iterations(const gpu_optim *o)
{
    return o->iterations;
}

long gpu_optim_state_floats(const gpu_optim *o)
{
    return OPTIM_STATE_HEADER + (long)o->n_slots * o->n;
}

void gpu_optim_state_save(const gpu_optim *o, float *dst)
{
    optim_header_save(o->iterations, o->m_schedule, dst);
    if (o->n_slots > 0)
        o->be->download(o->be, dst + OPTIM_STATE_HEADER, o->slots, (long)o->n_slots * o->n);
}

void gpu_optim_state_load(gpu_optim *o, const float *src)
{
    if (!optim_header_load(src, &o->iterations, &o->m_schedule)) {
        o->iterations = 0;
        o->m_schedule = 1.0f;
        return;
    }
    if (o->n_slots > 0)
        o->be->upload(o->be, o->slots, src + OPTIM_STATE_HEADER, (long)o->n_slots * o->n);
}
