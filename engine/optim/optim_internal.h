/* optim_internal.h — what the optimizer files share: the optimizer object,
 * one step kernel per algorithm, and the blocking that keeps those kernels
 * vectorized at -O2.
 *
 * Why blocks: GCC at -O2 only vectorizes a loop whose trip count is a known
 * multiple of the vector width, and never one that calls sqrtf while
 * -fmath-errno is on (the default). Each kernel therefore walks the buffer
 * in OPTIM_BLOCK-element blocks (an inner loop of constant length, which
 * vectorizes once the block function is inlined with len == OPTIM_BLOCK),
 * takes square roots with optim_sqrt_block (packed SSE where available),
 * and finishes with one shorter block. Every element sees the same float
 * operations in the same order either way, so results do not depend on
 * where a block starts. */
#ifndef PUNCH_OPTIM_INTERNAL_H
#define PUNCH_OPTIM_INTERNAL_H

#include <math.h>

#include "optim.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#define OPTIM_BLOCK 8

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

/* sqrt of x[0 .. len-1] in place, len <= OPTIM_BLOCK. Inlined with
 * len == OPTIM_BLOCK it becomes packed square roots; _mm_sqrt_ps and sqrtf
 * are both correctly rounded, so either path gives the same bits. */
static inline void optim_sqrt_block(float *x /* (len) */, int len)
{
#if defined(__SSE__)
    if (len == OPTIM_BLOCK) {
        for (int k = 0; k < OPTIM_BLOCK; k += 4)
            _mm_storeu_ps(x + k, _mm_sqrt_ps(_mm_loadu_ps(x + k)));
        return;
    }
#endif
    for (int k = 0; k < len; k++)
        x[k] = sqrtf(x[k]);
}

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
