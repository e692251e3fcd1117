/* gpu_math.h — per-element formulas shared by the CUDA kernels and the
 * host, so the host's unit tests check exactly what the device computes:
 * the dropout mask rule of backend.h and the optimizer updates of optim.h.
 * Compiled as C by the host compiler and as CUDA C++ by nvcc (GPU_HD marks
 * functions for both sides). */
#ifndef PUNCH_GPU_MATH_H
#define PUNCH_GPU_MATH_H

#include <stdint.h>

#ifdef __CUDACC__
#define GPU_HD __host__ __device__
#else
#define GPU_HD
#endif

#include <math.h>

/* backend_dropout_keep() of backend.h, callable on the device. */
GPU_HD static inline int gpu_dropout_keep(uint64_t seed, uint64_t i, float rate)
{
    uint64_t x = seed ^ ((i + 1) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    float u = (float)(x >> 40) * (1.0f / 16777216.0f);
    return u >= rate;
}

typedef enum gpu_optim_kind {
    GPU_OPT_SGD,          /* no state */
    GPU_OPT_MOMENTUM,     /* velocity */
    GPU_OPT_NESTEROV,     /* velocity */
    GPU_OPT_RMSPROP,      /* mean square */
    GPU_OPT_ADAM,         /* m, v */
    GPU_OPT_NADAM,        /* m, v */
} gpu_optim_kind;

/* One step's coefficients, computed on the host in double exactly as
 * engine/optim/ does and rounded to float. */
typedef struct gpu_optim_coeffs {
    int kind;             /* gpu_optim_kind */
    float lr;             /* after decay */
    float wd;             /* weight decay */
    float mu;             /* sgd momentum */
    float rho, one_rho;   /* rmsprop */
    float b1, one_b1, b2, one_b2;
    float eps;
    float lr_t;           /* adam: lr * sqrt(1 - b2^t) / (1 - b1^t) */
    float cg, cm, vscale; /* nadam, see engine/optim/nadam.c */
} gpu_optim_coeffs;

/* Updates parameter i in place; s0 and s1 are the state slots the kind
 * uses (NULL otherwise). The float operations and their order are those of
 * the engine/optim/ files. */
GPU_HD static inline void gpu_optim_update(const gpu_optim_coeffs *k, long i, float *p,
                                           const float *g, float *s0, float *s1)
{
    float gi = g[i] + k->wd * p[i];
    switch (k->kind) {
    case GPU_OPT_SGD:
        p[i] -= k->lr * gi;
        return;
    case GPU_OPT_MOMENTUM:
    case GPU_OPT_NESTEROV: {
        float vi = k->mu * s0[i] - k->lr * gi;
        s0[i] = vi;
        p[i] += k->kind == GPU_OPT_NESTEROV ? k->mu * vi - k->lr * gi : vi;
        return;
    }
    case GPU_OPT_RMSPROP: {
        float ai = k->rho * s0[i] + k->one_rho * gi * gi;
        s0[i] = ai;
        p[i] -= k->lr * gi / (sqrtf(ai) + k->eps);
        return;
    }
    case GPU_OPT_ADAM: {
        float mi = k->b1 * s0[i] + k->one_b1 * gi;
        float vi = k->b2 * s1[i] + k->one_b2 * gi * gi;
        s0[i] = mi;
        s1[i] = vi;
        p[i] -= k->lr_t * mi / (sqrtf(vi) + k->eps);
        return;
    }
    case GPU_OPT_NADAM: {
        float mi = k->b1 * s0[i] + k->one_b1 * gi;
        float vi = k->b2 * s1[i] + k->one_b2 * gi * gi;
        s0[i] = mi;
        s1[i] = vi;
        float mbar = k->cg * gi + k->cm * mi;
        p[i] -= k->lr * mbar / (sqrtf(vi * k->vscale) + k->eps);
        return;
    }
    }
}

#endif
