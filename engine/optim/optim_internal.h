/* optim_internal.h — what the optimizer files share: the optimizer object,
 * one step kernel per algorithm, and the blocking that keeps those kernels
 * vectorized.
 *
 * Why blocks: each kernel walks its range in OPTIM_BLOCK-element blocks (an
 * inner loop of constant length, one AVX-512 vector, which vectorizes once
 * the block function is inlined with len == OPTIM_BLOCK; -O2 vectorizes
 * nothing else), takes square roots with optim_sqrt_block, and finishes
 * with one shorter block. Every element sees the same float
 * operations in the same order either way, so results do not depend on
 * where a block starts. */
#ifndef PUNCH_OPTIM_INTERNAL_H
#define PUNCH_OPTIM_INTERNAL_H

#include <math.h>

#include "optim.h"


#define OPTIM_BLOCK 16

struct optimizer {
    spec_optimizer cfg;
    long n;           /* parameters */
    long iterations;  /* steps taken */
    int n_slots;      /* per-parameter state vectors */
    float *slots;     /* n_slots * n floats, slot k at slots + k * n */
    float m_schedule; /* nadam: product of the momentum schedule so far */
};

/* Coefficients every kernel receives, already in float. */
typedef struct optim_coeffs {
    float lr;  /* this step's rate, after `decay` */
    float wd;  /* weight_decay */
} optim_coeffs;

/* sqrt of x[0 .. len-1] in place, len <= OPTIM_BLOCK. The engine builds
 * with -fno-math-errno, so this loop becomes packed square roots; sqrtf
 * and the packed instructions are both correctly rounded, so either way
 * gives the same bits. */
static inline void optim_sqrt_block(float *x /* (len) */, int len)
{
    for (int k = 0; k < len; k++)
        x[k] = sqrtf(x[k]);
}

/* The step kernels are compiled for AVX-512 and AVX2 besides the baseline
 * and picked at load time (as the CPU backend's hot loops). The build is
 * ISO C, without floating-point contraction, so every clone performs the
 * same float operations and gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define OPTIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define OPTIM_CLONES
#endif

/* The step kernels: update params[begin, end) in place from grads and the
 * optimizer's slots (params and grads are the whole buffers). The
 * iteration count is the one before this step; a kernel changes nothing
 * in `o` but the slots of its range, so disjoint ranges may run at once. */
void optim_sgd_step(optimizer *o, float *restrict params, const float *restrict grads,
                    long begin, long end, optim_coeffs c);
void optim_rmsprop_step(optimizer *o, float *restrict params, const float *restrict grads,
                        long begin, long end, optim_coeffs c);
void optim_adam_step(optimizer *o, float *restrict params, const float *restrict grads,
                     long begin, long end, optim_coeffs c);
void optim_nadam_step(optimizer *o, float *restrict params, const float *restrict grads,
                      long begin, long end, optim_coeffs c);
/* Nadam's momentum-schedule product after this step (stored by
 * optim_step_end). */
float optim_nadam_schedule_next(const optimizer *o);

#endif
