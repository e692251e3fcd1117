/* cpu_ops.h — how the CPU backend's op files join a new backend: each
 * sets its ops of backend.h's function table (whose signatures are not
 * repeated here), and cpu_backend.c calls every one. */
#ifndef PUNCH_CPU_OPS_H
#define PUNCH_CPU_OPS_H

#include "backend/backend.h"

void cpu_dense_register(backend *be);      /* gemm, axpy, scale, dense_* (cpu_dense.c) */
void cpu_activation_register(backend *be); /* activation_* (cpu_activation.c) */
void cpu_dropout_register(backend *be);    /* dropout_* (cpu_dropout.c) */
void cpu_concat_register(backend *be);     /* concat_* (cpu_concat.c) */
void cpu_loss_register(backend *be);       /* softmax_xent, binary_xent, mse (cpu_loss.c) */
void cpu_metrics_register(backend *be);    /* metrics (cpu_metrics.c) */
void cpu_conv_register(backend *be);       /* conv2d_* (cpu_conv.c) */
void cpu_pool_register(backend *be);       /* pool2d_*, relu_maxpool_* (cpu_pool.c) */
void cpu_batchnorm_register(backend *be);  /* batchnorm_* (cpu_batchnorm.c) */
void cpu_rnn_register(backend *be);        /* rnn_*, mul (cpu_rnn.c) */
void cpu_seq_register(backend *be);        /* sequence ops, conv1d_* (cpu_seq.c) */
void cpu_hinge_register(backend *be);      /* categorical_hinge (cpu_hinge.c) */
void cpu_norm_register(backend *be);       /* layer norm, gelu (cpu_norm.c) */
void cpu_attn_register(backend *be);       /* attention (cpu_attn.c) */

#endif
