/* cpu_dense.h — the CPU backend's GEMM helpers (cpu_dense.c), used by
 * its dense, convolution, recurrent and attention ops. */
#ifndef PUNCH_CPU_DENSE_H
#define PUNCH_CPU_DENSE_H

#include <stdbool.h>

/* Single-threaded row-major sgemm: oneDNN when built with it, else
 * OpenBLAS (both run on the calling thread only). */
void cpu_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta,
               float *c, int ldc);

/* Run every GEMM in OpenBLAS even when the build has oneDNN (false: back
 * to oneDNN). Process-wide; for tests and benchmarks that compare the two
 * libraries in one build; set it before a model runs. */
void cpu_sgemm_force_openblas(bool on);

/* Frees what training.precision bf16 made for the dense GEMMs (the
 * backend's destroy calls it). */
struct backend;
void cpu_dense_bf16_release(struct backend *be);

#endif
