/* cpu_sum.c — the fixed-order sum the CPU backend's reductions share
 * (bias gradients, normalisation); its own file so that the files using
 * it depend on it alone. */
#include "cpu/cpu_sum.h"

#include "cpu/cpu_backend.h"

CPU_SIMD_CLONES
float cpu_sum(const float *x, long n)
{
    float lane[16] = {0};
    long i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            lane[j] += x[i + j];
    for (int j = 0; i < n; i++, j++)
        lane[j] += x[i];
    float s = 0.0f;
    for (int j = 0; j < 16; j++)
        s += lane[j];
    return s;
}
