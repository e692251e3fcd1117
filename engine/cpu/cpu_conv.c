/* cpu_conv.c — 2-D convolution on the CPU, samples split across the
 * pool's threads, with the algorithm chosen per layer at prepare time
 * (cpu_conv.h): im2col + sgemm per sample (each thread with its own column
 * buffer, bias and activation fused into the pass after the GEMM), or per
 * group of samples for small output planes (cpu_conv_folded.c), direct
 * kernels for few channels (cpu_conv_direct.c), Winograd F(2x2, 5x5)
 * for stride-1 5x5 layers with enough channels (cpu_winograd.c), or, for
 * grouped and depthwise layers, a direct loop (cpu_conv_grouped.c), or,
 * in builds with oneDNN, oneDNN's convolution primitives on each thread's
 * chunk of samples (cpu_conv_dnnl.c).
 *
 * Workspace layout (floats), per thread t of T:
 *   col[t]  : the algorithm's scratch (im2col: c*kh*kw * oh*ow, the column
 *             of one sample, reused for dcol; folded: a group's)
 *   dw[t]   : k*c*kh*kw + k     (this thread's partial dw and db)
 * then, for Winograd, the transformed weights (36, k, c) shared by all,
 * for oneDNN the weights in its formats. A oneDNN layer's col is at least
 * im2col's, so im2col can stand in when oneDNN fails at run time.
 * The partials are summed in thread order, so dw is deterministic for a
 * given thread count. A 1x1, stride-1, unpadded convolution skips im2col:
 * the sample itself is the column matrix. */
#include "cpu/cpu_conv.h"
#include "cpu/cpu_ops.h"
#include "cpu/cpu_conv_direct.h"
#include "cpu/cpu_conv_folded.h"
#include "cpu/cpu_conv_grouped.h"
#include "cpu/cpu_winograd.h"
#ifdef PUNCH_HAVE_DNNL
#include "cpu/cpu_conv_dnnl.h"
#include "cpu/cpu_im2col.h"
#endif

#include <string.h>

/* d->impl points at one of these: the layer's algorithm; or, for oneDNN,
 * at the layer's cpu_conv_dnnl, which starts with its algorithm. */
static cpu_conv_algo conv_algos[] = {CPU_CONV_IM2COL, CPU_CONV_DIRECT, CPU_CONV_WINOGRAD,
                                     CPU_CONV_GROUPED, CPU_CONV_FOLDED};

static bool conv_dnnl_disabled;

void cpu_conv_dnnl_disable(bool on)
{
    conv_dnnl_disabled = on;
}

cpu_conv_algo cpu_conv2d_algo(const conv2d_desc *d)
{
    return d->impl ? *(const cpu_conv_algo *)d->impl : cpu_conv_choose(d);
}

/* The rule, with oneDNN's primitives among the candidates or not. They
 * come after the direct kernels and Winograd: those layers have few
 * channels or 5x5 kernels, and on convnet's 5x5 layer (32 to 64 channels,
 * 14x14, batch 64) oneDNN only ties with Winograd (cpu_conv_dnnl.c). */
static cpu_conv_algo conv_choose_rule(const conv2d_desc *d, bool dnnl)
{
    if (d->groups > 1)
        return CPU_CONV_GROUPED;
    if (cpu_conv_direct_suits(d))
        return CPU_CONV_DIRECT;
    if (cpu_winograd_suits(d))
        return CPU_CONV_WINOGRAD;
#ifdef PUNCH_HAVE_DNNL
    if (dnnl && !conv_dnnl_disabled && cpu_conv_dnnl_suits(d))
        return CPU_CONV_DNNL;
#else
    (void)dnnl;
#endif
    if (cpu_conv_folded_suits(d))
        return CPU_CONV_FOLDED;
    return CPU_CONV_IM2COL;
}

cpu_conv_algo cpu_conv_choose(const conv2d_desc *d)
{
    return conv_choose_rule(d, true);
}

static long conv_wsize(const conv2d_desc *d)
{
    return (long)d->k * (d->c / d->groups) * d->kh * d->kw;
}

static long conv_im2col_size(const conv2d_desc *d)
{
    return (long)d->c * d->kh * d->kw * d->oh * d->ow;
}

static long conv_col_size(const conv2d_desc *d, int threads)
{
    switch (cpu_conv2d_algo(d)) {
    case CPU_CONV_DIRECT:
        return cpu_conv_direct_scratch(d);
    case CPU_CONV_WINOGRAD:
        return cpu_winograd_thread_scratch(d);
    case CPU_CONV_GROUPED:
        return 0;
    case CPU_CONV_FOLDED:
        return cpu_conv_folded_scratch(d, threads);
    case CPU_CONV_DNNL:
#ifdef PUNCH_HAVE_DNNL
        return cpu_conv_dnnl_thread_floats(d->impl, conv_im2col_size(d), conv_wsize(d) + d->k);
#else
        break;
#endif
    case CPU_CONV_IM2COL:
        break;
    }
    return conv_im2col_size(d);
}

static long conv_thread_block(const conv2d_desc *d, int threads)
{
    return conv_col_size(d, threads) + conv_wsize(d) + d->k;
}

static bool conv_is_pointwise(const conv2d_desc *d)
{
    return d->kh == 1 && d->kw == 1 && d->stride_h == 1 && d->stride_w == 1 &&
           d->pad_top == 0 && d->pad_left == 0 && d->pad_bottom == 0 && d->pad_right == 0;
}

long cpu_conv2d_prepare_algo(backend *be, conv2d_desc *d, cpu_conv_algo algo)
{
    if (d->groups <= 0)
        d->groups = 1;
    if (d->oh <= 0 || d->ow <= 0 || d->c <= 0 || d->k <= 0 || d->c % d->groups != 0 ||
        d->k % d->groups != 0)
        return -1;
    if (d->groups > 1 && algo != CPU_CONV_GROUPED)
        return -1;
    if (algo == CPU_CONV_DIRECT && (d->stride_h != 1 || d->stride_w != 1))
        return -1;
    if (algo == CPU_CONV_WINOGRAD && !cpu_winograd_can(d))
        return -1;
    long shared = algo == CPU_CONV_WINOGRAD ? cpu_winograd_weight_size(d) : 0;
    if (algo == CPU_CONV_DNNL) {
#ifdef PUNCH_HAVE_DNNL
        cpu_conv_dnnl *s = cpu_conv_dnnl_create(d, be->threads, be->bf16);
        if (!s)
            return -1;
        d->impl = s;
        return conv_thread_block(d, be->threads) * be->threads + cpu_conv_dnnl_shared_floats(s);
#else
        return -1;
#endif
    }
    d->impl = &conv_algos[algo];
    return conv_thread_block(d, be->threads) * be->threads + shared;
}

static long cpu_conv2d_prepare(backend *be, conv2d_desc *d)
{
    if (d->groups <= 0)
        d->groups = 1;
    cpu_conv_algo algo = cpu_conv_choose(d);
#ifdef PUNCH_HAVE_DNNL
    /* bf16 runs only in oneDNN's primitives: every layer they can run
     * goes there (bf16 halves the bytes moved and doubles the multiply
     * rate, so the fp32 rule's thresholds do not apply); the others stay
     * fp32 in the engine's own algorithms. */
    if (be->bf16 && d->groups == 1 && !conv_dnnl_disabled)
        algo = CPU_CONV_DNNL;
#endif
    long ws = cpu_conv2d_prepare_algo(be, d, algo);
    /* oneDNN may refuse a shape; the engine's own algorithms run any. */
    if (ws < 0 && algo == CPU_CONV_DNNL)
        ws = cpu_conv2d_prepare_algo(be, d, conv_choose_rule(d, false));
    return ws;
}

static void cpu_conv2d_release(backend *be, conv2d_desc *d)
{
    (void)be;
#ifdef PUNCH_HAVE_DNNL
    if (d->impl && cpu_conv2d_algo(d) == CPU_CONV_DNNL)
        cpu_conv_dnnl_destroy(d->impl);
#endif
    d->impl = NULL;
}

typedef struct conv_job {
    const conv2d_desc *d;
    const float *x, *w, *bias, *dz;
    spec_activation act;
    float *y, *dx, *dw, *db, *ws;
    bool accumulate;
    int threads;
    int batch;
    cpu_conv_algo algo;
    long ckk;               /* c * kh * kw: one im2col column */
    long ohw;               /* one output plane */
    long xsize;             /* one input sample */
} conv_job;

/* The job's fields that follow from the shape alone. */
static void conv_job_shape(conv_job *j)
{
    const conv2d_desc *d = j->d;
    j->algo = cpu_conv2d_algo(d);
    j->ckk = (long)d->c * d->kh * d->kw;
    j->ohw = (long)d->oh * d->ow;
    j->xsize = (long)d->c * d->h * d->w;
}

static float *conv_thread_col(const conv_job *j, int tid)
{
    return j->ws + (long)tid * conv_thread_block(j->d, j->threads);
}

/* What the threads share, after every thread's block: Winograd's
 * transformed weights, oneDNN's reordered ones. */
static float *conv_shared(const conv_job *j)
{
    return j->ws + (long)j->threads * conv_thread_block(j->d, j->threads);
}

static float *conv_winograd_u(const conv_job *j)
{
    return conv_shared(j);
}

#ifdef PUNCH_HAVE_DNNL
/* Readies oneDNN's primitives and weights for the call, or has the call
 * run im2col instead (oneDNN failed). */
static void conv_dnnl_ready(conv_job *j, bool backward)
{
    cpu_conv_dnnl *s = j->d->impl;
    if (!cpu_conv_dnnl_ready(s, j->batch, backward, j->act) ||
        !cpu_conv_dnnl_weights(s, j->w, backward, conv_shared(j)))
        j->algo = CPU_CONV_IM2COL;
}
#endif

static void conv_winograd_weights_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const conv_job *j = ctx;
    cpu_winograd_weights(j->d, j->w, begin, end, conv_winograd_u(j));
}

static void conv_forward_chunk(void *ctx, long begin, long end, int tid)
{
    const conv_job *j = ctx;
    const conv2d_desc *d = j->d;
    long ckk = j->ckk, ohw = j->ohw, xsize = j->xsize;
    float *col = conv_thread_col(j, tid);
    if (j->algo == CPU_CONV_WINOGRAD) {
        cpu_winograd_forward(d, (int)(end - begin), j->x + begin * xsize, conv_winograd_u(j),
                             j->bias, j->act, j->y + begin * d->k * ohw, col);
        return;
    }
    if (j->algo == CPU_CONV_FOLDED) {
        cpu_conv_folded_forward(d, j->threads, (int)(end - begin), j->x + begin * xsize, j->w,
                                j->bias, j->act, j->y + begin * d->k * ohw, col);
        return;
    }
#ifdef PUNCH_HAVE_DNNL
    /* When oneDNN fails, im2col below takes the chunk. */
    if (j->algo == CPU_CONV_DNNL && (begin == end ||
                                     cpu_conv_dnnl_forward(d->impl, tid, (int)(end - begin),
                                                           j->x + begin * xsize, j->w,
                                                           conv_shared(j), j->bias, j->act,
                                                           j->y + begin * d->k * ohw, col)))
        return;
#endif
    for (long b = begin; b < end; b++) {
        const float *xb = j->x + b * xsize;
        float *yb = j->y + b * d->k * ohw;
        if (j->algo == CPU_CONV_DIRECT) {
            cpu_conv_direct_forward(d, xb, j->w, j->bias, j->act, yb, col);
            continue;
        }
        if (j->algo == CPU_CONV_GROUPED) {
            cpu_conv_grouped_forward(d, xb, j->w, j->bias, j->act, yb);
            continue;
        }
        const float *src = xb;
        if (!conv_is_pointwise(d)) {
            cpu_im2col(d, xb, col, ohw);
            src = col;
        }
        cpu_sgemm(false, false, d->k, (int)ohw, (int)ckk, 1.0f, j->w, (int)ckk, src,
                  (int)ohw, 0.0f, yb, (int)ohw);
        for (int k = 0; k < d->k; k++) {
            float *yk = yb + k * ohw;
            if (j->bias) {
                float bk = j->bias[k];
                for (long i = 0; i < ohw; i++)
                    yk[i] += bk;
            }
            cpu_activate(j->act, yk, ohw);
        }
    }
}

static void cpu_conv2d_forward(backend *be, const conv2d_desc *d, int batch, const float *x,
                        const float *w, const float *bias, spec_activation act, float *y,
                        float *workspace)
{
    conv_job j = {.d = d, .x = x, .w = w, .bias = bias, .act = act, .y = y,
                  .ws = workspace, .threads = be->threads, .batch = batch};
    conv_job_shape(&j);
#ifdef PUNCH_HAVE_DNNL
    if (j.algo == CPU_CONV_DNNL)
        conv_dnnl_ready(&j, false);
#endif
    if (j.algo == CPU_CONV_WINOGRAD)
        pool_run(cpu_pool(be), (long)d->k * d->c, conv_winograd_weights_chunk, &j);
    pool_run(cpu_pool(be), batch, conv_forward_chunk, &j);
}

static void conv_backward_chunk(void *ctx, long begin, long end, int tid)
{
    const conv_job *j = ctx;
    const conv2d_desc *d = j->d;
    long ckk = j->ckk, ohw = j->ohw, xsize = j->xsize;
    float *col = conv_thread_col(j, tid);
    float *dw = col + conv_col_size(d, j->threads);
    float *db = dw + conv_wsize(d);
    if (j->algo == CPU_CONV_WINOGRAD) {
        cpu_winograd_backward(d, (int)(end - begin), j->x + begin * xsize, conv_winograd_u(j),
                              j->dz + begin * d->k * ohw,
                              j->dx ? j->dx + begin * xsize : NULL, j->accumulate, dw, db,
                              col);
        return;
    }
    if (j->algo == CPU_CONV_DIRECT) {
        cpu_conv_direct_backward(d, (int)(end - begin), j->x + begin * xsize, j->w,
                                 j->dz + begin * d->k * ohw,
                                 j->dx ? j->dx + begin * xsize : NULL, j->accumulate, dw, db,
                                 col);
        return;
    }
    if (j->algo == CPU_CONV_FOLDED) {
        cpu_conv_folded_backward(d, j->threads, (int)(end - begin), j->x + begin * xsize, j->w,
                                 j->dz + begin * d->k * ohw,
                                 j->dx ? j->dx + begin * xsize : NULL, j->accumulate, dw, db,
                                 col);
        return;
    }
    if (j->algo == CPU_CONV_GROUPED) {
        cpu_conv_grouped_backward(d, (int)(end - begin), j->x + begin * xsize, j->w,
                                  j->dz + begin * d->k * ohw,
                                  j->dx ? j->dx + begin * xsize : NULL, j->accumulate, dw, db);
        return;
    }
#ifdef PUNCH_HAVE_DNNL
    /* When oneDNN fails, im2col below takes the chunk. */
    if (j->algo == CPU_CONV_DNNL && begin < end &&
        cpu_conv_dnnl_backward(d->impl, tid, (int)(end - begin), j->x + begin * xsize, j->w,
                               conv_shared(j), j->dz + begin * d->k * ohw,
                               j->dx ? j->dx + begin * xsize : NULL, j->accumulate, dw, db,
                               col))
        return;
#endif
    memset(dw, 0, (size_t)(conv_wsize(d) + d->k) * sizeof *dw);
    bool pointwise = conv_is_pointwise(d);
    for (long b = begin; b < end; b++) {
        const float *xb = j->x + b * xsize;
        const float *dzb = j->dz + b * d->k * ohw;
        const float *src = xb;
        if (!pointwise) {
            cpu_im2col(d, xb, col, ohw);
            src = col;
        }
        /* dw (k, ckk) += dz_b (k, ohw) @ col^T (ohw, ckk) */
        cpu_sgemm(false, true, d->k, (int)ckk, (int)ohw, 1.0f, dzb, (int)ohw, src, (int)ohw,
                  1.0f, dw, (int)ckk);
        for (int k = 0; k < d->k; k++)
            db[k] += cpu_sum(dzb + k * ohw, ohw);
        if (!j->dx)
            continue;
        float *dxb = j->dx + b * xsize;
        if (pointwise) {
            /* dx_b (c, ohw) (+)= w^T (c, k) @ dz_b (k, ohw) */
            cpu_sgemm(true, false, (int)ckk, (int)ohw, d->k, 1.0f, j->w, (int)ckk, dzb,
                      (int)ohw, j->accumulate ? 1.0f : 0.0f, dxb, (int)ohw);
            continue;
        }
        cpu_sgemm(true, false, (int)ckk, (int)ohw, d->k, 1.0f, j->w, (int)ckk, dzb, (int)ohw,
                  0.0f, col, (int)ohw);
        if (!j->accumulate)
            memset(dxb, 0, (size_t)xsize * sizeof *dxb);
        cpu_col2im(d, col, ohw, dxb);
    }
}

/* dw/db = sum over threads of the partials, element ranges split. */
static void conv_reduce_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const conv_job *j = ctx;
    const conv2d_desc *d = j->d;
    long wsize = conv_wsize(d);
    const float *part[j->threads > 0 ? j->threads : 1];
    int np = 0;
    for (int t = 0; t < j->threads; t++)
        /* A thread with no samples never zeroed its partial. */
        if (pool_chunk_begin(j->batch, t + 1, j->threads) !=
            pool_chunk_begin(j->batch, t, j->threads))
            part[np++] = conv_thread_col(j, t) + conv_col_size(d, j->threads);
    for (long i = begin; i < end; i++) {
        float s = 0.0f;
        for (int t = 0; t < np; t++)
            s += part[t][i];
        if (i < wsize)
            j->dw[i] = s;
        else if (j->db)
            j->db[i - wsize] = s;
    }
}

static void cpu_conv2d_backward(backend *be, const conv2d_desc *d, int batch, const float *x,
                         const float *w, const float *dz, float *dx, bool accumulate,
                         float *dw, float *db, float *workspace)
{
    conv_job j = {.d = d, .x = x, .w = w, .dz = dz, .dx = dx, .dw = dw, .db = db,
                  .ws = workspace, .accumulate = accumulate, .threads = be->threads,
                  .batch = batch};
    conv_job_shape(&j);
#ifdef PUNCH_HAVE_DNNL
    if (j.algo == CPU_CONV_DNNL)
        conv_dnnl_ready(&j, true);
#endif
    if (dx && j.algo == CPU_CONV_WINOGRAD)
        pool_run(cpu_pool(be), (long)d->k * d->c, conv_winograd_weights_chunk, &j);
    pool_run(cpu_pool(be), batch, conv_backward_chunk, &j);
    pool_run(cpu_pool(be), conv_wsize(d) + d->k, conv_reduce_chunk, &j);
}

/* Sets this file's ops of backend.h on be. */
void cpu_conv_register(backend *be)
{
    be->conv2d_prepare = cpu_conv2d_prepare;
    be->conv2d_release = cpu_conv2d_release;
    be->conv2d_forward = cpu_conv2d_forward;
    be->conv2d_backward = cpu_conv2d_backward;
}
