/* test_conv_dnnl.c — the CPU backend's oneDNN convolution
 * (cpu/cpu_conv_dnnl.c) must equal the per-sample im2col path within
 * 1e-5 relative, forward, input, weight and bias gradients: stride 1 and
 * 2, padding, asymmetric padding, dilation, 1x1 kernels, odd sizes and
 * channel counts, three input channels (a first layer), no bias, no dx,
 * every activation, accumulation into dx, batches not divisible by the
 * thread count or smaller than it, and one prepared layer run at more
 * batch sizes than it keeps primitives for; it must give the same bits
 * twice; blocked and plain formats alike. The backend must pick it by
 * cpu_conv_dnnl_suits's rule; in a build without oneDNN it must refuse
 * it. */
#include "layer_harness.h"

#include "cpu/cpu_conv.h"
#ifdef PUNCH_HAVE_DNNL
#include "cpu/cpu_conv_dnnl.h"
#include "cpu/cpu.h"
#endif

#define TOL 1e-5

typedef struct dnnl_case {
    int c, k, h, w, kern, stride, pad, dil, max_batch, threads;
    bool accumulate, no_bias, no_dx, pad_extra; /* pad_extra: one more bottom/right */
    spec_activation act;
} dnnl_case;

typedef struct conv_out {
    float *y, *dx, *dw, *db;
} conv_out;

static conv2d_desc case_desc(const dnnl_case *dc)
{
    return harness_conv_desc((harness_conv){.batch = dc->max_batch, .c = dc->c, .h = dc->h,
                                            .w = dc->w, .k = dc->k, .kern = dc->kern,
                                            .stride = dc->stride, .pad = dc->pad,
                                            .extra = dc->pad_extra ? 1 : 0, .dil = dc->dil});
}

#ifdef PUNCH_HAVE_DNNL
static void expect_close(const float *a, const float *ref, long n, const char *what,
                         const dnnl_case *dc, int batch)
{
    double e = harness_rel_err(a, ref, n);
    if (!(e <= TOL))
        fail_msg("%s: oneDNN vs im2col relative error %.3g (c %d k %d %dx%d kernel %d "
                 "stride %d pad %d dil %d batch %d of %d threads %d)",
                 what, e, dc->c, dc->k, dc->h, dc->w, dc->kern, dc->stride, dc->pad, dc->dil,
                 batch, dc->max_batch, dc->threads);
}

static void expect_same_bits(const float *a, const float *b, long n, const char *what)
{
    if (memcmp(a, b, (size_t)n * sizeof *a) != 0)
        fail_msg("%s: two oneDNN runs differ", what);
}

typedef struct case_data {
    long xn, yn, wn;
    float *x, *w, *bias, *dz;
} case_data;

static case_data data_make(const dnnl_case *dc, const conv2d_desc *d)
{
    case_data cd;
    cd.xn = (long)dc->max_batch * dc->c * dc->h * dc->w;
    cd.yn = (long)dc->max_batch * dc->k * d->oh * d->ow;
    cd.wn = (long)dc->k * dc->c * dc->kern * dc->kern;
    cd.x = harness_fresh(cd.xn);
    cd.w = harness_fresh(cd.wn);
    cd.bias = harness_fresh(dc->k);
    cd.dz = harness_fresh(cd.yn);
    rng g = rng_make(29, (uint64_t)(dc->c * 101 + dc->k * 7 + dc->h));
    harness_fill(cd.x, cd.xn, &g, -1.0f, 1.0f);
    harness_fill(cd.w, cd.wn, &g, -0.5f, 0.5f);
    harness_fill(cd.bias, dc->k, &g, -0.2f, 0.2f);
    harness_fill(cd.dz, cd.yn, &g, -1.0f, 1.0f);
    return cd;
}

static void data_free(case_data *cd)
{
    free(cd->x);
    free(cd->w);
    free(cd->bias);
    free(cd->dz);
}

/* Forward and backward of `batch` samples on a prepared d. */
static conv_out run_batch(backend *be, const conv2d_desc *d, const dnnl_case *dc,
                          const case_data *cd, int batch, float *work)
{
    long xn = (long)batch * dc->c * dc->h * dc->w, yn = (long)batch * dc->k * d->oh * d->ow;
    conv_out o = {harness_fresh(yn), harness_fresh(xn), harness_fresh(cd->wn), harness_fresh(dc->k)};
    /* Accumulation: dx starts at 0.5 and keeps it. */
    for (long i = 0; i < xn; i++)
        o.dx[i] = dc->accumulate ? 0.5f : 0.0f;
    const float *bias = dc->no_bias ? NULL : cd->bias;
    be->conv2d_forward(be, d, batch, cd->x, cd->w, bias, dc->act, o.y, work);
    be->conv2d_backward(be, d, batch, cd->x, cd->w, cd->dz, dc->no_dx ? NULL : o.dx,
                        dc->accumulate, o.dw, dc->no_bias ? NULL : o.db, work);
    return o;
}

static void out_free(conv_out *o)
{
    free(o->y);
    free(o->dx);
    free(o->dw);
    free(o->db);
}

/* The layer prepared with algo, run at each of the batches in turn. */
static void run_algo(backend *be, const dnnl_case *dc, cpu_conv_algo algo, const case_data *cd,
                     const int *batches, int nb, conv_out *outs)
{
    conv2d_desc d = case_desc(dc);
    long ws = cpu_conv2d_prepare_algo(be, &d, algo);
    assert_true(ws >= 0);
    assert_int_equal(cpu_conv2d_algo(&d), algo);
    float *work = be->alloc(be, ws > 0 ? ws : 1);
    assert_non_null(work);
    for (int i = 0; i < nb; i++)
        outs[i] = run_batch(be, &d, dc, cd, batches[i], work);
    be->conv2d_release(be, &d);
    be->free(be, work);
}

static void compare_batches(const dnnl_case *dc, bool plain, const int *batches, int nb)
{
    char err[256];
    cpu_conv_dnnl_force_plain(plain);
    backend *be = backend_cpu_create(dc->threads, err, sizeof err);
    assert_non_null(be);
    conv2d_desc d = case_desc(dc);
    case_data cd = data_make(dc, &d);
    conv_out got[8], again[8], want[8];
    assert_true(nb <= 8);
    run_algo(be, dc, CPU_CONV_DNNL, &cd, batches, nb, got);
    run_algo(be, dc, CPU_CONV_DNNL, &cd, batches, nb, again);
    run_algo(be, dc, CPU_CONV_IM2COL, &cd, batches, nb, want);
    for (int i = 0; i < nb; i++) {
        int b = batches[i];
        long xn = (long)b * dc->c * dc->h * dc->w, yn = (long)b * dc->k * d.oh * d.ow;
        expect_close(got[i].y, want[i].y, yn, "y", dc, b);
        expect_close(got[i].dx, want[i].dx, xn, "dx", dc, b);
        expect_close(got[i].dw, want[i].dw, cd.wn, "dw", dc, b);
        expect_close(got[i].db, want[i].db, dc->k, "db", dc, b);
        expect_same_bits(got[i].y, again[i].y, yn, "y");
        expect_same_bits(got[i].dx, again[i].dx, xn, "dx");
        expect_same_bits(got[i].dw, again[i].dw, cd.wn, "dw");
        expect_same_bits(got[i].db, again[i].db, dc->k, "db");
        out_free(&got[i]);
        out_free(&again[i]);
        out_free(&want[i]);
    }
    data_free(&cd);
    be->destroy(be);
    cpu_conv_dnnl_force_plain(false);
}

static const dnnl_case cases[] = {
    /* resnet20's 3x3 'same' layers, batch split evenly */
    {16, 16, 8, 8, 3, 1, 1, 1, 8, 2, false, false, false, false, ACT_NONE},
    {32, 32, 6, 6, 3, 1, 1, 1, 6, 2, true, false, false, false, ACT_RELU},
    /* stride 2 down, odd plane, odd batch on two threads, accumulating */
    {16, 32, 9, 9, 3, 2, 1, 1, 7, 2, true, false, false, false, ACT_NONE},
    /* a 1x1 stride-2 shortcut */
    {16, 32, 8, 8, 1, 2, 0, 1, 5, 2, true, true, false, false, ACT_NONE},
    /* a first layer: three channels, no dx, three threads */
    {3, 16, 10, 10, 3, 1, 1, 1, 5, 3, false, false, true, false, ACT_RELU},
    /* three channels again, accumulating into dx */
    {3, 16, 10, 10, 3, 1, 1, 1, 5, 2, true, false, false, false, ACT_NONE},
    /* odd channel counts, even kernel, one more padding bottom/right */
    {5, 7, 7, 6, 2, 1, 0, 1, 4, 2, false, true, false, true, ACT_TANH},
    /* dilation 2, sigmoid, one thread */
    {8, 12, 9, 9, 3, 1, 2, 2, 3, 1, true, false, false, false, ACT_SIGMOID},
    /* fewer samples than threads */
    {16, 16, 4, 4, 3, 1, 1, 1, 1, 2, false, false, false, false, ACT_NONE},
};

static void test_dnnl_vs_im2col(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int b = cases[i].max_batch;
        compare_batches(&cases[i], false, &b, 1);
    }
}

static void test_dnnl_plain_vs_im2col(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int b = cases[i].max_batch;
        compare_batches(&cases[i], true, &b, 1);
    }
}

static void test_dnnl_batch_sizes(void **state)
{
    (void)state;
    /* Chunks of 6, 5, 4, 3, 2 and 1 on two threads: more sizes than the
     * layer keeps primitives for, then the first again. */
    dnnl_case dc = {16, 24, 6, 6, 3, 1, 1, 1, 12, 2, true, false, false, false, ACT_NONE};
    const int batches[] = {12, 11, 9, 6, 4, 2, 1, 12};
    compare_batches(&dc, false, batches, 8);
}
#endif

static cpu_conv_algo choice(int c, int k, int hw, int kern, int stride)
{
    dnnl_case dc = {c, k, hw, hw, kern, stride, kern / 2, 1, 64, 2, false, false, false, false,
                    ACT_NONE};
    conv2d_desc d = case_desc(&dc);
    return cpu_conv_choose(&d);
}

static void test_dnnl_choice(void **state)
{
    (void)state;
    char err[256];
    backend *be = backend_cpu_create(2, err, sizeof err);
    assert_non_null(be);
    dnnl_case dc = {16, 16, 8, 8, 3, 1, 1, 1, 8, 2, false, false, false, false, ACT_NONE};
    conv2d_desc d = case_desc(&dc);
    long ws = cpu_conv2d_prepare_algo(be, &d, CPU_CONV_DNNL);
#ifdef PUNCH_HAVE_DNNL
    assert_true(ws >= 0);
    /* resnet20's 3x3 layers and vgg11's down to 4x4 */
    assert_int_equal(choice(16, 16, 32, 3, 1), CPU_CONV_DNNL);
    assert_int_equal(choice(16, 32, 32, 3, 2), CPU_CONV_DNNL);
    assert_int_equal(choice(64, 64, 8, 3, 1), CPU_CONV_DNNL);
    assert_int_equal(choice(512, 512, 4, 3, 1), CPU_CONV_DNNL);
    /* not: first layers, 1x1 shortcuts, 2x2 planes, 5x5 (Winograd) */
    assert_int_not_equal(choice(3, 16, 32, 3, 1), CPU_CONV_DNNL);
    assert_int_not_equal(choice(3, 64, 32, 3, 1), CPU_CONV_DNNL);
    assert_int_not_equal(choice(16, 32, 32, 1, 2), CPU_CONV_DNNL);
    assert_int_equal(choice(512, 512, 2, 3, 1), CPU_CONV_FOLDED);
    assert_int_equal(choice(32, 64, 14, 5, 1), CPU_CONV_WINOGRAD);
    cpu_conv_dnnl_disable(true);
    assert_int_equal(choice(16, 16, 32, 3, 1), CPU_CONV_IM2COL);
    cpu_conv_dnnl_disable(false);
#else
    assert_true(ws < 0);
    assert_int_equal(choice(16, 16, 32, 3, 1), CPU_CONV_IM2COL);
#endif
    be->conv2d_release(be, &d);
    be->destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef PUNCH_HAVE_DNNL
        cmocka_unit_test(test_dnnl_vs_im2col),
        cmocka_unit_test(test_dnnl_plain_vs_im2col),
        cmocka_unit_test(test_dnnl_batch_sizes),
#endif
        cmocka_unit_test(test_dnnl_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
