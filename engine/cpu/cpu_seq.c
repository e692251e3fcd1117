/* cpu_seq.c — the sequence ops of backend.h on the CPU: the padding mask,
 * embedding gather and scatter, masked pooling over time (global and
 * windowed) and 1-d convolution (im2col over time + one GEMM per chunk of samples).
 *
 * Sequences are (batch, steps, features) with a real length per sample;
 * every op here reads only real steps and leaves zeros at padding, so a
 * sample's result does not depend on what its batch mates' lengths are nor
 * on anything stored past its end. Work is split over samples (or, for the
 * embedding gradient, over vocabulary rows): each output element is then
 * computed by one thread in one fixed order, and the bits do not depend on
 * the thread count. */
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

#include <float.h>
#include <string.h>

/* A sample's real length: lengths[n], or every step when lengths is NULL. */
static inline int seq_len(const int32_t *lengths, int n, int steps)
{
    return lengths ? lengths[n] : steps;
}

/* ---- padding mask ---------------------------------------------------- */

static void cpu_sequence_mask(backend *be, int batch, int steps, int features,
                       const int32_t *lengths, float *x)
{
    (void)be;
    if (!lengths)
        return;
    for (int n = 0; n < batch; n++) {
        int len = lengths[n];
        if (len < steps)
            memset(x + ((long)n * steps + len) * features, 0,
                   (size_t)(steps - len) * (size_t)features * sizeof *x);
    }
}

/* ---- embedding ------------------------------------------------------- */

/* The job of the embedding and the global pooling ops: one sequence
 * tensor x (the embedding's ids, `features` = 1 there) in, out written. */
typedef struct seq_job {
    pool_mode mode;          /* global pooling */
    int steps, features;     /* of x; the embedding's rows are dim wide */
    int dim, batch;          /* embedding */
    const int32_t *lengths;
    const float *x, *y, *dy; /* y: the pooling's output, the embedding's table */
    float *out;
    bool accumulate;
} seq_job;

static void embed_forward_samples(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const seq_job *j = ctx;
    size_t row = (size_t)j->dim * sizeof(float);
    for (long n = begin; n < end; n++) {
        int len = seq_len(j->lengths, (int)n, j->steps);
        float *y = j->out + n * j->steps * j->dim;
        for (int t = 0; t < len; t++)
            memcpy(y + (long)t * j->dim, j->y + (long)j->x[n * j->steps + t] * j->dim,
                   row);
        memset(y + (long)len * j->dim, 0, (size_t)(j->steps - len) * row);
    }
}

static void cpu_embedding_forward(backend *be, int batch, int steps, int dim, const int32_t *lengths,
                           const float *ids, const float *table, float *y)
{
    seq_job j = {.steps = steps, .features = 1, .dim = dim, .batch = batch, .lengths = lengths,
                 .x = ids, .y = table, .out = y};
    pool_run_min(cpu_pool(be), batch, 8, embed_forward_samples, &j);
}

/* Each thread owns a contiguous range of vocabulary rows and walks the
 * whole batch in order, adding only the rows it owns: no two threads
 * write one row, and every row sums its contributions in (sample, step)
 * order, so the gradient is the same bits on any thread count. The
 * walk over ids is repeated per thread; it is small beside the adds. */
static void embed_backward_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const seq_job *j = ctx;
    long dim = j->dim;
    memset(j->out + begin * dim, 0, (size_t)((end - begin) * dim) * sizeof(float));
    for (int n = 0; n < j->batch; n++) {
        int len = seq_len(j->lengths, n, j->steps);
        for (int t = 0; t < len; t++) {
            long id = (long)j->x[(long)n * j->steps + t];
            if (id < begin || id >= end)
                continue;
            float *g = j->out + id * dim;
            const float *d = j->dy + ((long)n * j->steps + t) * dim;
            for (long k = 0; k < dim; k++)
                g[k] += d[k];
        }
    }
}

static void cpu_embedding_backward(backend *be, int batch, int steps, int vocab, int dim,
                            const int32_t *lengths, const float *ids, const float *dy,
                            float *dtable)
{
    seq_job j = {.steps = steps, .features = 1, .dim = dim, .batch = batch, .lengths = lengths,
                 .x = ids, .dy = dy, .out = dtable};
    pool_run(cpu_pool(be), vocab, embed_backward_rows, &j);
}

/* ---- masked global pooling over time ------------------------------- */

static void gpool_forward_samples(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const seq_job *j = ctx;
    int f = j->features;
    for (long n = begin; n < end; n++) {
        int len = seq_len(j->lengths, (int)n, j->steps);
        const float *x = j->x + n * j->steps * f;
        float *y = j->out + n * f;
        memcpy(y, x, (size_t)f * sizeof *y);
        for (int t = 1; t < len; t++) {
            const float *xt = x + (long)t * f;
            if (j->mode == POOL_MAX)
                for (int k = 0; k < f; k++)
                    y[k] = xt[k] > y[k] ? xt[k] : y[k];
            else
                for (int k = 0; k < f; k++)
                    y[k] += xt[k];
        }
        if (j->mode == POOL_AVG) {
            float inv = 1.0f / (float)len;
            for (int k = 0; k < f; k++)
                y[k] *= inv;
        }
    }
}

static void cpu_global_pool1d_forward(backend *be, pool_mode mode, int batch, int steps, int features,
                               const int32_t *lengths, const float *x, float *y)
{
    seq_job j = {.mode = mode, .steps = steps, .features = features, .lengths = lengths,
                 .x = x, .out = y};
    pool_run_min(cpu_pool(be), batch, 8, gpool_forward_samples, &j);
}

/* Max pooling: dy goes to the first real step equal to the maximum (found
 * again from x and y, as pool2d does), so ties never split the gradient. */
static void gpool_backward_samples(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const seq_job *j = ctx;
    int f = j->features;
    long per = (long)j->steps * f;
    for (long n = begin; n < end; n++) {
        int len = seq_len(j->lengths, (int)n, j->steps);
        const float *x = j->x + n * per;
        const float *y = j->y + n * f;
        const float *dy = j->dy + n * f;
        float *dx = j->out + n * per;
        if (!j->accumulate)
            memset(dx, 0, (size_t)per * sizeof *dx);
        if (j->mode == POOL_AVG) {
            float inv = 1.0f / (float)len;
            for (int t = 0; t < len; t++)
                for (int k = 0; k < f; k++)
                    dx[(long)t * f + k] += dy[k] * inv;
            continue;
        }
        for (int k = 0; k < f; k++)
            for (int t = 0; t < len; t++)
                if (x[(long)t * f + k] == y[k]) {
                    dx[(long)t * f + k] += dy[k];
                    break;
                }
    }
}

static void cpu_global_pool1d_backward(backend *be, pool_mode mode, int batch, int steps,
                                int features, const int32_t *lengths, const float *x,
                                const float *y, const float *dy, float *dx, bool accumulate)
{
    if (!dx)
        return;
    seq_job j = {.mode = mode, .steps = steps, .features = features, .lengths = lengths,
                 .x = x, .y = y, .dy = dy, .out = dx, .accumulate = accumulate};
    pool_run_min(cpu_pool(be), batch, 8, gpool_backward_samples, &j);
}

/* ---- pooling windows over time ------------------------------------ */

typedef struct pool1d_job {
    const pool1d_desc *d;
    const int32_t *lengths;
    const float *x, *y, *dy;
    float *out;
    bool accumulate;
} pool1d_job;

/* The real steps [*t0, *t1) of output step t's window in a sample of len. */
static void pool1d_window(const pool1d_desc *d, int t, int len, int *t0, int *t1)
{
    int start = t * d->stride - pool1d_pad_before(d, len);
    *t0 = start < 0 ? 0 : start;
    *t1 = start + d->kernel < len ? start + d->kernel : len;
}

/* One sample: y's first out_len steps pooled from x's, zeros after. */
static void pool1d_forward_sample(const pool1d_desc *d, int len, int out_len, const float *x,
                                  float *y)
{
    for (int t = 0; t < out_len; t++) {
        int t0, t1;
        pool1d_window(d, t, len, &t0, &t1);
        float *yt = y + (long)t * d->c;
        memcpy(yt, x + (long)t0 * d->c, (size_t)d->c * sizeof *yt);
        for (int s = t0 + 1; s < t1; s++) {
            const float *xs = x + (long)s * d->c;
            for (int k = 0; k < d->c; k++)
                yt[k] = d->mode == POOL_MAX ? (xs[k] > yt[k] ? xs[k] : yt[k])
                                            : yt[k] + xs[k];
        }
        if (d->mode == POOL_AVG) {
            float inv = 1.0f / (float)(t1 - t0);
            for (int k = 0; k < d->c; k++)
                yt[k] *= inv;
        }
    }
    memset(y + (long)out_len * d->c, 0,
           (size_t)(d->out_steps - out_len) * (size_t)d->c * sizeof *y);
}

/* One sample: dx (+)= the gradient of its first out_len output steps. */
static void pool1d_backward_sample(const pool1d_desc *d, int len, int out_len, const float *x,
                                   const float *y, const float *dy, float *dx, bool accumulate)
{
    if (!accumulate)
        memset(dx, 0, (size_t)d->steps * (size_t)d->c * sizeof *dx);
    for (int t = 0; t < out_len; t++) {
        int t0, t1;
        pool1d_window(d, t, len, &t0, &t1);
        for (int k = 0; k < d->c; k++) {
            float g = dy[(long)t * d->c + k];
            if (d->mode == POOL_AVG) {
                g /= (float)(t1 - t0);
                for (int s = t0; s < t1; s++)
                    dx[(long)s * d->c + k] += g;
                continue;
            }
            for (int s = t0; s < t1; s++)
                if (x[(long)s * d->c + k] == y[(long)t * d->c + k]) {
                    dx[(long)s * d->c + k] += g;
                    break;
                }
        }
    }
}

/* Both passes' sample loop: the backward one when the job has dy. */
static void pool1d_samples(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const pool1d_job *j = ctx;
    const pool1d_desc *d = j->d;
    for (long n = begin; n < end; n++) {
        int len = seq_len(j->lengths, (int)n, d->steps);
        int out_len = pool1d_out_length(d, len);
        const float *x = j->x + n * d->steps * d->c;
        long on = n * d->out_steps * d->c;
        if (j->dy)
            pool1d_backward_sample(d, len, out_len, x, j->y + on, j->dy + on,
                                   j->out + n * d->steps * d->c, j->accumulate);
        else
            pool1d_forward_sample(d, len, out_len, x, j->out + on);
    }
}

static void cpu_pool1d_forward(backend *be, const pool1d_desc *d, int batch, const int32_t *lengths,
                        const float *x, float *y)
{
    pool1d_job j = {d, lengths, x, NULL, NULL, y, false};
    pool_run_min(cpu_pool(be), batch, 8, pool1d_samples, &j);
}

static void cpu_pool1d_backward(backend *be, const pool1d_desc *d, int batch, const int32_t *lengths,
                         const float *x, const float *y, const float *dy, float *dx,
                         bool accumulate)
{
    if (!dx)
        return;
    pool1d_job j = {d, lengths, x, y, dy, dx, accumulate};
    pool_run_min(cpu_pool(be), batch, 8, pool1d_samples, &j);
}

/* ---- conv1d: im2col over time + GEMM ------------------------------ */

/* The im2col buffer is capped at this many floats; a chunk is as many
 * samples as fit (at least one), so the workspace does not grow with the
 * batch past this. */
#define CPU_CONV1D_COLS_MAX (1L << 22)

/* Samples per chunk: the whole batch when its columns fit the cap. */
static int conv1d_chunk(const conv1d_desc *d)
{
    long per = (long)d->out_steps * d->kernel * d->c;
    long fit = CPU_CONV1D_COLS_MAX / (per > 0 ? per : 1);
    if (fit < 1)
        fit = 1;
    return fit < d->max_batch ? (int)fit : d->max_batch;
}

static long cpu_conv1d_prepare(backend *be, const conv1d_desc *d)
{
    (void)be;
    if (d->steps < 1 || d->out_steps < 1 || d->c < 1 || d->filters < 1 || d->kernel < 1 ||
        d->stride < 1 || d->dilation < 1 || d->pad_before < 0 || d->max_batch < 1)
        return -1;
    /* A batch at fewer steps takes more samples a chunk (as many as fit
     * the cap, or the whole batch): the workspace holds either. */
    long per = (long)d->out_steps * d->kernel * d->c;
    long cap = CPU_CONV1D_COLS_MAX > per ? CPU_CONV1D_COLS_MAX : per;
    long all = (long)d->max_batch * per;
    return all < cap ? all : cap;
}

typedef struct conv1d_job {
    const conv1d_desc *d;
    const int32_t *lengths;
    int first;              /* first sample of the chunk */
    const float *x;
    float *cols;
    float *dx;
    bool accumulate;
} conv1d_job;

/* Sample s of the chunk: its index, length, output length and padding
 * before, and its rows of the column matrix. */
typedef struct conv1d_sample {
    int n, len, out_len, pad;
    long row;               /* floats of a column row */
    long cols;              /* offset of its first row in j->cols */
} conv1d_sample;

static conv1d_sample conv1d_sample_of(const conv1d_job *j, long s)
{
    const conv1d_desc *d = j->d;
    conv1d_sample a = {.n = j->first + (int)s, .row = (long)d->kernel * d->c};
    a.len = seq_len(j->lengths, a.n, d->steps);
    a.out_len = conv1d_out_length(d, a.len);
    a.pad = conv1d_pad_before(d, a.len);
    a.cols = s * d->out_steps * a.row;
    return a;
}

/* Rows of the chunk's column matrix, one per (sample, output step), each
 * kernel * c floats: the window's input steps one after the other, zero
 * where the window leaves the sample's real steps; rows past the sample's
 * output length all zero. */
static void conv1d_im2col_sample(const conv1d_job *j, long s)
{
    const conv1d_desc *d = j->d;
    conv1d_sample a = conv1d_sample_of(j, s);
    int len = a.len, out_len = a.out_len, pad = a.pad;
    long row = a.row;
    const float *x = j->x + (long)a.n * d->steps * d->c;
    float *cols = j->cols + a.cols;
    for (int t = 0; t < d->out_steps; t++) {
        float *r = cols + (long)t * row;
        for (int k = 0; k < d->kernel; k++) {
            int src = t * d->stride - pad + k * d->dilation;
            float *dst = r + (long)k * d->c;
            if (t < out_len && src >= 0 && src < len)
                memcpy(dst, x + (long)src * d->c, (size_t)d->c * sizeof *dst);
            else
                memset(dst, 0, (size_t)d->c * sizeof *dst);
        }
    }
}

static void conv1d_im2col(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    for (long s = begin; s < end; s++)
        conv1d_im2col_sample(ctx, s);
}

/* The transpose of im2col: each window's column gradient added into dx at
 * its input steps, per sample in (step, tap) order. */
static void conv1d_col2im_sample(const conv1d_job *j, long s)
{
    const conv1d_desc *d = j->d;
    conv1d_sample a = conv1d_sample_of(j, s);
    int len = a.len, out_len = a.out_len, pad = a.pad;
    long row = a.row;
    float *dx = j->dx + (long)a.n * d->steps * d->c;
    const float *cols = j->cols + a.cols;
    if (!j->accumulate)
        memset(dx, 0, (size_t)d->steps * (size_t)d->c * sizeof *dx);
    for (int t = 0; t < out_len; t++)
        for (int k = 0; k < d->kernel; k++) {
            int src = t * d->stride - pad + k * d->dilation;
            if (src < 0 || src >= len)
                continue;
            const float *g = cols + (long)t * row + (long)k * d->c;
            float *o = dx + (long)src * d->c;
            for (int c = 0; c < d->c; c++)
                o[c] += g[c];
        }
}

static void conv1d_col2im(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    for (long s = begin; s < end; s++)
        conv1d_col2im_sample(ctx, s);
}

static void cpu_conv1d_forward(backend *be, const conv1d_desc *d, int batch, const int32_t *lengths,
                        const float *x, const float *w, const float *bias, spec_activation act,
                        float *y, float *workspace)
{
    int chunk = conv1d_chunk(d);
    int kc = d->kernel * d->c;
    long per = (long)d->out_steps * d->filters;
    for (int first = 0; first < batch; first += chunk) {
        int nb = batch - first < chunk ? batch - first : chunk;
        conv1d_job j = {d, lengths, first, x, workspace, NULL, false};
        pool_run_min(cpu_pool(be), nb, 2, conv1d_im2col, &j);
        float *yc = y + (long)first * per;
        be->gemm(be, false, false, nb * d->out_steps, d->filters, kc, 1.0f, workspace, kc, w,
                 d->filters, 0.0f, yc, d->filters);
        for (int s = 0; s < nb; s++) {
            int out_len = conv1d_out_length(d, seq_len(lengths, first + s, d->steps));
            float *ys = yc + (long)s * per;
            if (bias)
                for (int t = 0; t < out_len; t++)
                    for (int f = 0; f < d->filters; f++)
                        ys[(long)t * d->filters + f] += bias[f];
            cpu_activate(act, ys, (long)out_len * d->filters);
            memset(ys + (long)out_len * d->filters, 0,
                   (size_t)(per - (long)out_len * d->filters) * sizeof *ys);
        }
    }
}

static void cpu_conv1d_backward(backend *be, const conv1d_desc *d, int batch, const int32_t *lengths,
                         const float *x, const float *w, float *dz, float *dx,
                         bool accumulate, float *dw, float *db, float *workspace)
{
    int chunk = conv1d_chunk(d);
    int kc = d->kernel * d->c;
    long per = (long)d->out_steps * d->filters;
    for (int n = 0; n < batch; n++) {
        long real = (long)conv1d_out_length(d, seq_len(lengths, n, d->steps)) * d->filters;
        memset(dz + n * per + real, 0, (size_t)(per - real) * sizeof *dz);
    }
    if (db) {
        /* Padding rows of dz are zero now, so every row may be summed. */
        memset(db, 0, (size_t)d->filters * sizeof *db);
        for (long r = 0; r < (long)batch * d->out_steps; r++)
            for (int f = 0; f < d->filters; f++)
                db[f] += dz[r * d->filters + f];
    }
    for (int first = 0; first < batch; first += chunk) {
        int nb = batch - first < chunk ? batch - first : chunk;
        int rows = nb * d->out_steps;
        const float *dzc = dz + (long)first * per;
        conv1d_job j = {d, lengths, first, x, workspace, dx, accumulate};
        pool_run_min(cpu_pool(be), nb, 2, conv1d_im2col, &j);
        /* dw (kc, filters) = cols^T @ dz, summed over the chunks in order. */
        be->gemm(be, true, false, kc, d->filters, rows, 1.0f, workspace, kc, dzc, d->filters,
                 first == 0 ? 0.0f : 1.0f, dw, d->filters);
        if (!dx)
            continue;
        /* The columns are spent: their buffer takes dcols = dz @ w^T. */
        be->gemm(be, false, true, rows, kc, d->filters, 1.0f, dzc, d->filters, w, d->filters,
                 0.0f, workspace, kc);
        pool_run_min(cpu_pool(be), nb, 2, conv1d_col2im, &j);
    }
}

/* Sets this file's ops of backend.h on be. */
void cpu_seq_register(backend *be)
{
    be->sequence_mask = cpu_sequence_mask;
    be->embedding_forward = cpu_embedding_forward;
    be->embedding_backward = cpu_embedding_backward;
    be->global_pool1d_forward = cpu_global_pool1d_forward;
    be->global_pool1d_backward = cpu_global_pool1d_backward;
    be->pool1d_forward = cpu_pool1d_forward;
    be->pool1d_backward = cpu_pool1d_backward;
    be->conv1d_prepare = cpu_conv1d_prepare;
    be->conv1d_forward = cpu_conv1d_forward;
    be->conv1d_backward = cpu_conv1d_backward;
}
