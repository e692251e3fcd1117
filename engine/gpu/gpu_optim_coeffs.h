/* gpu_optim_coeffs.h — the per-step coefficients of the device optimizer,
 * computed on the host from the job's optimizer settings exactly as
 * engine/optim/ computes them (Keras's formulas). Plain C, unit-tested
 * against optim_step() without a GPU. */
#ifndef PUNCH_GPU_OPTIM_COEFFS_H
#define PUNCH_GPU_OPTIM_COEFFS_H

#include "gpu/gpu_math.h"
#include "jobspec/spec.h"

/* State slots per parameter (0, 1 or 2), as optim.c allocates them. */
int gpu_optim_slots(const spec_optimizer *cfg);

/* Coefficients of the step taken after `iterations` steps at schedule rate
 * lr. Nadam's momentum-schedule product is read from and written back to
 * *m_schedule (start it at 1). */
gpu_optim_coeffs gpu_optim_coeffs_for(const spec_optimizer *cfg, long iterations, float lr,
                                      float *m_schedule);

#endif
