/* cpu_conv_folded.c — im2col + GEMM over groups of samples (see
 * cpu_conv_folded.h). Scratch, per thread: col (c*kh*kw, g*oh*ow), the
 * group's columns (reused for the data gradient's dcol), then zt
 * (k, g*oh*ow), the group's outputs or output gradients channel-major,
 * which is the layout the GEMM needs and the tensors do not have. */
#include "cpu/cpu_conv_folded.h"
#include "cpu/cpu_conv.h"
#include "cpu/cpu_im2col.h"

#include <string.h>

/* Output planes of at most this many pixels fold (4x4 and below). At 8x8
 * a sample already gives the GEMM 64 columns, and folding measured no
 * better there (resnet20_cifar10 and vgg11_cifar10, 2026-11-26). */
#define FOLD_MAX_PLANE 16
/* Past about this many GEMM columns the sgemm is at its peak already. */
#define FOLD_MAX_COLS 1024
/* A thread's scratch stays under this many floats (16 MiB) unless one
 * sample alone needs more. */
#define FOLD_MAX_FLOATS (1L << 22)

bool cpu_conv_folded_suits(const conv2d_desc *d)
{
    return d->groups <= 1 && d->max_batch > 1 && (long)d->oh * d->ow <= FOLD_MAX_PLANE;
}

static long folded_sample_floats(const conv2d_desc *d)
{
    return ((long)d->c * d->kh * d->kw + d->k) * d->oh * d->ow;
}

int cpu_conv_folded_group(const conv2d_desc *d, int threads)
{
    long t = threads > 0 ? threads : 1;
    long mb = d->max_batch > 0 ? d->max_batch : 1;
    long g = (mb + t - 1) / t; /* the largest chunk pool_run gives a thread */
    long ohw = (long)d->oh * d->ow;
    long by_cols = FOLD_MAX_COLS / ohw;
    long by_floats = FOLD_MAX_FLOATS / folded_sample_floats(d);
    if (g > by_cols)
        g = by_cols;
    if (g > by_floats)
        g = by_floats;
    return g > 0 ? (int)g : 1;
}

long cpu_conv_folded_scratch(const conv2d_desc *d, int threads)
{
    return folded_sample_floats(d) * cpu_conv_folded_group(d, threads);
}

/* col's columns for samples [0, g) of x. */
static void folded_im2col(const conv2d_desc *d, int g, const float *x, float *col)
{
    long ohw = (long)d->oh * d->ow, xsize = (long)d->c * d->h * d->w;
    for (int s = 0; s < g; s++)
        cpu_im2col(d, x + s * xsize, col + s * ohw, g * ohw);
}

void cpu_conv_folded_forward(const conv2d_desc *d, int threads, int n, const float *x,
                             const float *w, const float *bias, spec_activation act, float *y,
                             float *scratch)
{
    int group = cpu_conv_folded_group(d, threads);
    long ckk = (long)d->c * d->kh * d->kw, ohw = (long)d->oh * d->ow;
    long xsize = (long)d->c * d->h * d->w, ysize = d->k * ohw;
    float *col = scratch, *zt = scratch + ckk * group * ohw;
    for (int b0 = 0; b0 < n; b0 += group) {
        int g = n - b0 < group ? n - b0 : group;
        long cols = g * ohw;
        folded_im2col(d, g, x + b0 * xsize, col);
        cpu_sgemm(false, false, d->k, (int)cols, (int)ckk, 1.0f, w, (int)ckk, col,
                  (int)cols, 0.0f, zt, (int)cols);
        for (int s = 0; s < g; s++) {
            float *yb = y + (b0 + s) * ysize;
            for (int k = 0; k < d->k; k++) {
                float *yk = yb + k * ohw;
                const float *src = zt + k * cols + s * ohw;
                float bk = bias ? bias[k] : 0.0f;
                for (long i = 0; i < ohw; i++)
                    yk[i] = src[i] + bk;
                cpu_activate(act, yk, ohw);
            }
        }
    }
}

/* zt (k, g*ohw) from samples [0, g) of dz (g, k, ohw). */
static void folded_gather(const conv2d_desc *d, int g, const float *dz, float *zt)
{
    long ohw = (long)d->oh * d->ow, cols = g * ohw;
    for (int s = 0; s < g; s++)
        for (int k = 0; k < d->k; k++)
            memcpy(zt + k * cols + s * ohw, dz + ((long)s * d->k + k) * ohw,
                   (size_t)ohw * sizeof *zt);
}

void cpu_conv_folded_backward(const conv2d_desc *d, int threads, int n, const float *x,
                              const float *w, const float *dz, float *dx, bool accumulate,
                              float *dw, float *db, float *scratch)
{
    int group = cpu_conv_folded_group(d, threads);
    long ckk = (long)d->c * d->kh * d->kw, ohw = (long)d->oh * d->ow;
    long xsize = (long)d->c * d->h * d->w, ysize = d->k * ohw;
    float *col = scratch, *zt = scratch + ckk * group * ohw;
    memset(dw, 0, (size_t)(d->k * ckk) * sizeof *dw);
    memset(db, 0, (size_t)d->k * sizeof *db);
    for (int b0 = 0; b0 < n; b0 += group) {
        int g = n - b0 < group ? n - b0 : group;
        long cols = g * ohw;
        folded_im2col(d, g, x + b0 * xsize, col);
        folded_gather(d, g, dz + b0 * ysize, zt);
        /* dw (k, ckk) += zt (k, cols) @ col^T (cols, ckk) */
        cpu_sgemm(false, true, d->k, (int)ckk, (int)cols, 1.0f, zt, (int)cols, col,
                  (int)cols, 1.0f, dw, (int)ckk);
        for (int k = 0; k < d->k; k++)
            db[k] += cpu_sum(zt + k * cols, cols);
        if (!dx)
            continue;
        /* dcol (ckk, cols) = w^T (ckk, k) @ zt (k, cols), into col */
        cpu_sgemm(true, false, (int)ckk, (int)cols, d->k, 1.0f, w, (int)ckk, zt, (int)cols,
                  0.0f, col, (int)cols);
        for (int s = 0; s < g; s++) {
            float *dxb = dx + (b0 + s) * xsize;
            if (!accumulate)
                memset(dxb, 0, (size_t)xsize * sizeof *dxb);
            cpu_col2im(d, col + s * ohw, cols, dxb);
        }
    }
}
