/* cpu_dense.c — GEMM and the dense layers on the CPU backend: sgemm in
 * oneDNN when the build has it, else OpenBLAS, always on the calling
 * thread, with the backend's pool splitting the work (so there is never
 * more than one runnable thread per requested core and results depend
 * only on the thread count); axpy and scale. */
#include "cpu/cpu_dense.h"

#include <cblas.h>
#include <math.h>
#ifdef PUNCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_activation.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"
#ifdef PUNCH_HAVE_DNNL
#include "cpu/cpu_dnnl_thread.h"
#include "cpu/cpu_matmul_bf16.h"
#endif

static bool cpu_sgemm_openblas_forced;

void cpu_sgemm_force_openblas(bool on)
{
    cpu_sgemm_openblas_forced = on;
}

#ifdef PUNCH_HAVE_DNNL
/* oneDNN's row-major sgemm on the calling thread alone (oneDNN splits a
 * GEMM over OpenMP's team: cpu_dnnl_one_thread). Returns false when
 * oneDNN refuses the call; OpenBLAS then runs it. */
static bool cpu_sgemm_dnnl(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                           const float *a, int lda, const float *b, int ldb, float beta,
                           float *c, int ldc)
{
    cpu_dnnl_one_thread();
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

static bool cpu_gemm_bf16(backend *be, bool ta, bool tb, int m, int n, int k,
                          const float *a, int lda, const float *b, int ldb, bool accumulate,
                          float *c, int ldc);

static void cpu_gemm(backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                     float alpha, const float *a, int lda, const float *b, int ldb,
                     float beta, float *c, int ldc)
{
    /* bf16: the op's GEMMs (LSTM input projections and recurrences,
     * conv1d, tied dense) as the dense layer's; they all use alpha 1. */
    if (be->bf16 && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
        cpu_gemm_bf16(be, trans_a, trans_b, m, n, k, a, lda, b, ldb, beta == 1.0f, c, ldc))
        return;
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

/* ---- bf16 (training.precision) --------------------------------------- */

#ifdef PUNCH_HAVE_DNNL
/* The backend's bf16 GEMM context, made on first use; NULL when the
 * backend is fp32 or oneDNN cannot make one. */
static cpu_mm_bf16 *cpu_mm(backend *be)
{
    cpu_backend *cb = be->impl;
    if (be->bf16 && !cb->mm_bf16)
        cb->mm_bf16 = cpu_mm_bf16_create(pool_threads(cb->pool));
    return be->bf16 ? cb->mm_bf16 : NULL;
}
#endif

/* The dense GEMMs in bf16 (cpu_matmul_bf16.h) when the backend is bf16;
 * false (nothing written) when they cannot run there: a build without
 * oneDNN, or a shape without a bf16 kernel, which then runs in fp32. */
static bool cpu_gemm_bf16(backend *be, bool ta, bool tb, int m, int n, int k,
                          const float *a, int lda, const float *b, int ldb, bool accumulate,
                          float *c, int ldc)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_mm_bf16 *mm = cpu_mm(be);
    return mm && cpu_mm_bf16_gemm(mm, cpu_pool(be), ta, tb, m, n, k, a, lda, b, ldb,
                                  accumulate, c, ldc);
#else
    (void)be, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b;
    (void)ldb, (void)accumulate, (void)c, (void)ldc;
    return false;
#endif
}

/* The dense forward's GEMM in bf16 (cpu_mm_bf16_dense_forward: keeps w's
 * bf16 copy for the backward); false as cpu_gemm_bf16. */
static bool cpu_dense_bf16_forward(backend *be, int batch, int in, int out, const float *x,
                                   const float *w, float *y)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_mm_bf16 *mm = cpu_mm(be);
    return mm && cpu_mm_bf16_dense_forward(mm, cpu_pool(be), batch, in, out, x, w, y);
#else
    (void)be, (void)batch, (void)in, (void)out, (void)x, (void)w, (void)y;
    return false;
#endif
}

/* dw = x^T dz and dx (+)= dz w^T in bf16 (cpu_mm_bf16_dense_backward);
 * false, nothing written, when dw cannot run there; *dx_done as there. */
static bool cpu_dense_bf16_gemms(backend *be, int batch, int in, int out, const float *x,
                                 const float *w, const float *dz, float *dx, bool accumulate,
                                 float *dw, bool *dx_done)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_mm_bf16 *mm = cpu_mm(be);
    return mm && cpu_mm_bf16_dense_backward(mm, cpu_pool(be), batch, in, out, x, w, dz, dx,
                                            accumulate, dw, dx_done);
#else
    (void)be, (void)batch, (void)in, (void)out, (void)x, (void)w, (void)dz, (void)dx;
    (void)accumulate, (void)dw, (void)dx_done;
    return false;
#endif
}

void cpu_dense_bf16_release(backend *be)
{
#ifdef PUNCH_HAVE_DNNL
    cpu_backend *cb = be->impl;
    cpu_mm_bf16_destroy(cb->mm_bf16);
    cb->mm_bf16 = NULL;
#else
    (void)be;
#endif
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
    cpu_act_job act;
} dense_job;

/* Rows [begin, end) of the batch: their GEMM, then bias and activation
 * while the rows are still in cache; one dispatch per layer. */
static void dense_forward_rows(void *ctx, long begin, long end, int tid)
{
    const dense_job *j = ctx;
    cpu_sgemm(false, false, (int)(end - begin), j->out, j->in, 1.0f, j->x + begin * j->in,
              j->in, j->w, j->out, 0.0f, j->act.out + begin * j->out, j->out);
    if (j->act.bias || j->act.act != ACT_NONE)
        cpu_act_forward_rows((void *)&j->act, begin, end, tid);
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
    if (cpu_dense_bf16_forward(be, batch, in, out, x, w, y)) {
        if (bias || act != ACT_NONE)
            pool_run_min(cpu_pool(be), batch, 16, cpu_act_forward_rows, &j.act);
        return;
    }
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

/* dw, db and dx as cpu_dense_backward, the GEMMs in bf16; false (nothing
 * written) when dw cannot run in bf16. dx runs in fp32 when its shape alone
 * has no bf16 kernel. */
static bool cpu_dense_bf16_backward(backend *be, int batch, int in, int out, const float *x,
                                    const float *w, const float *dz, float *dx,
                                    bool accumulate, float *dw, float *db)
{
    bool dx_done;
    if (!be->bf16 || batch <= 0 ||
        !cpu_dense_bf16_gemms(be, batch, in, out, x, w, dz, dx, accumulate, dw, &dx_done))
        return false;
    if (dx && !dx_done)
        cpu_gemm(be, false, true, batch, in, out, 1.0f, dz, out, w, out,
                 accumulate ? 1.0f : 0.0f, dx, in);
    if (db)
        bias_grad_rows(dz, batch, out, db);
    return true;
}

static void cpu_dense_backward(backend *be, int batch, int in, int out, const float *x,
                               const float *w, const float *dz, float *dx, bool accumulate,
                               float *dw, float *db)
{
    thread_pool *pool = cpu_pool(be);
    if (cpu_dense_bf16_backward(be, batch, in, out, x, w, dz, dx, accumulate, dw, db))
        return;
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
    dense_update_job j = {batch, in, out, x, dz, dw, db, update, ctx};
    thread_pool *pool = cpu_pool(be);
    if (cpu_dense_bf16_backward(be, batch, in, out, x, w, dz, dx, accumulate, dw, db)) {
        long n = (long)in * out + (db ? out : 0);
        pool_run_min(pool, (n + CPU_UPDATE_CHUNK - 1) / CPU_UPDATE_CHUNK, 2,
                     dense_update_pieces, &j);
        return;
    }
    if (dx)
        cpu_gemm(be, false, true, batch, in, out, 1.0f, dz, out, w, out,
                 accumulate ? 1.0f : 0.0f, dx, in);
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

/* Sets this file's ops of backend.h on be. */
void cpu_dense_register(backend *be)
{
    be->gemm = cpu_gemm;
    be->axpy = cpu_axpy;
    be->scale = cpu_scale;
    be->dense_forward = cpu_dense_forward;
    be->dense_backward = cpu_dense_backward;
    be->dense_backward_update = cpu_dense_backward_update;
}
