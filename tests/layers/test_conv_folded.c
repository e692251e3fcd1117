/* test_conv_folded.c — the CPU backend's folded im2col path
 * (cpu/cpu_conv_folded.c: samples side by side in one GEMM) must equal
 * the per-sample im2col path within 1e-5 relative, forward, input, weight
 * and bias gradients, on small output planes (4x4, 2x2, 1x1, 3x3) with
 * stride, padding, 1x1 kernels, accumulation, batches smaller than the
 * prepared one and not divisible by the thread count, and groups capped by
 * the workspace bound; it must give the same bits twice; and the backend
 * must pick it for small planes only (the smallest ones only where oneDNN's
 * primitives take the others). */
#include "layer_harness.h"

#include "cpu/cpu_conv.h"
#include "cpu/cpu_conv_folded.h"
#include "cpu/cpu.h"

#define TOL 1e-5

typedef struct folded_case {
    int c, k, h, w, kern, stride, pad, max_batch, batch, threads;
    bool accumulate;
    spec_activation act;
} folded_case;

typedef struct conv_out {
    float *y, *dx, *dw, *db;
} conv_out;

static conv2d_desc case_desc(const folded_case *fc)
{
    return harness_conv_desc((harness_conv){.batch = fc->max_batch, .c = fc->c, .h = fc->h,
                                            .w = fc->w, .k = fc->k, .kern = fc->kern,
                                            .stride = fc->stride, .pad = fc->pad});
}

static void expect_close(const float *a, const float *ref, long n, const char *what,
                         const folded_case *fc)
{
    double e = harness_rel_err(a, ref, n);
    if (!(e <= TOL))
        fail_msg("%s: folded vs per-sample relative error %.3g (c %d k %d %dx%d kernel %d "
                 "stride %d pad %d batch %d of %d threads %d)",
                 what, e, fc->c, fc->k, fc->h, fc->w, fc->kern, fc->stride, fc->pad,
                 fc->batch, fc->max_batch, fc->threads);
}

static conv_out out_alloc(long yn, long xn, long wn, int k)
{
    return (conv_out){harness_fresh(yn), harness_fresh(xn), harness_fresh(wn), harness_fresh(k)};
}

static void out_free(conv_out *o)
{
    free(o->y);
    free(o->dx);
    free(o->dw);
    free(o->db);
}

static void run(backend *be, const folded_case *fc, cpu_conv_algo algo, const float *x,
                const float *w, const float *bias, const float *dz, const conv_out *o)
{
    conv2d_desc d = case_desc(fc);
    long ws = cpu_conv2d_prepare_algo(be, &d, algo);
    assert_true(ws >= 0);
    assert_int_equal(cpu_conv2d_algo(&d), algo);
    float *work = be->alloc(be, ws > 0 ? ws : 1);
    assert_non_null(work);
    long xn = (long)fc->batch * fc->c * fc->h * fc->w;
    /* Accumulation: dx starts at 0.5 and keeps it. */
    for (long i = 0; i < xn; i++)
        o->dx[i] = fc->accumulate ? 0.5f : 0.0f;
    be->conv2d_forward(be, &d, fc->batch, x, w, bias, fc->act, o->y, work);
    be->conv2d_backward(be, &d, fc->batch, x, w, dz, o->dx, fc->accumulate, o->dw, o->db,
                        work);
    be->conv2d_release(be, &d);
    be->free(be, work);
}

static void expect_same_bits(const float *a, const float *b, long n, const char *what)
{
    if (memcmp(a, b, (size_t)n * sizeof *a) != 0)
        fail_msg("%s: two folded runs differ", what);
}

static void compare_case(const folded_case *fc)
{
    char err[256];
    backend *be = backend_cpu_create(fc->threads, err, sizeof err);
    assert_non_null(be);
    conv2d_desc d = case_desc(fc);
    long xn = (long)fc->batch * fc->c * fc->h * fc->w;
    long yn = (long)fc->batch * fc->k * d.oh * d.ow;
    long wn = (long)fc->k * fc->c * fc->kern * fc->kern;
    float *x = harness_fresh(xn), *w = harness_fresh(wn), *bias = harness_fresh(fc->k), *dz = harness_fresh(yn);
    rng g = rng_make(23, (uint64_t)(fc->c * 101 + fc->k * 7 + fc->h));
    harness_fill(x, xn, &g, -1.0f, 1.0f);
    harness_fill(w, wn, &g, -0.5f, 0.5f);
    harness_fill(bias, fc->k, &g, -0.2f, 0.2f);
    harness_fill(dz, yn, &g, -1.0f, 1.0f);
    conv_out got = out_alloc(yn, xn, wn, fc->k), again = out_alloc(yn, xn, wn, fc->k);
    conv_out want = out_alloc(yn, xn, wn, fc->k);
    run(be, fc, CPU_CONV_FOLDED, x, w, bias, dz, &got);
    run(be, fc, CPU_CONV_FOLDED, x, w, bias, dz, &again);
    run(be, fc, CPU_CONV_IM2COL, x, w, bias, dz, &want);
    expect_close(got.y, want.y, yn, "y", fc);
    expect_close(got.dx, want.dx, xn, "dx", fc);
    expect_close(got.dw, want.dw, wn, "dw", fc);
    expect_close(got.db, want.db, fc->k, "db", fc);
    expect_same_bits(got.y, again.y, yn, "y");
    expect_same_bits(got.dx, again.dx, xn, "dx");
    expect_same_bits(got.dw, again.dw, wn, "dw");
    expect_same_bits(got.db, again.db, fc->k, "db");
    out_free(&got);
    out_free(&again);
    out_free(&want);
    free(x);
    free(w);
    free(bias);
    free(dz);
    be->destroy(be);
}

static void test_folded_vs_per_sample(void **state)
{
    (void)state;
    static const folded_case cases[] = {
        /* VGG's 2x2 and 4x4 layers, 'same' 3x3 */
        {16, 24, 2, 2, 3, 1, 1, 8, 8, 2, false, ACT_RELU},
        {12, 20, 4, 4, 3, 1, 1, 7, 7, 2, true, ACT_NONE},
        /* stride 2 down to 4x4 and 2x2, odd batch on three threads */
        {8, 16, 8, 8, 3, 2, 1, 11, 11, 3, false, ACT_TANH},
        {6, 10, 5, 5, 3, 2, 0, 9, 5, 2, true, ACT_SIGMOID},
        /* 1x1 kernels (a ResNet shortcut), plane 4x4 and 1x1 */
        {10, 14, 4, 4, 1, 1, 0, 6, 6, 4, false, ACT_NONE},
        {8, 6, 1, 1, 1, 1, 0, 5, 5, 1, true, ACT_RELU},
        /* even kernel, 3x3 plane, a batch smaller than the prepared one */
        {5, 7, 4, 4, 2, 1, 0, 16, 3, 2, false, ACT_NONE},
        /* one thread, all samples in one GEMM */
        {9, 11, 4, 4, 3, 1, 1, 10, 10, 1, true, ACT_RELU},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        compare_case(&cases[i]);
}

static void test_folded_group_bounded(void **state)
{
    (void)state;
    /* VGG's 512-channel 2x2 layer at batch 64 on two threads: a thread's
     * 32 samples fold into one GEMM of 128 columns. */
    folded_case vgg = {512, 512, 2, 2, 3, 1, 1, 64, 64, 2, false, ACT_RELU};
    conv2d_desc d = case_desc(&vgg);
    assert_int_equal(cpu_conv_folded_group(&d, 2), 32);
    /* A huge batch is capped by the GEMM's width and the scratch bound. */
    d.max_batch = 100000;
    int g = cpu_conv_folded_group(&d, 1);
    assert_true(g >= 1 && g * d.oh * d.ow <= 1024);
    assert_true(cpu_conv_folded_scratch(&d, 1) <= (1L << 22));
    /* A capped group still computes the same thing: 1x1 planes, 1,500
     * columns' worth of samples on one thread. */
    folded_case wide = {3, 4, 1, 1, 1, 1, 0, 1500, 1500, 1, false, ACT_NONE};
    compare_case(&wide);
}

static void test_folded_chosen_for_small_planes(void **state)
{
    (void)state;
    folded_case small = {64, 64, 4, 4, 3, 1, 1, 64, 64, 2, false, ACT_RELU};
    folded_case big = {64, 64, 16, 16, 3, 1, 1, 64, 64, 2, false, ACT_RELU};
    folded_case one = {64, 64, 4, 4, 3, 1, 1, 1, 1, 2, false, ACT_RELU};
    conv2d_desc ds = case_desc(&small), db = case_desc(&big), d1 = case_desc(&one);
    /* The rule among the engine's own algorithms: oneDNN's primitives,
     * where the build has them, take 4x4 planes of 16 channels and up
     * (test_conv_dnnl.c). */
    cpu_conv_dnnl_disable(true);
    assert_int_equal(cpu_conv_choose(&ds), CPU_CONV_FOLDED);
    assert_int_equal(cpu_conv_choose(&db), CPU_CONV_IM2COL);
    assert_int_equal(cpu_conv_choose(&d1), CPU_CONV_IM2COL);
    cpu_conv_dnnl_disable(false);
    /* A 2x2 plane folds either way. */
    folded_case tiny = {512, 512, 2, 2, 3, 1, 1, 64, 64, 2, false, ACT_RELU};
    conv2d_desc dt = case_desc(&tiny);
    assert_int_equal(cpu_conv_choose(&dt), CPU_CONV_FOLDED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folded_vs_per_sample),
        cmocka_unit_test(test_folded_group_bounded),
        cmocka_unit_test(test_folded_chosen_for_small_planes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
