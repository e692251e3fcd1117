/* cpu_matmul_bf16.c — the bf16 GEMM of cpu_matmul_bf16.h. oneDNN 2.6 has
 * no bf16 sgemm in its BLAS-like API (nor has OpenBLAS in Debian), but its
 * matmul primitive takes bf16 src and weights with an fp32 dst and runs
 * them in AVX512_BF16/AMX kernels. Each call rounds A and B to bf16 (round
 * to nearest even, so the same inputs give the same bits), then every pool
 * thread runs a matmul on its rows of C: rows split as pool_run splits
 * them, so the result depends only on the thread count. A transposed B
 * keeps its storage order (described by strides); a transposed A is
 * transposed as it is converted: oneDNN 2.6 runs a strided ("ba") bf16 src
 * in its slower gemm:jit kernel instead of brgemm (dw = x^T dz of the gpt
 * preset took 1.4x the time of all its other matmuls together).
 *
 * The dense layer's pair (cpu_mm_bf16_dense_forward and _backward) rounds
 * less: the forward keeps its bf16 copy of w for the backward's dx, and
 * the backward rounds dz once for both dx and dw, so a step rounds w once
 * and four matrices in all instead of six (the copy of w is refreshed by
 * every forward and dropped by the dx that used it, so a weight update
 * between steps is never missed). */
#include "cpu/cpu_matmul_bf16.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_dnnl_thread.h"

/* Shapes kept per context: a model's dense layers need three GEMMs each,
 * in at most two row-chunk sizes, for the full and the short last batch. */
#define MM_MAX_ENTRIES 256
/* Dense layers whose forward's copy of w is kept for their backward; a
 * model with more layers replaces the oldest copy. */
#define MM_MAX_WEIGHTS 128

/* A is always packed (m x k, transposed as it is rounded), so its
 * orientation is not part of the primitive. */
typedef struct mm_key {
    int mc, n, k;
    long sb, ldc; /* strides: B's, C's */
    bool tb, acc;
} mm_key;

typedef struct mm_entry {
    mm_key key;
    dnnl_primitive_t prim; /* NULL: oneDNN has no JIT kernel for the shape */
    dnnl_memory_t *mem;    /* per thread: src, weights, dst, scratchpad */
} mm_entry;

/* The bf16 copy of a dense layer's w made by its forward, valid until the
 * dx of its backward used it. The slot stays w's (its buffer sized for w)
 * while valid or not, so steps after the first allocate nothing. */
typedef struct mm_weight {
    const float *w; /* the fp32 master it copies; NULL: a slot never used */
    long n;         /* elements of w */
    bool valid;
    uint16_t *data;
    long cap;
    long stamp; /* forwards so far at the last refresh: the oldest is replaced */
} mm_weight;

struct cpu_mm_bf16 {
    int threads;
    dnnl_engine_t engine;
    dnnl_stream_t *streams;
    mm_entry entries[MM_MAX_ENTRIES];
    int n_entries;
    uint16_t *a, *b, *d; /* A and B in bf16, packed; d: the dense backward's dz */
    long a_cap, b_cap, d_cap;
    mm_weight weights[MM_MAX_WEIGHTS];
    long forwards;
    mm_entry **chunk; /* per thread: the entry of its rows in this call */
    /* Per thread: the primitives' scratchpad. oneDNN's own (library mode)
     * is one buffer for the process unless built for concurrent execution,
     * and the pool's threads run primitives at once. */
    void **scratch;
    size_t scratch_bytes;
    long calls;
    long roundings; /* matrices rounded to bf16 so far */
    char impl[64];
};

cpu_mm_bf16 *cpu_mm_bf16_create(int threads)
{
    /* Also before a primitive is made: oneDNN sizes its split of the work
     * by the creating thread's team, and a split of K would change the
     * sums' order from one primitive to the next. */
    cpu_dnnl_one_thread();
    cpu_mm_bf16 *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->threads = threads < 1 ? 1 : threads;
    s->streams = calloc((size_t)s->threads, sizeof *s->streams);
    s->chunk = calloc((size_t)s->threads, sizeof *s->chunk);
    s->scratch = calloc((size_t)s->threads, sizeof *s->scratch);
    if (!s->streams || !s->chunk || !s->scratch || dnnl_engine_create(&s->engine, dnnl_cpu, 0)) {
        s->engine = NULL;
        cpu_mm_bf16_destroy(s);
        return NULL;
    }
    for (int t = 0; t < s->threads; t++)
        if (dnnl_stream_create(&s->streams[t], s->engine, dnnl_stream_default_flags)) {
            s->streams[t] = NULL;
            cpu_mm_bf16_destroy(s);
            return NULL;
        }
    return s;
}

static void mm_entry_free(cpu_mm_bf16 *s, mm_entry *e)
{
    if (e->mem)
        for (int i = 0; i < 4 * s->threads; i++)
            if (e->mem[i])
                dnnl_memory_destroy(e->mem[i]);
    free(e->mem);
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
}

void cpu_mm_bf16_destroy(cpu_mm_bf16 *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_entries; i++)
        mm_entry_free(s, &s->entries[i]);
    for (int t = 0; s->streams && t < s->threads; t++)
        if (s->streams[t])
            dnnl_stream_destroy(s->streams[t]);
    if (s->engine)
        dnnl_engine_destroy(s->engine);
    free(s->streams);
    free(s->chunk);
    for (int t = 0; s->scratch && t < s->threads; t++)
        free(s->scratch[t]);
    free(s->scratch);
    free(s->a);
    free(s->b);
    free(s->d);
    for (int i = 0; i < MM_MAX_WEIGHTS; i++)
        free(s->weights[i].data);
    free(s);
}

long cpu_mm_bf16_calls(const cpu_mm_bf16 *s)
{
    return s ? s->calls : 0;
}

long cpu_mm_bf16_roundings(const cpu_mm_bf16 *s)
{
    return s ? s->roundings : 0;
}

const char *cpu_mm_bf16_impl(const cpu_mm_bf16 *s)
{
    return s ? s->impl : "";
}

/* ---- primitives ------------------------------------------------------ */

static bool mm_md(dnnl_memory_desc_t *md, dnnl_dim_t r, dnnl_dim_t c, dnnl_dim_t sr,
                  dnnl_dim_t sc, dnnl_data_type_t dt)
{
    dnnl_dims_t dims = {r, c}, strides = {sr, sc};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides) == dnnl_success;
}

/* Every thread's scratchpad to at least bytes (64-byte aligned). */
static bool mm_scratch_grow(cpu_mm_bf16 *s, size_t bytes)
{
    if (bytes <= s->scratch_bytes)
        return true;
    size_t size = (bytes + 63) / 64 * 64;
    for (int t = 0; t < s->threads; t++) {
        void *p = aligned_alloc(64, size);
        if (!p)
            return false;
        free(s->scratch[t]);
        s->scratch[t] = p;
    }
    s->scratch_bytes = size;
    return true;
}

/* The primitive and per-thread memory objects for key; e->prim stays NULL
 * when oneDNN offers only its reference kernel. False when oneDNN fails. */
static bool mm_entry_build(cpu_mm_bf16 *s, mm_entry *e)
{
    const mm_key *k = &e->key;
    dnnl_memory_desc_t src, wei, dst, scratch;
    bool ok = mm_md(&src, k->mc, k->k, k->k, 1, dnnl_bf16) &&
              mm_md(&wei, k->k, k->n, k->tb ? 1 : k->n, k->tb ? k->k : 1, dnnl_bf16) &&
              mm_md(&dst, k->mc, k->n, k->ldc, 1, dnnl_f32);
    dnnl_matmul_desc_t desc;
    if (!ok || dnnl_matmul_desc_init(&desc, &src, &wei, NULL, &dst))
        return false;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
         dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ==
             dnnl_success;
    if (ok && k->acc)
        ok = dnnl_post_ops_create(&po) == dnnl_success &&
             dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    ok = ok && dnnl_primitive_desc_create(&pd, &desc, attr, s->engine, NULL) == dnnl_success;
    const char *impl = NULL;
    if (ok && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl && strncmp(impl, "ref", 3) != 0) {
        strncpy(s->impl, impl, sizeof s->impl - 1);
        scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        ok = dnnl_primitive_create(&e->prim, pd) == dnnl_success;
        if (!ok)
            e->prim = NULL;
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (!ok || !e->prim)
        return ok;
    if (!mm_scratch_grow(s, dnnl_memory_desc_get_size(&scratch)))
        return false;
    e->mem = calloc((size_t)s->threads * 4, sizeof *e->mem);
    if (!e->mem)
        return false;
    const dnnl_memory_desc_t *mds[4] = {&src, &wei, &dst, &scratch};
    for (int i = 0; i < 4 * s->threads; i++)
        if (dnnl_memory_create(&e->mem[i], mds[i % 4], s->engine, DNNL_MEMORY_NONE)) {
            e->mem[i] = NULL;
            return false;
        }
    return true;
}

/* Field by field: a struct's padding bytes are unspecified. */
static bool mm_key_eq(const mm_key *x, const mm_key *y)
{
    return x->mc == y->mc && x->n == y->n && x->k == y->k &&
           x->sb == y->sb && x->ldc == y->ldc && x->tb == y->tb && x->acc == y->acc;
}

/* The entry for key, made on first use; NULL when the context is full or
 * oneDNN failed. An entry without a primitive is remembered too. */
static mm_entry *mm_entry_get(cpu_mm_bf16 *s, const mm_key *key)
{
    for (int i = 0; i < s->n_entries; i++)
        if (mm_key_eq(&s->entries[i].key, key))
            return &s->entries[i];
    if (s->n_entries == MM_MAX_ENTRIES)
        return NULL;
    mm_entry *e = &s->entries[s->n_entries];
    memset(e, 0, sizeof *e);
    e->key = *key;
    if (!mm_entry_build(s, e)) {
        mm_entry_free(s, e);
        return NULL;
    }
    s->n_entries++;
    return e;
}

/* ---- conversion ------------------------------------------------------ */

/* Round to nearest even; NaN stays a (quiet) NaN. */
static inline uint16_t mm_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

typedef struct mm_cvt_job {
    const float *x;
    long ld, rows, cols;
    bool transpose; /* y = x^T (cols x rows) */
    uint16_t *y;
} mm_cvt_job;

/* Rows [begin, end) of x transposed, in tiles of 16 rows by 64 columns so
 * that both the reads and the writes stay in a few cache lines (a plain
 * column walk made the gpt preset's bf16 backward twice as slow as fp32). */
static void mm_cvt_transpose(const mm_cvt_job *j, long begin, long end)
{
    for (long r0 = begin; r0 < end; r0 += 16) {
        long r1 = r0 + 16 < end ? r0 + 16 : end;
        for (long c0 = 0; c0 < j->cols; c0 += 64) {
            long c1 = c0 + 64 < j->cols ? c0 + 64 : j->cols;
            for (long c = c0; c < c1; c++) {
                uint16_t *y = j->y + c * j->rows;
                for (long r = r0; r < r1; r++)
                    y[r] = mm_to_bf16(j->x[r * j->ld + c]);
            }
        }
    }
}

CPU_SIMD_CLONES
static void mm_cvt_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const mm_cvt_job *j = ctx;
    if (j->transpose) {
        mm_cvt_transpose(j, begin, end);
        return;
    }
    for (long r = begin; r < end; r++) {
        const float *x = j->x + r * j->ld;
        uint16_t *y = j->y + r * j->cols;
        for (long c = 0; c < j->cols; c++)
            y[c] = mm_to_bf16(x[c]);
    }
}

/* rows x cols of x (leading dimension ld), or its transpose, into buf,
 * grown as needed. */
static bool mm_convert(cpu_mm_bf16 *s, thread_pool *pool, const float *x, long rows,
                       long cols, long ld, bool transpose, uint16_t **buf, long *cap)
{
    long n = rows * cols;
    if (n > *cap) {
        uint16_t *p = realloc(*buf, (size_t)n * sizeof *p);
        if (!p)
            return false;
        *buf = p;
        *cap = n;
    }
    mm_cvt_job j = {x, ld, rows, cols, transpose, *buf};
    pool_run_min(pool, rows, rows * cols < CPU_ELEM_MIN_PARALLEL ? rows + 1 : 1, mm_cvt_rows,
                 &j);
    s->roundings++;
    return true;
}

/* The slot holding w's copy, or NULL. */
static mm_weight *mm_weight_find(cpu_mm_bf16 *s, const float *w)
{
    for (int i = 0; i < MM_MAX_WEIGHTS; i++)
        if (s->weights[i].w == w)
            return &s->weights[i];
    return NULL;
}

/* w (in x out) rounded into its slot: the one already w's, else an unused
 * one, else the one refreshed longest ago. NULL when memory is short. */
static mm_weight *mm_weight_refresh(cpu_mm_bf16 *s, thread_pool *pool, const float *w,
                                    int in, int out)
{
    mm_weight *slot = mm_weight_find(s, w);
    if (!slot)
        slot = mm_weight_find(s, NULL);
    if (!slot) {
        slot = &s->weights[0];
        for (int i = 1; i < MM_MAX_WEIGHTS; i++)
            if (s->weights[i].stamp < slot->stamp)
                slot = &s->weights[i];
    }
    slot->valid = false;
    slot->w = w;
    slot->n = (long)in * out;
    if (!mm_convert(s, pool, w, in, out, out, false, &slot->data, &slot->cap))
        return NULL;
    slot->valid = true;
    slot->stamp = ++s->forwards;
    return slot;
}

/* ---- the GEMM -------------------------------------------------------- */

typedef struct mm_job {
    cpu_mm_bf16 *s;
    const mm_key *base;
    const uint16_t *a, *b; /* rounded, A packed m x k */
    float *c;
    bool failed[CPU_MAX_CHUNKS];
} mm_job;

static void mm_rows(void *ctx, long begin, long end, int tid)
{
    mm_job *j = ctx;
    if (begin >= end)
        return;
    cpu_dnnl_one_thread();
    cpu_mm_bf16 *s = j->s;
    mm_entry *e = s->chunk[tid];
    const mm_key *k = j->base;
    dnnl_memory_t *mem = e->mem + 4 * tid;
    void *a = (void *)(j->a + begin * k->k), *b = (void *)j->b;
    bool ok = dnnl_memory_set_data_handle(mem[0], a) == dnnl_success &&
              dnnl_memory_set_data_handle(mem[1], b) == dnnl_success &&
              dnnl_memory_set_data_handle(mem[2], j->c + begin * k->ldc) == dnnl_success &&
              dnnl_memory_set_data_handle(mem[3], s->scratch[tid]) == dnnl_success;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]},
                               {DNNL_ARG_DST, mem[2]}, {DNNL_ARG_SCRATCHPAD, mem[3]}};
    ok = ok && dnnl_primitive_execute(e->prim, s->streams[tid], 4, args) == dnnl_success &&
         dnnl_stream_wait(s->streams[tid]) == dnnl_success;
    j->failed[tid] = !ok;
}

/* The plan of C (m x n) = A B: whether the rows are split over the pool,
 * and each chunk's primitive in s->chunk. False when a chunk's shape has no
 * JIT kernel or the pool is wider than the context. */
static bool mm_plan(cpu_mm_bf16 *s, thread_pool *pool, bool tb, int m, int n, int k,
                    bool accumulate, int ldc, mm_key *key, bool *split)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return false;
    cpu_dnnl_one_thread();
    int threads = pool_threads(pool);
    if (threads > s->threads || threads > CPU_MAX_CHUNKS)
        return false;
    /* Small GEMMs and thin C run on the caller, as cpu_gemm's do. */
    *split = threads > 1 && (long)m * n * k >= CPU_GEMM_MIN_PARALLEL && m >= 16 * threads;
    int parts = *split ? threads : 1;
    *key = (mm_key){0, n, k, tb ? k : n, ldc, tb, accumulate};
    mm_key chunk = *key;
    for (int t = 0; t < parts; t++) {
        long b0 = (long)m * t / parts, b1 = (long)m * (t + 1) / parts;
        chunk.mc = (int)(b1 - b0);
        s->chunk[t] = chunk.mc > 0 ? mm_entry_get(s, &chunk) : NULL;
        if (chunk.mc > 0 && (!s->chunk[t] || !s->chunk[t]->prim))
            return false;
    }
    return true;
}

/* Runs the plan mm_plan made, on A and B already rounded. */
static bool mm_run(cpu_mm_bf16 *s, thread_pool *pool, const mm_key *key, bool split, int m,
                   const uint16_t *a, const uint16_t *b, float *c)
{
    mm_job j = {s, key, a, b, c, {false}};
    if (split)
        pool_run(pool, m, mm_rows, &j);
    else
        mm_rows(&j, 0, m, 0);
    int parts = split ? pool_threads(pool) : 1;
    for (int t = 0; t < parts; t++)
        if (j.failed[t])
            return false; /* C may be half written: cannot happen short of a oneDNN bug */
    s->calls++;
    return true;
}

bool cpu_mm_bf16_gemm(cpu_mm_bf16 *s, thread_pool *pool, bool ta, bool tb, int m, int n,
                      int k, const float *a, int lda, const float *b, int ldb,
                      bool accumulate, float *c, int ldc)
{
    mm_key key;
    bool split;
    if (!mm_plan(s, pool, tb, m, n, k, accumulate, ldc, &key, &split))
        return false;
    if (!mm_convert(s, pool, a, ta ? k : m, ta ? m : k, lda, ta, &s->a, &s->a_cap) ||
        !mm_convert(s, pool, b, tb ? n : k, tb ? k : n, ldb, false, &s->b, &s->b_cap))
        return false;
    return mm_run(s, pool, &key, split, m, s->a, s->b, c);
}

bool cpu_mm_bf16_dense_forward(cpu_mm_bf16 *s, thread_pool *pool, int batch, int in, int out,
                               const float *x, const float *w, float *y)
{
    mm_key key;
    bool split;
    if (!mm_plan(s, pool, false, batch, out, in, false, out, &key, &split))
        return false;
    mm_weight *wc = mm_weight_refresh(s, pool, w, in, out);
    if (!wc || !mm_convert(s, pool, x, batch, in, in, false, &s->a, &s->a_cap))
        return false;
    return mm_run(s, pool, &key, split, batch, s->a, wc->data, y);
}

/* dx (+)= dz w^T with dz already in s->d and w's copy from its forward,
 * or rounded here when there is none (copy NULL). */
static bool mm_dense_dx(cpu_mm_bf16 *s, thread_pool *pool, int batch, int in, int out,
                        const float *w, const uint16_t *copy, float *dx, bool accumulate)
{
    mm_key key;
    bool split;
    if (!mm_plan(s, pool, true, batch, in, out, accumulate, in, &key, &split))
        return false;
    if (!copy && !mm_convert(s, pool, w, in, out, out, false, &s->b, &s->b_cap))
        return false;
    return mm_run(s, pool, &key, split, batch, s->d, copy ? copy : s->b, dx);
}

bool cpu_mm_bf16_dense_backward(cpu_mm_bf16 *s, thread_pool *pool, int batch, int in,
                                int out, const float *x, const float *w, const float *dz,
                                float *dx, bool accumulate, float *dw, bool *dx_done)
{
    *dx_done = false;
    /* The forward's copy serves this backward only: the optimizer may
     * change w next, and the next forward rounds it again. */
    mm_weight *wc = mm_weight_find(s, w);
    const uint16_t *copy = wc && wc->valid && wc->n == (long)in * out ? wc->data : NULL;
    if (wc)
        wc->valid = false;
    mm_key key;
    bool split;
    if (!mm_plan(s, pool, false, in, out, batch, false, out, &key, &split))
        return false;
    if (!mm_convert(s, pool, dz, batch, out, out, false, &s->d, &s->d_cap) ||
        !mm_convert(s, pool, x, batch, in, in, true, &s->a, &s->a_cap) ||
        !mm_run(s, pool, &key, split, in, s->a, s->d, dw))
        return false;
    *dx_done = dx && mm_dense_dx(s, pool, batch, in, out, w, copy, dx, accumulate);
    return true;
}
