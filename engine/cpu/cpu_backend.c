/* cpu_backend.c — the CPU backend's lifecycle and memory; its ops live
 * one concern per file (cpu_dense.c: GEMM and dense; cpu_activation.c,
 * cpu_dropout.c, cpu_concat.c, cpu_loss.c, cpu_metrics.c; convolution,
 * pooling, batch normalisation, the sequence and transformer ops in
 * theirs), each setting its ops on a new backend (cpu_ops.h).
 *
 * Threads: the GEMM library is pinned to one thread and every op is
 * partitioned by the backend's pool (threadpool.h) with a static split, so
 * there is never more than one runnable thread per requested core and
 * results depend only on the thread count. */
#include "cpu/cpu.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

/* ---- memory ---------------------------------------------------------- */

static float *cpu_alloc(backend *be, long n)
{
    (void)be;
    if (n < 0)
        return NULL;
    size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static void cpu_free(backend *be, float *p)
{
    (void)be;
    free(p);
}

static void cpu_zero(backend *be, float *p, long n)
{
    (void)be;
    if (n > 0)
        memset(p, 0, (size_t)n * sizeof *p);
}

static void cpu_copy(backend *be, float *dst, const float *src, long n)
{
    (void)be;
    if (n > 0 && dst != src)
        memmove(dst, src, (size_t)n * sizeof *dst);
}

static void cpu_synchronize(backend *be)
{
    (void)be;
}

static void cpu_host_parallel(backend *be, long n,
                              void (*fn)(void *ctx, long begin, long end, int tid), void *ctx)
{
    pool_run(cpu_pool(be), n, fn, ctx);
}


/* ---- lifecycle ------------------------------------------------------- */

static void cpu_destroy(backend *be)
{
    if (!be)
        return;
    cpu_backend *cb = be->impl;
    if (cb) {
        cpu_dense_bf16_release(be);
        cpu_gelu_release(be);
        pool_free(cb->pool);
        free(cb);
    }
    free(be);
}

backend *backend_cpu_create(int threads, char *err, size_t errlen)
{
    if (threads < 1)
        threads = 1;
    /* The pool owns the cores; see the file comment. */
    openblas_set_num_threads(1);
    backend *be = calloc(1, sizeof *be);
    cpu_backend *cb = calloc(1, sizeof *cb);
    if (!be || !cb) {
        free(be);
        free(cb);
        snprintf(err, errlen, "cpu backend: out of memory");
        return NULL;
    }
    cb->pool = pool_create(threads);
    if (!cb->pool) {
        free(be);
        free(cb);
        snprintf(err, errlen, "cpu backend: cannot start %d threads", threads);
        return NULL;
    }
    *be = (backend){
        .name = "cpu",
        .host_memory = true,
        .threads = threads,
        .impl = cb,
        .destroy = cpu_destroy,
        .synchronize = cpu_synchronize,
        .host_parallel = cpu_host_parallel,
        .alloc = cpu_alloc,
        .free = cpu_free,
        .zero = cpu_zero,
        .copy = cpu_copy,
        .upload = cpu_copy,
        .download = cpu_copy,
    };
    cpu_dense_register(be);
    cpu_activation_register(be);
    cpu_dropout_register(be);
    cpu_concat_register(be);
    cpu_loss_register(be);
    cpu_metrics_register(be);
    cpu_conv_register(be);
    cpu_pool_register(be);
    cpu_batchnorm_register(be);
    cpu_rnn_register(be);
    cpu_seq_register(be);
    cpu_hinge_register(be);
    cpu_norm_register(be);
    cpu_attn_register(be);
    return be;
}

