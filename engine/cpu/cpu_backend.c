/* cpu_backend.c — the CPU backend: memory, GEMM, dense, activations,
 * dropout, concatenation, losses and metrics. Convolution, pooling and
 * batch normalisation live in cpu_conv.c, cpu_pool.c and cpu_batchnorm.c.
 *
 * GEMMs run in oneDNN's sgemm when the build has it, else OpenBLAS's.
 * Threads: the GEMM library is pinned to one thread and every op is
 * partitioned by the backend's pool (threadpool.h) with a static split, so
 * there is never more than one runnable thread per requested core and
 * results depend only on the thread count. */
#include "cpu/cpu_backend.h"
#include "cpu/cpu.h"

#include <cblas.h>
#include <math.h>
#ifdef PUNCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Below this many multiply-adds a GEMM runs on the caller alone. */
#define CPU_GEMM_MIN_PARALLEL (1L << 17)
/* Below this many elements an element-wise op runs on the caller alone. */
#define CPU_ELEM_MIN_PARALLEL (1L << 15)
/* Ops that keep a per-chunk partial result on the stack hold this many. */
#define CPU_MAX_CHUNKS 64

static bool cpu_sgemm_openblas_forced;

void cpu_sgemm_force_openblas(bool on)
{
    cpu_sgemm_openblas_forced = on;
}

#ifdef PUNCH_HAVE_DNNL
/* oneDNN's row-major sgemm on the calling thread alone. oneDNN splits a
 * GEMM over OpenMP's team; the engine's pool already gives each thread its
 * share, and OpenMP's spinning barriers collapse on a shared machine, so
 * the first call on each thread sets that thread's team size to one (an
 * OpenMP setting is per thread, and pool workers are plain pthreads).
 * Returns false when oneDNN refuses the call; OpenBLAS then runs it. */
static bool cpu_sgemm_dnnl(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                           const float *a, int lda, const float *b, int ldb, float beta,
                           float *c, int ldc)
{
    static _Thread_local bool one_thread;
    if (!one_thread) {
        omp_set_num_threads(1);
        one_thread = true;
    }
    return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                      ldb, beta, c, ldc) == dnnl_success;
}
#endif

void cpu_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta,
               float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        for (int i = 0; i < m; i++) {
            float *row = c + (long)i * ldc;
            for (int j = 0; j < n; j++)
                row[j] = beta == 0.0f ? 0.0f : beta * row[j];
        }
        return;
    }
#ifdef PUNCH_HAVE_DNNL
    if (!cpu_sgemm_openblas_forced &&
        cpu_sgemm_dnnl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
#endif
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
                beta, c, ldc);
}

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

/* ---- GEMM ------------------------------------------------------------ */

typedef struct gemm_job {
    bool ta, tb, split_m;
    int m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int lda, ldb, ldc;
} gemm_job;

/* Columns are split in blocks of 16 so every chunk keeps full SIMD rows. */
static void gemm_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const gemm_job *g = ctx;
    if (g->split_m) {
        int m0 = (int)begin, m1 = (int)end;
        const float *a = g->ta ? g->a + m0 : g->a + (long)m0 * g->lda;
        cpu_sgemm(g->ta, g->tb, m1 - m0, g->n, g->k, g->alpha, a, g->lda, g->b, g->ldb,
                  g->beta, g->c + (long)m0 * g->ldc, g->ldc);
    } else {
        int n0 = (int)begin * 16, n1 = (int)end * 16;
        if (n1 > g->n)
            n1 = g->n;
        if (n0 >= n1)
            return;
        const float *b = g->tb ? g->b + (long)n0 * g->ldb : g->b + n0;
        cpu_sgemm(g->ta, g->tb, g->m, n1 - n0, g->k, g->alpha, g->a, g->lda, b, g->ldb,
                  g->beta, g->c + n0, g->ldc);
    }
}

static void cpu_gemm(backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                     float alpha, const float *a, int lda, const float *b, int ldb,
                     float beta, float *c, int ldc)
{
    gemm_job g = {trans_a, trans_b, m >= n, m, n, k, alpha, beta, a, b, c, lda, ldb, ldc};
    long work = (long)m * n * (k > 0 ? k : 1);
    int threads = pool_threads(cpu_pool(be));
    if (threads == 1 || work < CPU_GEMM_MIN_PARALLEL) {
        cpu_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    long parts = g.split_m ? m : (n + 15) / 16;
    pool_run(cpu_pool(be), parts, gemm_chunk, &g);
}

/* ---- element-wise ---------------------------------------------------- */

typedef struct elem_job {
    long n;
    float alpha;
    const float *x;
    float *y;
} elem_job;

static void axpy_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const elem_job *j = ctx;
    for (long i = begin; i < end; i++)
        j->y[i] += j->alpha * j->x[i];
}

static void cpu_axpy(backend *be, long n, float alpha, const float *x, float *y)
{
    elem_job j = {n, alpha, x, y};
    pool_run_min(cpu_pool(be), n, CPU_ELEM_MIN_PARALLEL, axpy_chunk, &j);
}

static void scale_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const elem_job *j = ctx;
    for (long i = begin; i < end; i++)
        j->y[i] *= j->alpha;
}

static void cpu_scale(backend *be, long n, float alpha, float *x)
{
    elem_job j = {n, alpha, NULL, x};
    pool_run_min(cpu_pool(be), n, CPU_ELEM_MIN_PARALLEL, scale_chunk, &j);
}

/* ---- activations ----------------------------------------------------- */

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

CPU_SIMD_CLONES
void cpu_activate(spec_activation act, float *y, long n)
{
    switch (act) {
    case ACT_RELU:
        for (long i = 0; i < n; i++)
            y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        break;
    case ACT_SIGMOID:
        for (long i = 0; i < n; i++)
            y[i] = 1.0f / (1.0f + expf(-y[i]));
        break;
    case ACT_TANH:
        for (long i = 0; i < n; i++)
            y[i] = tanhf(y[i]);
        break;
    case ACT_GELU:
    case ACT_GELU_EXACT:
        cpu_gelu_inplace(act == ACT_GELU_EXACT, y, n);
        break;
    case ACT_NONE:
    case ACT_SOFTMAX:
        break;
    }
}

void cpu_softmax_row(float *y, int n)
{
    float mx = y[0];
    for (int j = 1; j < n; j++)
        mx = y[j] > mx ? y[j] : mx;
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        y[j] = expf(y[j] - mx);
        sum += y[j];
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < n; j++)
        y[j] *= inv;
}

typedef struct act_job {
    spec_activation act;
    long cols;
    bool accumulate;
    const float *x, *y, *dy, *bias;
    float *out;
    int rows;               /* dense_forward_cols: the batch */
} act_job;

/* Rows [begin, end): out = act(x (+ bias)). */
static void act_forward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const act_job *j = ctx;
    for (long r = begin; r < end; r++) {
        float *o = j->out + r * j->cols;
        if (j->x && j->x != o)
            memcpy(o, j->x + r * j->cols, (size_t)j->cols * sizeof *o);
        if (j->bias)
            for (long c = 0; c < j->cols; c++)
                o[c] += j->bias[c];
        if (j->act == ACT_SOFTMAX)
            cpu_softmax_row(o, (int)j->cols);
        else
            cpu_activate(j->act, o, j->cols);
    }
}

static void cpu_activation_forward(backend *be, spec_activation act, long rows, long cols,
                                   const float *x, float *y)
{
    act_job j = {act, cols, false, x, NULL, NULL, NULL, y};
    pool_run_min(cpu_pool(be), rows, CPU_ELEM_MIN_PARALLEL / (cols > 0 ? cols : 1) + 1,
                 act_forward_rows, &j);
}

/* g *= act'(y) in place (the conv and dense layers' common case): its own
 * loops, because a loop reading dy and writing g == dy fails the compiler's
 * overlap check and runs scalar. */
CPU_SIMD_CLONES
static void act_backward_inplace(spec_activation act, const float *restrict y,
                                 float *restrict g, long n)
{
    switch (act) {
    case ACT_RELU:
        for (long c = 0; c < n; c++)
            g[c] = y[c] > 0.0f ? g[c] : 0.0f;
        return;
    case ACT_SIGMOID:
        for (long c = 0; c < n; c++)
            g[c] = g[c] * y[c] * (1.0f - y[c]);
        return;
    case ACT_TANH:
        for (long c = 0; c < n; c++)
            g[c] = g[c] * (1.0f - y[c] * y[c]);
        return;
    case ACT_SOFTMAX:
    case ACT_NONE:
    case ACT_GELU:       /* from the input only: gelu_backward */
    case ACT_GELU_EXACT:
        return;
    }
}

/* g = dy * act'(y) into a g apart from dy. restrict and the SIMD clones
 * matter: without them the compiler must allow for overlap, and at -O2 it
 * leaves such a loop scalar, relu's with a branch per element that random
 * signs mispredict half the time (12% of a resnet20 step, measured by
 * perf, before this loop had its own function). */
CPU_SIMD_CLONES
static void act_backward_apart(spec_activation act, const float *restrict y,
                               const float *restrict dy, float *restrict g, long n)
{
    switch (act) {
    case ACT_RELU:
        for (long c = 0; c < n; c++)
            g[c] = y[c] > 0.0f ? dy[c] : 0.0f;
        return;
    case ACT_SIGMOID:
        for (long c = 0; c < n; c++)
            g[c] = dy[c] * y[c] * (1.0f - y[c]);
        return;
    case ACT_TANH:
        for (long c = 0; c < n; c++)
            g[c] = dy[c] * (1.0f - y[c] * y[c]);
        return;
    case ACT_SOFTMAX:
    case ACT_NONE:
    case ACT_GELU:       /* from the input only: gelu_backward */
    case ACT_GELU_EXACT:
        return;
    }
}

/* g = dy * act'(y) for one row. */
static void act_backward_row(spec_activation act, const float *y, const float *dy, float *g,
                             long n)
{
    if (g == dy && act != ACT_SOFTMAX) {
        act_backward_inplace(act, y, g, n);
        return;
    }
    switch (act) {
    case ACT_RELU:
    case ACT_SIGMOID:
    case ACT_TANH:
        act_backward_apart(act, y, dy, g, n);
        return;
    case ACT_SOFTMAX: {
        double dot = 0.0;
        for (long c = 0; c < n; c++)
            dot += (double)dy[c] * y[c];
        for (long c = 0; c < n; c++)
            g[c] = y[c] * (dy[c] - (float)dot);
        return;
    }
    case ACT_NONE:
    case ACT_GELU:
    case ACT_GELU_EXACT:
        break;
    }
    if (g != dy)
        memcpy(g, dy, (size_t)n * sizeof *g);
}

static void act_backward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const act_job *j = ctx;
    for (long r = begin; r < end; r++) {
        const float *y = j->y + r * j->cols;
        const float *dy = j->dy + r * j->cols;
        float *dx = j->out + r * j->cols;
        if (!j->accumulate) {
            /* In place (dx == dy) is fine: element c reads only dy[c]. */
            act_backward_row(j->act, y, dy, dx, j->cols);
            continue;
        }
        /* Accumulating: compute into dx's row in chunks via a small buffer. */
        float buf[256];
        for (long c0 = 0; c0 < j->cols; c0 += 256) {
            long n = j->cols - c0 < 256 ? j->cols - c0 : 256;
            if (j->act == ACT_SOFTMAX) {
                double dot = 0.0;
                for (long c = 0; c < j->cols; c++)
                    dot += (double)dy[c] * y[c];
                for (long c = 0; c < j->cols; c++)
                    dx[c] += y[c] * (dy[c] - (float)dot);
                break;
            }
            act_backward_row(j->act, y + c0, dy + c0, buf, n);
            for (long c = 0; c < n; c++)
                dx[c0 + c] += buf[c];
        }
    }
}

static void cpu_activation_backward(backend *be, spec_activation act, long rows, long cols,
                                    const float *y, const float *dy, float *dx,
                                    bool accumulate)
{
    act_job j = {act, cols, accumulate, NULL, y, dy, NULL, dx};
    pool_run_min(cpu_pool(be), rows, CPU_ELEM_MIN_PARALLEL / (cols > 0 ? cols : 1) + 1,
                 act_backward_rows, &j);
}

/* ---- dense ----------------------------------------------------------- */

/* Chunks for pool_run_chunks: CPU_FINE_CHUNKS per thread, each of at
 * least `min` of the n items, and one per thread at least. */
#define CPU_FINE_CHUNKS 4
static int cpu_fine_chunks(thread_pool *pool, long n, long min)
{
    long threads = pool_threads(pool);
    long chunks = n / (min > 0 ? min : 1);
    if (chunks > threads * CPU_FINE_CHUNKS)
        chunks = threads * CPU_FINE_CHUNKS;
    return (int)(chunks < threads ? threads : chunks);
}

typedef struct dense_job {
    int in, out;
    const float *x, *w;
    act_job act;
} dense_job;

/* Rows [begin, end) of the batch: their GEMM, then bias and activation
 * while the rows are still in cache; one dispatch per layer. */
static void dense_forward_rows(void *ctx, long begin, long end, int tid)
{
    const dense_job *j = ctx;
    cpu_sgemm(false, false, (int)(end - begin), j->out, j->in, 1.0f, j->x + begin * j->in,
              j->in, j->w, j->out, 0.0f, j->act.out + begin * j->out, j->out);
    if (j->act.bias || j->act.act != ACT_NONE)
        act_forward_rows((void *)&j->act, begin, end, tid);
}

/* Column blocks [16 * begin, 16 * end) of every row: their GEMM, then bias
 * and activation of the block (not softmax, which needs whole rows). */
static void dense_forward_cols(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dense_job *j = ctx;
    long n0 = begin * 16, n1 = end * 16 < j->out ? end * 16 : j->out;
    float *y = j->act.out;
    cpu_sgemm(false, false, j->act.rows, (int)(n1 - n0), j->in, 1.0f, j->x, j->in, j->w + n0,
              j->out, 0.0f, y + n0, j->out);
    if (!j->act.bias && j->act.act == ACT_NONE)
        return;
    for (long r = 0; r < j->act.rows; r++) {
        float *o = y + r * j->out + n0;
        if (j->act.bias)
            for (long c = 0; c < n1 - n0; c++)
                o[c] += j->act.bias[n0 + c];
        cpu_activate(j->act.act, o, n1 - n0);
    }
}

static void cpu_dense_forward(backend *be, int batch, int in, int out, const float *x,
                              const float *w, const float *bias, spec_activation act,
                              float *y)
{
    dense_job j = {in, out, x, w, {act, out, false, NULL, NULL, NULL, bias, y, batch}};
    long work = (long)batch * out * (in > 0 ? in : 1);
    int threads = pool_threads(cpu_pool(be));
    /* Row blocks of at least 8 keep the GEMM's micro-kernel fed. */
    if (threads == 1 || work < CPU_GEMM_MIN_PARALLEL || batch < 16) {
        dense_forward_rows(&j, 0, batch, 0);
        return;
    }
    /* Split the larger side, as cpu_gemm does: a block packs all of the
     * other operand. A training batch (64 rows, 128 units) then packs x
     * twice (200 KB) instead of w (400 KB), and 64 x 64 x 784 blocks run
     * faster than 32 x 128 x 784 ones (89 vs 84 GFLOP/s quiet, and far
     * less affected by a busy neighbour: 59-92 vs 27-38). */
    if (out > batch && act != ACT_SOFTMAX && out >= 16 * threads) {
        pool_run(cpu_pool(be), (out + 15) / 16, dense_forward_cols, &j);
        return;
    }
    pool_run(cpu_pool(be), batch, dense_forward_rows, &j);
}

/* Column sums of dz (batch, out) into db (out), row by row in order so the
 * result does not depend on the thread count. */
static void bias_grad_rows(const float *dz, int batch, int out, float *db)
{
    memset(db, 0, (size_t)out * sizeof *db);
    for (int r = 0; r < batch; r++) {
        const float *row = dz + (long)r * out;
        for (int c = 0; c < out; c++)
            db[c] += row[c];
    }
}

/* The fused update's fallback split: whole 4096-float pieces. */
#define CPU_UPDATE_CHUNK 4096L
/* Rows of dw per chunk at least (the GEMM stays efficient). */
#define CPU_UPDATE_MIN_ROWS 64

typedef struct dense_update_job {
    int batch, in, out;
    const float *x, *dz;
    float *dw, *db;
    void (*update)(void *ctx, long begin, long end);
    void *ctx;
} dense_update_job;

/* Input rows [begin, end) of dw, then their update (when there is one);
 * the chunk that ends at the last row also sums db and updates the bias.
 * The plain backward runs the same chunks without the update, so both give
 * the same bits (tests/train/test_fused_step). */
static void dense_update_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dense_update_job *j = ctx;
    int m0 = (int)begin, m1 = (int)end;
    cpu_sgemm(true, false, m1 - m0, j->out, j->batch, 1.0f, j->x + m0, j->in, j->dz, j->out,
              0.0f, j->dw + (long)m0 * j->out, j->out);
    long last = (long)j->in * j->out;
    if (m1 == j->in && j->db) {
        bias_grad_rows(j->dz, j->batch, j->out, j->db);
        last += j->out;
    }
    if (j->update)
        j->update(j->ctx, begin * j->out, m1 == j->in ? last : end * j->out);
}

static void dense_update_pieces(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dense_update_job *j = ctx;
    long n = (long)j->in * j->out + (j->db ? j->out : 0);
    long e = end * CPU_UPDATE_CHUNK < n ? end * CPU_UPDATE_CHUNK : n;
    j->update(j->ctx, begin * CPU_UPDATE_CHUNK, e);
}

/* Whether dw = x^T dz runs as row chunks of dw (dense_update_rows). The
 * plain backward and the fused step must take the same decision and the
 * same chunks: OpenBLAS's kernels round a row differently depending on
 * where it falls in a block (its Haswell kernel does), so the same bits
 * need the same blocks. */
static bool dense_dw_by_rows(thread_pool *pool, int batch, int in, int out)
{
    long work = (long)in * out * (batch > 0 ? batch : 1);
    return pool_threads(pool) > 1 && work >= CPU_GEMM_MIN_PARALLEL && in >= out && batch > 0;
}

static void cpu_dense_backward(backend *be, int batch, int in, int out, const float *x,
                               const float *w, const float *dz, float *dx, bool accumulate,
                               float *dw, float *db)
{
    thread_pool *pool = cpu_pool(be);
    if (dense_dw_by_rows(pool, batch, in, out)) {
        dense_update_job j = {batch, in, out, x, dz, dw, db, NULL, NULL};
        pool_run_chunks(pool, in, cpu_fine_chunks(pool, in, CPU_UPDATE_MIN_ROWS),
                        dense_update_rows, &j);
    } else {
        cpu_gemm(be, true, false, in, out, batch, 1.0f, x, in, dz, out, 0.0f, dw, out);
        if (db)
            bias_grad_rows(dz, batch, out, db);
    }
    if (dx)
        cpu_gemm(be, false, true, batch, in, out, 1.0f, dz, out, w, out,
                 accumulate ? 1.0f : 0.0f, dx, in);
}

/* One dispatch for dw, db and their update when dw is split by rows;
 * otherwise dense_backward's ops and then the update in pieces. */
static void cpu_dense_backward_update(backend *be, int batch, int in, int out,
                                      const float *x, const float *w, const float *dz,
                                      float *dx, bool accumulate, float *dw, float *db,
                                      void (*update)(void *ctx, long begin, long end),
                                      void *ctx)
{
    if (dx)
        cpu_gemm(be, false, true, batch, in, out, 1.0f, dz, out, w, out,
                 accumulate ? 1.0f : 0.0f, dx, in);
    dense_update_job j = {batch, in, out, x, dz, dw, db, update, ctx};
    thread_pool *pool = cpu_pool(be);
    if (dense_dw_by_rows(pool, batch, in, out)) {
        pool_run_chunks(pool, in, cpu_fine_chunks(pool, in, CPU_UPDATE_MIN_ROWS),
                        dense_update_rows, &j);
        return;
    }
    cpu_gemm(be, true, false, in, out, batch, 1.0f, x, in, dz, out, 0.0f, dw, out);
    if (db)
        bias_grad_rows(dz, batch, out, db);
    long n = (long)in * out + (db ? out : 0);
    pool_run_min(pool, (n + CPU_UPDATE_CHUNK - 1) / CPU_UPDATE_CHUNK, 2,
                 dense_update_pieces, &j);
}

/* ---- dropout --------------------------------------------------------- */

typedef struct dropout_job {
    float rate, keep_scale;
    uint64_t seed;
    bool accumulate;
    const float *x, *mask;
    float *m, *y;
} dropout_job;

static void dropout_fwd_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dropout_job *j = ctx;
    for (long i = begin; i < end; i++) {
        float m = backend_dropout_keep(j->seed, (uint64_t)i, j->rate) ? j->keep_scale : 0.0f;
        j->m[i] = m;
        j->y[i] = j->x[i] * m;
    }
}

static void cpu_dropout_forward(backend *be, long n, float rate, uint64_t seed,
                                const float *x, float *mask, float *y)
{
    dropout_job j = {rate, 1.0f / (1.0f - rate), seed, false, x, NULL, mask, y};
    pool_run_min(cpu_pool(be), n, CPU_ELEM_MIN_PARALLEL, dropout_fwd_chunk, &j);
}

static void dropout_bwd_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const dropout_job *j = ctx;
    for (long i = begin; i < end; i++) {
        float g = j->x[i] * j->mask[i];
        j->y[i] = j->accumulate ? j->y[i] + g : g;
    }
}

static void cpu_dropout_backward(backend *be, long n, const float *mask, const float *dy,
                                 float *dx, bool accumulate)
{
    dropout_job j = {0, 0, 0, accumulate, dy, mask, NULL, dx};
    pool_run_min(cpu_pool(be), n, CPU_ELEM_MIN_PARALLEL, dropout_bwd_chunk, &j);
}

/* ---- concat ---------------------------------------------------------- */

static void cpu_concat_forward(backend *be, int batch, int n_in, const int *c_in,
                               long spatial, const float *const *xs, float *y)
{
    (void)be;
    long total = 0;
    for (int i = 0; i < n_in; i++)
        total += c_in[i];
    for (int b = 0; b < batch; b++) {
        float *dst = y + (long)b * total * spatial;
        for (int i = 0; i < n_in; i++) {
            long len = (long)c_in[i] * spatial;
            memcpy(dst, xs[i] + (long)b * len, (size_t)len * sizeof *dst);
            dst += len;
        }
    }
}

static void cpu_concat_backward(backend *be, int batch, int n_in, const int *c_in,
                                long spatial, const float *dy, float *const *dxs,
                                const bool *accumulate)
{
    (void)be;
    long total = 0;
    for (int i = 0; i < n_in; i++)
        total += c_in[i];
    for (int b = 0; b < batch; b++) {
        const float *src = dy + (long)b * total * spatial;
        for (int i = 0; i < n_in; i++) {
            long len = (long)c_in[i] * spatial;
            float *dx = dxs[i] ? dxs[i] + (long)b * len : NULL;
            if (dx && accumulate[i])
                for (long e = 0; e < len; e++)
                    dx[e] += src[e];
            else if (dx)
                memcpy(dx, src, (size_t)len * sizeof *dx);
            src += len;
        }
    }
}

/* ---- losses and metrics ---------------------------------------------- */

/* Below this many logits the loss runs on the caller alone. */
#define CPU_XENT_MIN_PARALLEL 512L

typedef struct xent_job {
    int n;
    float inv_batch;
    const float *logits, *targets;
    float *probs, *dlogits;
    double partial[CPU_MAX_CHUNKS];
} xent_job;

/* Rows [begin, end): probabilities, gradient, and their loss summed in
 * row order into partial[tid]. The row's operations are repeated on
 * purpose in gpu/gpu_kernels.cu (k_softmax_xent), there split over a
 * block's threads (so its double sums add in a tree's order): this is the
 * CPU reference the CUDA kernel is tested against (test_gpu_vs_cpu);
 * change both together. */
static void xent_rows(void *ctx, long begin, long end, int tid)
{
    xent_job *j = ctx;
    int n = j->n;
    double total = 0.0;
    for (long r = begin; r < end; r++) {
        const float *z = j->logits + r * n;
        const float *t = j->targets + r * n;
        float *p = j->probs + r * n;
        float *d = j->dlogits + r * n;
        float mx = z[0];
        for (int c = 1; c < n; c++)
            mx = z[c] > mx ? z[c] : mx;
        double sum = 0.0;
        for (int c = 0; c < n; c++)
            sum += exp((double)z[c] - mx);
        double log_sum = log(sum);
        double loss = 0.0;
        for (int c = 0; c < n; c++) {
            double logp = (double)z[c] - mx - log_sum;
            p[c] = (float)exp(logp);
            loss -= (double)t[c] * logp;
            d[c] = (p[c] - t[c]) * j->inv_batch;
        }
        total += loss;
    }
    j->partial[tid] = total;
}

/* Rows split over the pool (one chunk per thread); the chunks' sums are
 * added in chunk order, so the loss depends only on the thread count. */
static double cpu_softmax_xent(backend *be, int batch, int n, const float *logits,
                               const float *targets, float *probs, float *dlogits)
{
    thread_pool *pool = cpu_pool(be);
    int threads = pool_threads(pool);
    xent_job j = {n, 1.0f / (float)batch, logits, targets, probs, dlogits, {0}};
    if (threads > CPU_MAX_CHUNKS || (long)batch * n < CPU_XENT_MIN_PARALLEL) {
        xent_rows(&j, 0, batch, 0);
        return j.partial[0];
    }
    pool_run(pool, batch, xent_rows, &j);
    double total = 0.0;
    for (int t = 0; t < threads; t++)
        total += j.partial[t];
    return total;
}

#define BCE_EPS 1e-7f

static double cpu_binary_xent(backend *be, int batch, int n, const float *p,
                              const float *targets, float *dp)
{
    (void)be;
    double total = 0.0;
    float scale = 1.0f / ((float)n * (float)batch);
    for (long i = 0; i < (long)batch * n; i++) {
        float pc = fminf(fmaxf(p[i], BCE_EPS), 1.0f - BCE_EPS);
        float t = targets[i];
        total -= (t * log((double)pc) + (1.0 - t) * log(1.0 - (double)pc)) / n;
        dp[i] = (pc - t) / (pc * (1.0f - pc)) * scale;
    }
    return total;
}

static double cpu_mse(backend *be, int batch, int n, const float *y, const float *targets,
                      float *dy)
{
    (void)be;
    double total = 0.0;
    float scale = 2.0f / ((float)n * (float)batch);
    for (long i = 0; i < (long)batch * n; i++) {
        float e = y[i] - targets[i];
        total += (double)e * e / n;
        dy[i] = e * scale;
    }
    return total;
}

static int argmax_row(const float *v, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (v[j] > v[best])
            best = j;
    return best;
}

static void cpu_metrics(backend *be, int batch, int n, const float *y, const float *targets,
                        batch_metrics *out)
{
    (void)be;
    memset(out, 0, sizeof *out);
    for (int r = 0; r < batch; r++) {
        const float *yr = y + (long)r * n;
        const float *tr = targets + (long)r * n;
        if (argmax_row(yr, n) == argmax_row(tr, n))
            out->correct += 1.0;
        for (int j = 0; j < n; j++) {
            double e = (double)yr[j] - tr[j];
            out->sq_err += e * e;
            out->abs_err += fabs(e);
        }
    }
}

/* ---- lifecycle ------------------------------------------------------- */

static void cpu_destroy(backend *be)
{
    if (!be)
        return;
    cpu_backend *cb = be->impl;
    if (cb) {
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
        .gemm = cpu_gemm,
        .axpy = cpu_axpy,
        .scale = cpu_scale,
        .dense_forward = cpu_dense_forward,
        .dense_backward = cpu_dense_backward,
        .dense_backward_update = cpu_dense_backward_update,
        .activation_forward = cpu_activation_forward,
        .activation_backward = cpu_activation_backward,
        .dropout_forward = cpu_dropout_forward,
        .dropout_backward = cpu_dropout_backward,
        .concat_forward = cpu_concat_forward,
        .concat_backward = cpu_concat_backward,
        .softmax_xent = cpu_softmax_xent,
        .binary_xent = cpu_binary_xent,
        .mse = cpu_mse,
        .metrics = cpu_metrics,
    };
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
