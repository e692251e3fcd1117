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

#include "optim/optim.h"

#define OPTIM_BLOCK 16

struct optimizer {
    spec_optimizer cfg;
    long n;           /* parameters */
    long iterations;  /* steps taken */
    int n_slots;      /* per-parameter state vectors */
    float *slots;     /* n_slots * n floats, slot k at slots + k * n */
    float m_schedule; /* nadam: product of the momentum schedule so far */
    long *decay;      /* adamw: n_decay [begin, end) pairs that decay; NULL = all */
    int n_decay;
};

/* sqrt of x[0 .. len-1] in place, len <= OPTIM_BLOCK. The engine builds
 * with -fno-math-errno, so this loop becomes packed square roots; sqrtf
 * and the packed instructions are both correctly rounded, so either way
 * gives the same bits. */
static inline void optim_sqrt_block(float *x /* (len) */, int len)
{
    for (int k = 0; k < len; k++)
        x[k] = sqrtf(x[k]);
}

/* The block function of a kernel with two state slots (Adam, Nadam). */
typedef void (*optim_block2_fn)(float *restrict p, const float *restrict g, float *restrict m,
                                float *restrict v, int len, const optim_coeffs *c);

/* Walk [begin, end) of params, grads and the two slots in OPTIM_BLOCK
 * blocks, then one shorter block. Always inlined, so `block` is a constant
 * at each call and is inlined in turn with a constant length (what makes
 * it vectorize). c is copied first: no store through the restrict
 * buffers can reach the copy, so its fields stay in registers. */
static inline __attribute__((always_inline)) void
optim_blocks2(optim_block2_fn block, optimizer *o, float *restrict params,
              const float *restrict grads, long begin, long end, const optim_coeffs *c)
{
    const optim_coeffs k = *c;
    float *m = o->slots;
    float *v = o->slots + o->n;
    long i = begin;
    for (; i + OPTIM_BLOCK <= end; i += OPTIM_BLOCK)
        block(params + i, grads + i, m + i, v + i, OPTIM_BLOCK, &k);
    block(params + i, grads + i, m + i, v + i, (int)(end - i), &k);
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

/* Each algorithm's part of optim_coeffs_for: fill its fields of *c for
 * step t = iterations + 1 (c->lr, wd and eps are already set). */
void optim_sgd_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c);
void optim_rmsprop_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c);
void optim_adam_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c);
void optim_nadam_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c);
void optim_adamw_coeffs(const spec_optimizer *cfg, double t, optim_coeffs *c);

/* The step kernels: update params[begin, end) in place from grads and the
 * optimizer's slots (params and grads are the whole buffers) with this
 * step's coefficients. A kernel changes nothing in `o` but the slots of
 * its range, so disjoint ranges may run at once. */
void optim_sgd_step(optimizer *o, float *restrict params, const float *restrict grads,
                    long begin, long end, const optim_coeffs *c);
void optim_rmsprop_step(optimizer *o, float *restrict params, const float *restrict grads,
                        long begin, long end, const optim_coeffs *c);
void optim_adam_step(optimizer *o, float *restrict params, const float *restrict grads,
                     long begin, long end, const optim_coeffs *c);
void optim_nadam_step(optimizer *o, float *restrict params, const float *restrict grads,
                      long begin, long end, const optim_coeffs *c);
void optim_adamw_step(optimizer *o, float *restrict params, const float *restrict grads,
                      long begin, long end, const optim_coeffs *c);

#endif
