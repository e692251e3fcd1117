/* cpu_backend.h — what the CPU backend's files share: the backend's
 * context (its thread pool), the SIMD clone attribute, the parallel
 * thresholds, and (included for them) the GEMM and activation helpers of
 * cpu_dense.h, cpu_sum.h and cpu_activation.h. It declares nothing cpu_backend.c
 * defines, so the op files never depend on the file that registers them.
 * Not a public API: layers see only backend.h. */
#ifndef PUNCH_BACKEND_CPU_H
#define PUNCH_BACKEND_CPU_H

#include <stdbool.h>

#include "backend/backend.h"
#include "cpu/cpu_activation.h"
#include "cpu/cpu_dense.h"
#include "cpu/cpu_sum.h"
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
    /* training.precision bf16: the dense GEMMs' oneDNN matmul context
     * (cpu_matmul_bf16.h), made by cpu_dense.c on the first bf16 GEMM. */
    struct cpu_mm_bf16 *mm_bf16;
    /* GELU's oneDNN eltwise context (cpu_gelu_dnnl.h), made by cpu_norm.c
     * on the first GELU. */
    struct cpu_gelu_dnnl *gelu_dnnl;
} cpu_backend;

static inline thread_pool *cpu_pool(backend *be)
{
    return ((cpu_backend *)be->impl)->pool;
}

/* Below this many multiply-adds a GEMM runs on the caller alone. */
#define CPU_GEMM_MIN_PARALLEL (1L << 17)
/* Below this many elements an element-wise op runs on the caller alone. */
#define CPU_ELEM_MIN_PARALLEL (1L << 15)
/* Ops that keep a per-chunk partial result on the stack hold this many. */
#define CPU_MAX_CHUNKS 64

/* GELU of n values in place (exact: erf; else GPT-2's tanh form). */
void cpu_gelu_inplace(bool exact, float *y, long n);
/* Frees the backend's oneDNN GELU context (cpu_norm.c). */
void cpu_gelu_release(backend *be);

#endif
