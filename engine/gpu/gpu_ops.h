/* gpu_ops.h — how the CUDA backend's op files join a new backend: each
 * sets its ops of backend.h's function table (whose signatures are not
 * repeated here), and gpu_backend.c calls every one. */
#ifndef PUNCH_GPU_OPS_H
#define PUNCH_GPU_OPS_H

#include "backend/backend.h"

void gpu_activation_register(backend *be); /* activation_* (gpu_activation.c) */
void gpu_conv_register(backend *be);       /* conv2d_* (gpu_conv.c) */
void gpu_pool_register(backend *be);       /* pool2d_* (gpu_pool.c) */
void gpu_batchnorm_register(backend *be);  /* batchnorm_* (gpu_batchnorm.c) */

#endif
