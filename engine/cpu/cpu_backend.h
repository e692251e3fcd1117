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

/* backend.h's categorical_hinge (cpu_hinge.c). */
double cpu_categorical_hinge(backend *be, int batch, int n, const float *y,
                             const float *targets, float *dy);

/* The conv and pool ops of backend.h. Their signatures are the seam's, so
 * they repeat gpu/gpu_backend.h's line for line: a deliberate pair, one
 * implementation per backend behind one interface. */
long cpu_conv2d_prepare(backend *be, conv2d_desc *d);
void cpu_conv2d_release(backend *be, conv2d_desc *d);
void cpu_conv2d_forward(backend *be, const conv2d_desc *d, int batch, const float *x,
                        const float *w, const float *bias, spec_activation act,
                        float *y, float *workspace);
void cpu_conv2d_backward(backend *be, const conv2d_desc *d, int batch, const float *x,
                         const float *w, const float *dz, float *dx, bool accumulate,
                         float *dw, float *db, float *workspace);

long cpu_pool2d_prepare(backend *be, pool2d_desc *d);
void cpu_pool2d_release(backend *be, pool2d_desc *d);
void cpu_pool2d_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                        float *y);
void cpu_pool2d_backward(backend *be, const pool2d_desc *d, int batch, const float *x,
                         const float *y, const float *dy, float *dx, bool accumulate);
void cpu_relu_maxpool_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                              float *y, uint8_t *argmax);
void cpu_relu_maxpool_backward(backend *be, const pool2d_desc *d, int batch,
                               const uint8_t *argmax, const float *y, const float *dy,
                               float *dx, bool accumulate);

long cpu_batchnorm_prepare(backend *be, batchnorm_desc *d);
void cpu_batchnorm_release(backend *be, batchnorm_desc *d);
void cpu_batchnorm_forward_train(backend *be, const batchnorm_desc *d, int batch,
                                 const float *x, const float *gamma, const float *beta,
                                 float *running_mean, float *running_var,
                                 float *save_mean, float *save_invstd, float *y,
                                 float *workspace);
void cpu_batchnorm_forward_eval(backend *be, const batchnorm_desc *d, int batch,
                                const float *x, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var,
                                float *y);
void cpu_batchnorm_backward(backend *be, const batchnorm_desc *d, int batch,
                            const float *x, const float *dy, const float *gamma,
                            const float *save_mean, const float *save_invstd,
                            float *dx, bool accumulate, float *dgamma, float *dbeta,
                            float *workspace);

/* The recurrent ops of backend.h (cpu_rnn.c). */
long cpu_rnn_prepare(backend *be, rnn_desc *d);
void cpu_rnn_release(backend *be, rnn_desc *d);
void cpu_rnn_forward(backend *be, const rnn_desc *d, int batch, const int32_t *lengths,
                     const float *x, const float *w, const float *r, const float *bias,
                     float *y, int ldy, float *aux, float *workspace);
void cpu_rnn_backward(backend *be, const rnn_desc *d, int batch, const int32_t *lengths,
                      const float *x, const float *w, const float *r, const float *dy,
                      int ldy, float *dx, bool accumulate, float *dw, float *dr,
                      float *dbias, float *aux, float *workspace);
void cpu_mul(backend *be, long n, const float *a, const float *b, float *y, bool accumulate);

/* The sequence ops of backend.h (cpu_seq.c). */
void cpu_sequence_mask(backend *be, int batch, int steps, int features,
                       const int32_t *lengths, float *x);
void cpu_embedding_forward(backend *be, int batch, int steps, int dim, const int32_t *lengths,
                           const float *ids, const float *table, float *y);
void cpu_embedding_backward(backend *be, int batch, int steps, int vocab, int dim,
                            const int32_t *lengths, const float *ids, const float *dy,
                            float *dtable);
void cpu_global_pool1d_forward(backend *be, pool_mode mode, int batch, int steps, int features,
                               const int32_t *lengths, const float *x, float *y);
void cpu_global_pool1d_backward(backend *be, pool_mode mode, int batch, int steps,
                                int features, const int32_t *lengths, const float *x,
                                const float *y, const float *dy, float *dx, bool accumulate);
void cpu_pool1d_forward(backend *be, const pool1d_desc *d, int batch, const int32_t *lengths,
                        const float *x, float *y);
void cpu_pool1d_backward(backend *be, const pool1d_desc *d, int batch, const int32_t *lengths,
                         const float *x, const float *y, const float *dy, float *dx,
                         bool accumulate);
long cpu_conv1d_prepare(backend *be, const conv1d_desc *d);
void cpu_conv1d_forward(backend *be, const conv1d_desc *d, int batch, const int32_t *lengths,
                        const float *x, const float *w, const float *bias, spec_activation act,
                        float *y, float *workspace);
void cpu_conv1d_backward(backend *be, const conv1d_desc *d, int batch, const int32_t *lengths,
                         const float *x, const float *w, float *dz, float *dx,
                         bool accumulate, float *dw, float *db, float *workspace);

/* Transformers (cpu_norm.c, cpu_attn.c): set their ops on `be`. */
void cpu_norm_register(backend *be);
void cpu_attn_register(backend *be);
/* GELU of n values in place (exact: erf; else GPT-2's tanh form). */
void cpu_gelu_inplace(bool exact, float *y, long n);

#endif
