/* fma_peak.c — punch-bench-fma: the single-core fused-multiply-add ceiling
 * of this CPU with 256-bit (AVX2) and 512-bit (AVX-512) vectors, to tell
 * whether an AVX-512 GEMM or convolution kernel can beat OpenBLAS's AVX2
 * one here at all. Twelve independent accumulator chains per width hide
 * the FMA latency, so the loop runs at the FMA units' throughput.
 *
 *   punch-bench-fma [--iterations N]
 *
 * Prints one JSON object: GFLOP/s per core for each width, best of three. */
#include <immintrin.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil/timeutil.h"

#define FMA_CHAINS 12

/* The sums are returned so the compiler cannot drop the loops. fma_zmm
 * and fma_ymm are one measurement written twice on purpose: each vector
 * width needs its own intrinsics and target attribute, and a shared macro
 * would hide the very instructions being timed. */
__attribute__((target("avx512f"))) static double fma_zmm(long iterations, float *sink)
{
    __m512 acc[FMA_CHAINS];
    __m512 mul = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(0.001f);
    for (int i = 0; i < FMA_CHAINS; i++)
        acc[i] = _mm512_set1_ps((float)i);
    double t0 = timeutil_mono_s();
    for (long k = 0; k < iterations; k++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
    double sec = timeutil_mono_s() - t0;
    for (int i = 0; i < FMA_CHAINS; i++)
        *sink += _mm512_reduce_add_ps(acc[i]);
    return (double)iterations * FMA_CHAINS * 16 * 2 / sec * 1e-9;
}

__attribute__((target("avx2,fma"))) static double fma_ymm(long iterations, float *sink)
{
    __m256 acc[FMA_CHAINS];
    __m256 mul = _mm256_set1_ps(0.999f), add = _mm256_set1_ps(0.001f);
    for (int i = 0; i < FMA_CHAINS; i++)
        acc[i] = _mm256_set1_ps((float)i);
    double t0 = timeutil_mono_s();
    for (long k = 0; k < iterations; k++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_CHAINS; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
    double sec = timeutil_mono_s() - t0;
    float lanes[8];
    for (int i = 0; i < FMA_CHAINS; i++) {
        _mm256_storeu_ps(lanes, acc[i]);
        *sink += lanes[0];
    }
    return (double)iterations * FMA_CHAINS * 8 * 2 / sec * 1e-9;
}

int main(int argc, char **argv)
{
    long iterations = 50000000;
    if (argc == 3 && strcmp(argv[1], "--iterations") == 0)
        iterations = atol(argv[2]);
    else if (argc != 1) {
        fprintf(stderr, "usage: punch-bench-fma [--iterations N]\n");
        return 2;
    }
    if (iterations < 1) {
        fprintf(stderr, "punch-bench-fma: --iterations must be positive\n");
        return 2;
    }
    __builtin_cpu_init();
    bool has512 = __builtin_cpu_supports("avx512f");
    bool has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    double best512 = 0, best256 = 0;
    float sink = 0;
    for (int r = 0; r < 3; r++) {
        double z = has512 ? fma_zmm(iterations, &sink) : 0;
        double y = has256 ? fma_ymm(iterations, &sink) : 0;
        best512 = z > best512 ? z : best512;
        best256 = y > best256 ? y : best256;
    }
    printf("{\"avx512_gflops_per_core\":%.1f,\"avx2_gflops_per_core\":%.1f,\"sink\":%g}\n",
           best512, best256, (double)sink);
    return 0;
}
