/* cpu_gelu_dnnl.h — GELU (forward and backward, tanh and erf forms) in
 * oneDNN's JIT-vectorised eltwise primitives, in builds with oneDNN
 * (PUNCH_HAVE_DNNL); cpu_norm.c's scalar loops run it otherwise. The
 * values are split over the backend's pool as its element-wise ops are,
 * each thread running the primitives in fixed-size blocks with an OpenMP
 * team of one. Primitives are made on the first call of each form and
 * kept, with every buffer, so later calls allocate nothing. */
#ifndef PUNCH_CPU_GELU_DNNL_H
#define PUNCH_CPU_GELU_DNNL_H

#include <stdbool.h>

#include "cpu/threadpool.h"

typedef struct cpu_gelu_dnnl cpu_gelu_dnnl;

/* A context for a pool of `threads` threads; NULL when oneDNN cannot make
 * its engine or memory is short. */
cpu_gelu_dnnl *cpu_gelu_dnnl_create(int threads);
void cpu_gelu_dnnl_destroy(cpu_gelu_dnnl *g);

/* y = gelu(x) (exact: erf form, else tanh form); x == y allowed. Called
 * from the pool's owner. False, nothing written, when oneDNN cannot make
 * the primitive: the caller then runs its own loop. */
bool cpu_gelu_dnnl_forward(cpu_gelu_dnnl *g, thread_pool *pool, bool exact, long n,
                           const float *x, float *y);
/* dx (+)= dy * gelu'(x); dx == dy allowed when !accumulate. False as the
 * forward. */
bool cpu_gelu_dnnl_backward(cpu_gelu_dnnl *g, thread_pool *pool, bool exact, long n,
                            const float *x, const float *dy, float *dx, bool accumulate);

/* oneDNN's implementation of the last primitive made (for tests: that a
 * JIT kernel, not the reference one, runs). */
const char *cpu_gelu_dnnl_impl(const cpu_gelu_dnnl *g);

#endif
