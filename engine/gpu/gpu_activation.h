/* gpu_activation.h — activations on the CUDA backend (gpu_activation.c),
 * also applied by the dense and convolution ops after their GEMMs. The
 * arguments are backend.h's activation_forward/backward's. */
#ifndef PUNCH_GPU_ACTIVATION_H
#define PUNCH_GPU_ACTIVATION_H

#include <stdbool.h>

#include "backend/backend.h"

void gpu_activation_forward(backend *be, spec_activation act, long rows, long cols,
                            const float *x, float *y);
void gpu_activation_backward(backend *be, spec_activation act, long rows, long cols,
                             const float *y, const float *dy, float *dx, bool accumulate);

#endif
