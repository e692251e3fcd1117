/* gpu_optim_coeffs.h — the per-step coefficients of the device optimizer:
 * engine/optim/'s optim_coeffs_for (the one definition of the formulas)
 * repacked with the kernel's algorithm tag into the plain struct the CUDA
 * kernel takes (gpu_math.h). Plain C, unit-tested against optim_step()
 * without a GPU.
 *
 * The device optimizer (this and gpu_optim.c) is the one place gpu/ uses a
 * layer above it: it needs CUDA, so it lives here, but its formulas and
 * its checkpoint header are optim/'s, defined once there. */
#ifndef PUNCH_GPU_OPTIM_COEFFS_H
#define PUNCH_GPU_OPTIM_COEFFS_H

#include "gpu/gpu_math.h"
#include "jobspec/spec.h"

/* Coefficients of the step taken after `iterations` steps at schedule rate
 * lr. Nadam's momentum-schedule product is read from and written back to
 * *m_schedule (start it at 1). */
gpu_optim_coeffs gpu_optim_coeffs_for(const spec_optimizer *cfg, long iterations, float lr,
                                      float *m_schedule);

#endif
