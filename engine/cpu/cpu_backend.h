/* cpu_backend.h — internals shared by the CPU backend's files
 * (cpu_backend.c, cpu_conv.c, cpu_pool.c, cpu_batchnorm.c, cpu_hinge.c,
 * cpu_rnn.c, cpu_seq.c).
 * Not a public API: layers see only backend.h. */
#ifndef PUNCH_BACKEND_CPU_H
#define PUNCH_BACKEND_CPU_H

#include <stdbool.h>

#include "backend/backend.h"
#include "cpu/threadpool.h"

/* Hot loops compiled for AVX-512 and AVX2 besides the baseline, the best
 * picked when the program loads (GCC's ifunc dispatch on the CPU's
 * features). The build is ISO C (no FP contraction), so every clone does
 * the same float operations and gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define CPU_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_SIMD_CLONES
#endif

typedef struct cpu_backend {
    thread_pool *pool;
} cpu_backend;

static inline thread_pool *cpu_pool(backend *be)
{
    return ((cpu_backend *)be->impl)->pool;
}

/* Single-threaded row-major sgemm: oneDNN when built with it, else
 * OpenBLAS (both run on the calling thread only). */
void cpu_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta,
               float *c, int ldc);

/* Run every GEMM in OpenBLAS even when the build has oneDNN (false: back
 * to oneDNN). Process-wide; for tests and benchmarks that compare the two
 * libraries in one build; set it before a model runs. */
void cpu_sgemm_force_openblas(bool on);

/* Sum of x[0 .. n-1] in a fixed order that vectorises: 16 running lanes
 * (lane j takes the elements i = j mod 16), then the lanes in order. */
float cpu_sum(const float *x, long n);

/* In-place activation of `n` contiguous values (not softmax). */
void cpu_activate(spec_activation act, float *y, long n);
/* In-place softmax of one row of n values. */
void cpu_softmax_row(float *y, int n);

/* Each op file sets its ops of backend.h on a new backend; backend.h's
 * function table gives their signatures, so they are not repeated here.
 * cpu_mul is the recurrent files' element-wise product. */
void cpu_conv_register(backend *be);      /* conv2d_* (cpu_conv.c) */
void cpu_pool_register(backend *be);      /* pool2d_*, relu_maxpool_* (cpu_pool.c) */
void cpu_batchnorm_register(backend *be); /* batchnorm_* (cpu_batchnorm.c) */
void cpu_rnn_register(backend *be);       /* rnn_*, mul (cpu_rnn.c) */
void cpu_seq_register(backend *be);       /* sequence ops, conv1d_* (cpu_seq.c) */
void cpu_hinge_register(backend *be);     /* categorical_hinge (cpu_hinge.c) */

/* Transformers (cpu_norm.c, cpu_attn.c): set their ops on `be`. */
void cpu_norm_register(backend *be);
void cpu_attn_register(backend *be);
/* GELU of n values in place (exact: erf; else GPT-2's tanh form). */
void cpu_gelu_inplace(bool exact, float *y, long n);

#endif
