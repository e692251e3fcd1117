/* cpu_matmul_bf16.h — GEMMs in oneDNN's bf16 matmul primitives (bf16
 * inputs, fp32 accumulation and output) for training.precision bf16, in
 * builds with oneDNN (PUNCH_HAVE_DNNL). The fp32 operands are rounded to
 * bf16 into buffers the context keeps; the rows of C are split over the
 * backend's pool as its fp32 GEMMs are, each thread running its own
 * primitive with an OpenMP team of one. Primitives and buffers are made
 * on the first call of each shape (the first training step) and kept, so
 * later steps allocate nothing. */
#ifndef PUNCH_CPU_MATMUL_BF16_H
#define PUNCH_CPU_MATMUL_BF16_H

#include <stdbool.h>

#include "cpu/threadpool.h"

typedef struct cpu_mm_bf16 cpu_mm_bf16;

/* A context for a pool of `threads` threads; NULL when oneDNN cannot make
 * its engine or memory is short. */
cpu_mm_bf16 *cpu_mm_bf16_create(int threads);
void cpu_mm_bf16_destroy(cpu_mm_bf16 *s);

/* C (m x n, ldc) = A B, or C += A B when accumulate; A is m x k (stored
 * k x m when ta), B is k x n (stored n x k when tb), fp32 row-major with
 * leading dimensions lda and ldb, rounded to bf16 before multiplying.
 * Called from the pool's owner (not inside a pool job). False, with C
 * untouched, when oneDNN has no JIT bf16 kernel for the shape (its
 * reference kernel is an order of magnitude slower than fp32) or memory is
 * short: the caller then runs the GEMM in fp32. */
bool cpu_mm_bf16_gemm(cpu_mm_bf16 *s, thread_pool *pool, bool ta, bool tb, int m, int n,
                      int k, const float *a, int lda, const float *b, int ldb,
                      bool accumulate, float *c, int ldc);

/* The dense layer's GEMMs, rounding less than three cpu_mm_bf16_gemm
 * calls would (the file comment of cpu_matmul_bf16.c), with the same bits.
 * Forward: y = x w (x: batch x in, w: in x out, y: batch x out), keeping
 * w's bf16 copy for the backward's dx. Backward: dw = x^T dz, then
 * dx (+)= dz w^T with dz rounded once; w must be unchanged since the
 * forward (as backpropagation has it). Both false, nothing written, when
 * dw (forward: y) has no JIT kernel or memory is short; *dx_done false when
 * dx was NULL or could not run in bf16 (the caller runs it in fp32). */
bool cpu_mm_bf16_dense_forward(cpu_mm_bf16 *s, thread_pool *pool, int batch, int in, int out,
                               const float *x, const float *w, float *y);
bool cpu_mm_bf16_dense_backward(cpu_mm_bf16 *s, thread_pool *pool, int batch, int in,
                                int out, const float *x, const float *w, const float *dz,
                                float *dx, bool accumulate, float *dw, bool *dx_done);

/* GEMMs run in bf16 so far, and the oneDNN implementation of the last
 * primitive made (for tests: that a JIT bf16 kernel really ran). */
long cpu_mm_bf16_calls(const cpu_mm_bf16 *s);
/* Matrices rounded to bf16 so far (for tests: that copies are reused). */
long cpu_mm_bf16_roundings(const cpu_mm_bf16 *s);
const char *cpu_mm_bf16_impl(const cpu_mm_bf16 *s);

#endif
