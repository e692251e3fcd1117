/* cpu_gelu_dnnl.c — the GELU of cpu_gelu_dnnl.h. libm's scalar tanhf was
 * half the gpt preset's CPU step (docs/performance.md); oneDNN's eltwise
 * gelu_tanh and gelu_erf run the same functions in AVX-512/AVX2 code.
 * A primitive is made for one shape, so every call runs blocks of
 * GELU_BLOCK values: a chunk's last, shorter block goes through the
 * thread's padded buffers. Each value then takes the same vector code
 * wherever it lies, so the bits depend neither on the thread count nor on
 * n. The backward's accumulate writes into a buffer first and adds. */
#include "cpu/cpu_gelu_dnnl.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_dnnl_thread.h"

/* Values per primitive execution: large enough that a call's overhead is
 * lost (~1 us against ~4 us of work), small enough that a block's three
 * buffers stay in L2. A multiple of every vector width. */
#define GELU_BLOCK 4096L

enum { GELU_SRC, GELU_DIFF_DST, GELU_OUT, GELU_BUFS };

struct cpu_gelu_dnnl {
    int threads;
    dnnl_engine_t engine;
    dnnl_stream_t *streams;
    dnnl_primitive_t prim[2][2]; /* [exact][backward], made on first use */
    dnnl_memory_t *mem;          /* per thread: GELU_BUFS handles, pointed per block */
    float *pad;                  /* per thread: GELU_BUFS blocks */
    char impl[64];
};

typedef struct gelu_dnnl_job {
    cpu_gelu_dnnl *g;
    dnnl_primitive_t prim;
    bool backward, accumulate;
    const float *x, *dy;
    float *out;
} gelu_dnnl_job;

cpu_gelu_dnnl *cpu_gelu_dnnl_create(int threads)
{
    cpu_dnnl_one_thread();
    cpu_gelu_dnnl *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->threads = threads < 1 ? 1 : threads;
    size_t bufs = (size_t)g->threads * GELU_BUFS;
    g->streams = calloc((size_t)g->threads, sizeof *g->streams);
    g->mem = calloc(bufs, sizeof *g->mem);
    g->pad = aligned_alloc(64, bufs * GELU_BLOCK * sizeof *g->pad);
    if (!g->streams || !g->mem || !g->pad ||
        dnnl_engine_create(&g->engine, dnnl_cpu, 0) != dnnl_success) {
        g->engine = NULL;
        cpu_gelu_dnnl_destroy(g);
        return NULL;
    }
    /* Finite values beyond a short block's end. */
    memset(g->pad, 0, bufs * GELU_BLOCK * sizeof *g->pad);
    dnnl_dims_t dims = {GELU_BLOCK};
    dnnl_memory_desc_t md;
    bool ok = dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_f32, dnnl_a) == dnnl_success;
    for (int t = 0; ok && t < g->threads; t++)
        ok = dnnl_stream_create(&g->streams[t], g->engine, dnnl_stream_default_flags) ==
             dnnl_success;
    for (size_t i = 0; ok && i < bufs; i++)
        ok = dnnl_memory_create(&g->mem[i], &md, g->engine, DNNL_MEMORY_NONE) == dnnl_success;
    if (!ok) {
        cpu_gelu_dnnl_destroy(g);
        return NULL;
    }
    return g;
}

void cpu_gelu_dnnl_destroy(cpu_gelu_dnnl *g)
{
    if (!g)
        return;
    for (int e = 0; e < 2; e++)
        for (int b = 0; b < 2; b++)
            if (g->prim[e][b])
                dnnl_primitive_destroy(g->prim[e][b]);
    for (int i = 0; g->mem && i < g->threads * GELU_BUFS; i++)
        if (g->mem[i])
            dnnl_memory_destroy(g->mem[i]);
    for (int t = 0; g->streams && t < g->threads; t++)
        if (g->streams[t])
            dnnl_stream_destroy(g->streams[t]);
    if (g->engine)
        dnnl_engine_destroy(g->engine);
    free(g->streams);
    free(g->mem);
    free(g->pad);
    free(g);
}

const char *cpu_gelu_dnnl_impl(const cpu_gelu_dnnl *g)
{
    return g ? g->impl : "";
}

/* ---- primitives ------------------------------------------------------ */

/* The forward primitive descriptor (also the backward's hint). */
static dnnl_primitive_desc_t gelu_dnnl_fwd_pd(cpu_gelu_dnnl *g, dnnl_alg_kind_t alg,
                                              const dnnl_memory_desc_t *md)
{
    dnnl_eltwise_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_training, alg, md, 0.0f, 0.0f) !=
            dnnl_success ||
        dnnl_primitive_desc_create(&pd, &desc, NULL, g->engine, NULL) != dnnl_success)
        return NULL;
    return pd;
}

/* The primitive of pd when oneDNN runs it in a JIT kernel and needs no
 * scratchpad (eltwise never does); NULL otherwise. */
static dnnl_primitive_t gelu_dnnl_prim(cpu_gelu_dnnl *g, dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    dnnl_primitive_t prim = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        !impl || strncmp(impl, "ref", 3) == 0)
        return NULL;
    const dnnl_memory_desc_t *scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (scratch && dnnl_memory_desc_get_size(scratch) != 0)
        return NULL;
    if (dnnl_primitive_create(&prim, pd) != dnnl_success)
        return NULL;
    strncpy(g->impl, impl, sizeof g->impl - 1);
    return prim;
}

/* The cached primitive for the form, made on first use; NULL when oneDNN
 * has no JIT kernel for it or fails. */
static dnnl_primitive_t gelu_dnnl_get(cpu_gelu_dnnl *g, bool exact, bool backward)
{
    if (g->prim[exact][backward])
        return g->prim[exact][backward];
    dnnl_alg_kind_t alg = exact ? dnnl_eltwise_gelu_erf : dnnl_eltwise_gelu_tanh;
    dnnl_dims_t dims = {GELU_BLOCK};
    dnnl_memory_desc_t md;
    if (dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_f32, dnnl_a) != dnnl_success)
        return NULL;
    dnnl_primitive_desc_t fwd = gelu_dnnl_fwd_pd(g, alg, &md), pd = fwd;
    dnnl_eltwise_desc_t desc;
    if (fwd && backward) {
        pd = NULL;
        if (dnnl_eltwise_backward_desc_init(&desc, alg, &md, &md, 0.0f, 0.0f) == dnnl_success &&
            dnnl_primitive_desc_create(&pd, &desc, NULL, g->engine, fwd) != dnnl_success)
            pd = NULL;
    }
    if (pd)
        g->prim[exact][backward] = gelu_dnnl_prim(g, pd);
    if (pd && pd != fwd)
        dnnl_primitive_desc_destroy(pd);
    if (fwd)
        dnnl_primitive_desc_destroy(fwd);
    return g->prim[exact][backward];
}

/* ---- running --------------------------------------------------------- */

/* One block of GELU_BLOCK values through the thread's memory objects. */
static bool gelu_dnnl_exec(const gelu_dnnl_job *j, int tid, const float *x, const float *dy,
                           float *out)
{
    dnnl_memory_t *mem = j->g->mem + (size_t)tid * GELU_BUFS;
    dnnl_exec_arg_t args[3];
    int nargs = 0;
    bool ok = dnnl_memory_set_data_handle(mem[GELU_SRC], (void *)x) == dnnl_success &&
              dnnl_memory_set_data_handle(mem[GELU_OUT], out) == dnnl_success;
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem[GELU_SRC]};
    if (j->backward) {
        ok = ok && dnnl_memory_set_data_handle(mem[GELU_DIFF_DST], (void *)dy) == dnnl_success;
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mem[GELU_DIFF_DST]};
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, mem[GELU_OUT]};
    } else {
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mem[GELU_OUT]};
    }
    dnnl_stream_t stream = j->g->streams[tid];
    return ok && dnnl_primitive_execute(j->prim, stream, nargs, args) == dnnl_success &&
           dnnl_stream_wait(stream) == dnnl_success;
}

/* Values [i, i + m), m <= GELU_BLOCK: a short block or an accumulating
 * backward goes through the thread's own buffers. */
static void gelu_dnnl_block(const gelu_dnnl_job *j, int tid, long i, long m)
{
    float *pad = j->g->pad + (size_t)tid * GELU_BUFS * GELU_BLOCK;
    float *px = pad + GELU_SRC * GELU_BLOCK, *pdy = pad + GELU_DIFF_DST * GELU_BLOCK;
    float *pout = pad + GELU_OUT * GELU_BLOCK;
    const float *x = j->x + i, *dy = j->dy ? j->dy + i : NULL;
    float *out = j->out + i;
    bool whole = m == GELU_BLOCK;
    if (!whole) {
        memcpy(px, x, (size_t)m * sizeof *px);
        x = px;
        if (dy) {
            memcpy(pdy, dy, (size_t)m * sizeof *pdy);
            dy = pdy;
        }
    }
    float *to = whole && !j->accumulate ? out : pout;
    /* Blocks of a primitive made and checked in the owner cannot fail but
     * for a broken oneDNN, which the caller's loop would not mend. */
    (void)gelu_dnnl_exec(j, tid, x, dy, to);
    if (j->accumulate)
        for (long c = 0; c < m; c++)
            out[c] += pout[c];
    else if (to != out)
        memcpy(out, pout, (size_t)m * sizeof *out);
}

static void gelu_dnnl_chunk(void *ctx, long begin, long end, int tid)
{
    const gelu_dnnl_job *j = ctx;
    cpu_dnnl_one_thread();
    for (long i = begin; i < end; i += GELU_BLOCK)
        gelu_dnnl_block(j, tid, i, end - i < GELU_BLOCK ? end - i : GELU_BLOCK);
}

static bool gelu_dnnl_run(gelu_dnnl_job *j, thread_pool *pool, bool exact, long n)
{
    j->prim = gelu_dnnl_get(j->g, exact, j->backward);
    if (!j->prim || pool_threads(pool) > j->g->threads)
        return false;
    pool_run_min(pool, n, CPU_ELEM_MIN_PARALLEL, gelu_dnnl_chunk, j);
    return true;
}

bool cpu_gelu_dnnl_forward(cpu_gelu_dnnl *g, thread_pool *pool, bool exact, long n,
                           const float *x, float *y)
{
    gelu_dnnl_job j = {g, NULL, false, false, x, NULL, y};
    return gelu_dnnl_run(&j, pool, exact, n);
}

bool cpu_gelu_dnnl_backward(cpu_gelu_dnnl *g, thread_pool *pool, bool exact, long n,
                            const float *x, const float *dy, float *dx, bool accumulate)
{
    gelu_dnnl_job j = {g, NULL, true, accumulate, x, dy, dx};
    return gelu_dnnl_run(&j, pool, exact, n);
}
