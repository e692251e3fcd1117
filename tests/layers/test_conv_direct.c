/* test_conv_direct.c — the direct convolution kernels (cpu_conv_direct.c:
 * the AVX-512 row kernels where the CPU has them, and the portable ones)
 * against a double-precision reference written out from the definition,
 * through the CPU backend's conv2d ops, on odd geometries: row tails of
 * every length, output channels not a multiple of the register block,
 * even kernels with asymmetric "same" padding, dilation, kernels wider
 * than the tap block, padding beyond the kernel's reach, batch tails
 * across threads, accumulated and absent input gradients. Also: the same
 * inputs give the same bits run after run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "cpu/cpu_conv_direct.h"
#include "backend/rng.h"
#include "cpu/cpu.h"

typedef struct conv_case {
    int c, k, h, w, kh, kw, pt, pl, pb, pr, dil_h, dil_w, batch;
} conv_case;

static conv_case cases[] = {
    /* simplecnn's two layers, batch tails */
    {1, 4, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 5},
    {4, 4, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 3},
    /* 37 columns: a two-vector chunk and a 5-column single vector; 5
     * output channels: one block of four and one left over */
    {3, 5, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 4},
    /* even kernel, "same": one more padding at the bottom/right */
    {2, 3, 7, 6, 2, 2, 0, 0, 1, 1, 1, 1, 3},
    /* dilation 2 with its "same" padding, 11 columns */
    {2, 2, 10, 11, 3, 3, 2, 2, 2, 2, 2, 2, 2},
    /* "valid" 5x5 down to a single output column, 7 filters */
    {1, 7, 5, 5, 5, 5, 0, 0, 0, 0, 1, 1, 3},
    /* a 1x5 kernel: taps in blocks of three and two; 8 filters */
    {2, 8, 6, 20, 1, 5, 0, 2, 0, 2, 1, 1, 2},
    /* sixteen input channels into one filter */
    {16, 1, 5, 5, 3, 3, 0, 0, 0, 0, 1, 1, 2},
    /* padding beyond a 1x1 kernel's reach (the portable kernels) */
    {2, 2, 4, 5, 1, 1, 1, 1, 1, 1, 1, 1, 2},
    /* dilation only across columns, padding only on the left side */
    {2, 4, 6, 17, 2, 3, 1, 4, 0, 0, 1, 2, 3},
};

static conv2d_desc desc_of(const conv_case *t)
{
    conv2d_desc d = {.max_batch = t->batch, .c = t->c, .h = t->h, .w = t->w, .k = t->k,
                     .kh = t->kh, .kw = t->kw, .stride_h = 1, .stride_w = 1,
                     .pad_top = t->pt, .pad_left = t->pl, .pad_bottom = t->pb,
                     .pad_right = t->pr, .dil_h = t->dil_h, .dil_w = t->dil_w};
    d.oh = t->h + t->pt + t->pb - t->dil_h * (t->kh - 1);
    d.ow = t->w + t->pl + t->pr - t->dil_w * (t->kw - 1);
    return d;
}

static void fill(float *p, long n, rng *g)
{
    for (long i = 0; i < n; i++)
        p[i] = (float)(2.0 * rng_uniform(g) - 1.0);
}

/* The input position read by output (oy, ox) through tap (ki, kj), or -1. */
static long tap_input(const conv2d_desc *d, int oy, int ox, int ki, int kj)
{
    int iy = oy - d->pad_top + ki * d->dil_h, ix = ox - d->pad_left + kj * d->dil_w;
    if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w)
        return -1;
    return (long)iy * d->w + ix;
}

static void expect_close(const float *got, const double *want, const double *scale, long n,
                         const char *what, int ci)
{
    for (long i = 0; i < n; i++) {
        double tol = 1e-5 * scale[i] + 1e-6;
        if (fabs((double)got[i] - want[i]) > tol)
            fail_msg("case %d %s[%ld]: got %.7g, want %.7g", ci, what, i, (double)got[i],
                     want[i]);
    }
}

typedef struct bufs {
    float *x, *w, *b, *y, *dz, *dx, *dw, *db, *ws;
    double *ry, *sy, *rdx, *sdx, *rdw, *sdw, *rdb, *sdb;
} bufs;

/* Reference forward (y, pre-activation) and backward for all of them. */
static void reference(const conv2d_desc *d, int batch, const bufs *b, const float *dx0)
{
    long xs = (long)d->c * d->h * d->w, ohw = (long)d->oh * d->ow;
    long wsize = (long)d->k * d->c * d->kh * d->kw;
    memset(b->rdw, 0, (size_t)wsize * sizeof(double));
    memset(b->sdw, 0, (size_t)wsize * sizeof(double));
    for (long i = 0; i < (long)batch * xs; i++) {
        b->rdx[i] = dx0 ? dx0[i] : 0.0;
        b->sdx[i] = dx0 ? fabs(dx0[i]) : 0.0;
    }
    for (int k = 0; k < d->k; k++) {
        b->rdb[k] = b->sdb[k] = 0.0;
        for (int n = 0; n < batch; n++)
            for (long p = 0; p < ohw; p++) {
                double g = b->dz[(n * d->k + k) * ohw + p];
                b->rdb[k] += g;
                b->sdb[k] += fabs(g);
            }
    }
    for (int n = 0; n < batch; n++)
        for (int k = 0; k < d->k; k++)
            for (int oy = 0; oy < d->oh; oy++)
                for (int ox = 0; ox < d->ow; ox++) {
                    long o = (n * d->k + k) * ohw + (long)oy * d->ow + ox;
                    double s = b->b[k], a = fabs(b->b[k]), g = b->dz[o];
                    for (int c = 0; c < d->c; c++)
                        for (int ki = 0; ki < d->kh; ki++)
                            for (int kj = 0; kj < d->kw; kj++) {
                                long q = tap_input(d, oy, ox, ki, kj);
                                if (q < 0)
                                    continue;
                                long wi = (((long)k * d->c + c) * d->kh + ki) * d->kw + kj;
                                long xi = n * xs + (long)c * d->h * d->w + q;
                                s += (double)b->w[wi] * b->x[xi];
                                a += fabs((double)b->w[wi] * b->x[xi]);
                                b->rdw[wi] += g * b->x[xi];
                                b->sdw[wi] += fabs(g * b->x[xi]);
                                b->rdx[xi] += g * b->w[wi];
                                b->sdx[xi] += fabs(g * b->w[wi]);
                            }
                    b->ry[o] = s;
                    b->sy[o] = a;
                }
}

static void *xalloc(size_t n)
{
    void *p = calloc(n > 0 ? n : 1, 1);
    assert_non_null(p);
    return p;
}

static void run_case(int ci, const conv_case *t, int threads, bool portable)
{
    cpu_conv_direct_force_portable(portable);
    char err[256];
    backend *be = backend_cpu_create(threads, err, sizeof err);
    assert_non_null(be);
    conv2d_desc d = desc_of(t);
    assert_true(cpu_conv_direct_suits(&d));
    long wsf = be->conv2d_prepare(be, &d);
    assert_true(wsf >= 0);
    int batch = t->batch;
    long xs = (long)d.c * d.h * d.w, ys = (long)d.k * d.oh * d.ow;
    long wsize = (long)d.k * d.c * d.kh * d.kw;
    bufs b = {
        .x = be->alloc(be, batch * xs), .w = be->alloc(be, wsize), .b = be->alloc(be, d.k),
        .y = be->alloc(be, batch * ys), .dz = be->alloc(be, batch * ys),
        .dx = be->alloc(be, batch * xs), .dw = be->alloc(be, wsize), .db = be->alloc(be, d.k),
        .ws = be->alloc(be, wsf > 0 ? wsf : 1),
        .ry = xalloc((size_t)(batch * ys) * sizeof(double)),
        .sy = xalloc((size_t)(batch * ys) * sizeof(double)),
        .rdx = xalloc((size_t)(batch * xs) * sizeof(double)),
        .sdx = xalloc((size_t)(batch * xs) * sizeof(double)),
        .rdw = xalloc((size_t)wsize * sizeof(double)),
        .sdw = xalloc((size_t)wsize * sizeof(double)),
        .rdb = xalloc((size_t)d.k * sizeof(double)),
        .sdb = xalloc((size_t)d.k * sizeof(double)),
    };
    float *dx0 = xalloc((size_t)(batch * xs) * sizeof(float));
    float *keep = xalloc((size_t)(batch * (xs > ys ? xs : ys) + wsize) * sizeof(float));
    rng g = rng_make(7, (uint64_t)ci);
    fill(b.x, batch * xs, &g);
    fill(b.w, wsize, &g);
    fill(b.b, d.k, &g);
    fill(b.dz, batch * ys, &g);
    fill(dx0, batch * xs, &g);
    reference(&d, batch, &b, NULL);

    /* Forward, plain and with relu. */
    be->conv2d_forward(be, &d, batch, b.x, b.w, b.b, ACT_NONE, b.y, b.ws);
    expect_close(b.y, b.ry, b.sy, batch * ys, "y", ci);
    memcpy(keep, b.y, (size_t)(batch * ys) * sizeof(float));
    be->conv2d_forward(be, &d, batch, b.x, b.w, b.b, ACT_RELU, b.y, b.ws);
    for (long i = 0; i < batch * ys; i++)
        assert_true(b.y[i] == (keep[i] > 0.0f ? keep[i] : 0.0f));
    be->conv2d_forward(be, &d, batch, b.x, b.w, b.b, ACT_NONE, b.y, b.ws);
    assert_memory_equal(b.y, keep, (size_t)(batch * ys) * sizeof(float));

    /* Backward, dx overwritten. */
    be->conv2d_backward(be, &d, batch, b.x, b.w, b.dz, b.dx, false, b.dw, b.db, b.ws);
    expect_close(b.dx, b.rdx, b.sdx, batch * xs, "dx", ci);
    expect_close(b.dw, b.rdw, b.sdw, wsize, "dw", ci);
    expect_close(b.db, b.rdb, b.sdb, d.k, "db", ci);
    memcpy(keep, b.dw, (size_t)wsize * sizeof(float));
    memcpy(keep + wsize, b.dx, (size_t)(batch * xs) * sizeof(float));

    /* Again, bit for bit; then without dx and db (same dw). */
    be->conv2d_backward(be, &d, batch, b.x, b.w, b.dz, b.dx, false, b.dw, b.db, b.ws);
    assert_memory_equal(b.dw, keep, (size_t)wsize * sizeof(float));
    assert_memory_equal(b.dx, keep + wsize, (size_t)(batch * xs) * sizeof(float));
    memset(b.dw, 0, (size_t)wsize * sizeof(float));
    be->conv2d_backward(be, &d, batch, b.x, b.w, b.dz, NULL, false, b.dw, NULL, b.ws);
    assert_memory_equal(b.dw, keep, (size_t)wsize * sizeof(float));

    /* dx accumulated onto what is there. */
    memcpy(b.dx, dx0, (size_t)(batch * xs) * sizeof(float));
    be->conv2d_backward(be, &d, batch, b.x, b.w, b.dz, b.dx, true, b.dw, b.db, b.ws);
    reference(&d, batch, &b, dx0);
    expect_close(b.dx, b.rdx, b.sdx, batch * xs, "dx accumulated", ci);

    float *fb[] = {b.x, b.w, b.b, b.y, b.dz, b.dx, b.dw, b.db, b.ws};
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++)
        be->free(be, fb[i]);
    double *db_[] = {b.ry, b.sy, b.rdx, b.sdx, b.rdw, b.sdw, b.rdb, b.sdb};
    for (size_t i = 0; i < sizeof db_ / sizeof db_[0]; i++)
        free(db_[i]);
    free(dx0);
    free(keep);
    be->conv2d_release(be, &d);
    be->destroy(be);
    cpu_conv_direct_force_portable(false);
}

static void test_fast_kernels(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case((int)i, &cases[i], threads, false);
}

static void test_portable_kernels(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case((int)i, &cases[i], threads, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_kernels),
        cmocka_unit_test(test_portable_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
