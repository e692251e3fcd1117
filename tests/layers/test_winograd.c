/* test_winograd.c — the CPU backend's Winograd F(2x2, 5x5) convolution
 * (cpu/cpu_winograd.c) against its im2col path on the same layer and the
 * same random data: forward, input, weight and bias gradients, odd sizes,
 * 'same' and 'valid' padding, batch tails (chunks of ~98 tiles, thread
 * splits), accumulation, bit-for-bit reproducibility; then the layer
 * through finite differences where the backend picks Winograd itself.
 *
 * Tolerance: F(2, 5) rounds in its transforms, so it agrees with im2col
 * to about 1e-6 of the largest magnitude of the im2col result (measured
 * 2e-7 .. 5e-6 on these cases); 2e-5 leaves room and still catches any
 * wrong coefficient or tile. */
#include "layer_harness.h"

#include "cpu/cpu_conv.h"
#include "cpu/cpu.h"

#define WINO_TOL 2e-5

typedef struct conv_case {
    int c, k, h, w;
    bool same;
    int batch, threads;
    spec_activation act;
} conv_case;

static conv2d_desc case_desc(const conv_case *cc)
{
    int pad = cc->same ? 2 : 0;
    return (conv2d_desc){.max_batch = cc->batch, .c = cc->c, .h = cc->h, .w = cc->w,
                         .k = cc->k, .kh = 5, .kw = 5, .stride_h = 1, .stride_w = 1,
                         .pad_top = pad, .pad_left = pad, .pad_bottom = pad, .pad_right = pad,
                         .dil_h = 1, .dil_w = 1, .oh = cc->h + 2 * pad - 4,
                         .ow = cc->w + 2 * pad - 4};
}

/* One algorithm's results on the shared inputs. */
typedef struct conv_run {
    float *y, *dx, *dw, *db, *dx_acc;
} conv_run;

typedef struct conv_data {
    long xn, yn, wn;
    float *x, *w, *bias, *dz;
} conv_data;

static conv_run run_algo(backend *be, const conv_case *cc, const conv_data *cd,
                         cpu_conv_algo algo)
{
    conv2d_desc d = case_desc(cc);
    long ws = cpu_conv2d_prepare_algo(be, &d, algo);
    assert_true(ws >= 0);
    assert_int_equal(cpu_conv2d_algo(&d), algo);
    float *work = be->alloc(be, ws > 0 ? ws : 1);
    assert_non_null(work);
    conv_run r = {harness_fresh(cd->yn), harness_fresh(cd->xn), harness_fresh(cd->wn), harness_fresh(cc->k), harness_fresh(cd->xn)};
    be->conv2d_forward(be, &d, cc->batch, cd->x, cd->w, cd->bias, cc->act, r.y, work);
    be->conv2d_backward(be, &d, cc->batch, cd->x, cd->w, cd->dz, r.dx, false, r.dw, r.db,
                        work);
    for (long i = 0; i < cd->xn; i++)
        r.dx_acc[i] = 0.25f;
    float *dw2 = harness_fresh(cd->wn);
    be->conv2d_backward(be, &d, cc->batch, cd->x, cd->w, cd->dz, r.dx_acc, true, dw2, NULL,
                        work);
    /* Without an input gradient the weight gradient is the same. */
    float *dw3 = harness_fresh(cd->wn);
    be->conv2d_backward(be, &d, cc->batch, cd->x, cd->w, cd->dz, NULL, false, dw3, NULL, work);
    assert_memory_equal(dw2, r.dw, (size_t)cd->wn * sizeof *dw2);
    assert_memory_equal(dw3, r.dw, (size_t)cd->wn * sizeof *dw3);
    free(dw2);
    free(dw3);
    be->conv2d_release(be, &d);
    be->free(be, work);
    return r;
}

static void run_free(conv_run *r)
{
    HARNESS_FREE(r->y, r->dx, r->dw, r->db, r->dx_acc);
}

static void expect_close(const float *a, const float *ref, long n, const char *what,
                         const conv_case *cc)
{
    double e = harness_rel_err(a, ref, n);
    print_message("%-2s c %2d k %2d %2dx%-2d %-5s batch %2d threads %d: relative error %.2g\n",
                  what, cc->c, cc->k, cc->h, cc->w, cc->same ? "same" : "valid", cc->batch,
                  cc->threads, e);
    if (!(e <= WINO_TOL))
        fail_msg("%s: winograd vs im2col relative error %.3g > %g (c %d k %d %dx%d %s batch "
                 "%d threads %d)", what, e, WINO_TOL, cc->c, cc->k, cc->h, cc->w,
                 cc->same ? "same" : "valid", cc->batch, cc->threads);
}

static void compare_case(const conv_case *cc)
{
    char err[256];
    backend *be = backend_cpu_create(cc->threads, err, sizeof err);
    assert_non_null(be);
    conv2d_desc d = case_desc(cc);
    conv_data cd = {.xn = (long)cc->batch * cc->c * cc->h * cc->w,
                    .yn = (long)cc->batch * cc->k * d.oh * d.ow,
                    .wn = (long)cc->k * cc->c * 25};
    cd.x = harness_fresh(cd.xn);
    cd.w = harness_fresh(cd.wn);
    cd.bias = harness_fresh(cc->k);
    cd.dz = harness_fresh(cd.yn);
    rng g = rng_make(7, (uint64_t)(cc->c * 131 + cc->h * 17 + cc->w + cc->batch));
    harness_fill(cd.x, cd.xn, &g, -1.0f, 1.0f);
    harness_fill(cd.w, cd.wn, &g, -0.1f, 0.1f);
    harness_fill(cd.bias, cc->k, &g, -0.5f, 0.5f);
    harness_fill(cd.dz, cd.yn, &g, -1.0f, 1.0f);

    conv_run ref = run_algo(be, cc, &cd, CPU_CONV_IM2COL);
    conv_run win = run_algo(be, cc, &cd, CPU_CONV_WINOGRAD);
    expect_close(win.y, ref.y, cd.yn, "y", cc);
    expect_close(win.dx, ref.dx, cd.xn, "dx", cc);
    expect_close(win.dw, ref.dw, cd.wn, "dw", cc);
    expect_close(win.db, ref.db, cc->k, "db", cc);
    for (long i = 0; i < cd.xn; i++)
        if (fabsf(win.dx_acc[i] - (win.dx[i] + 0.25f)) > 1e-6f * (1.0f + fabsf(win.dx[i])))
            fail_msg("accumulate dx[%ld] = %g, want %g + 0.25", i, (double)win.dx_acc[i],
                     (double)win.dx[i]);

    /* Same inputs, same thread count: the same bits. */
    conv_run again = run_algo(be, cc, &cd, CPU_CONV_WINOGRAD);
    assert_memory_equal(again.y, win.y, (size_t)cd.yn * sizeof(float));
    assert_memory_equal(again.dx, win.dx, (size_t)cd.xn * sizeof(float));
    assert_memory_equal(again.dw, win.dw, (size_t)cd.wn * sizeof(float));

    run_free(&ref);
    run_free(&win);
    run_free(&again);
    free(cd.x);
    free(cd.w);
    free(cd.bias);
    free(cd.dz);
    be->destroy(be);
}

static void test_against_im2col(void **state)
{
    (void)state;
    const conv_case cases[] = {
        /* convnet's conv2, with a batch tail in a thread's chunks of 2 */
        {32, 64, 14, 14, true, 19, 2, ACT_RELU},
        {32, 64, 14, 14, true, 8, 1, ACT_NONE},
        /* odd planes, 'same' and 'valid', few channels (forced) */
        {16, 16, 9, 7, true, 5, 2, ACT_NONE},
        {3, 5, 11, 10, false, 3, 1, ACT_TANH},
        {4, 6, 13, 9, false, 4, 2, ACT_NONE},
        {2, 3, 3, 5, true, 2, 1, ACT_NONE},
        {2, 2, 5, 5, false, 1, 2, ACT_NONE},
        {17, 18, 1, 6, true, 3, 2, ACT_RELU},
        /* a thread without samples */
        {8, 8, 6, 6, true, 1, 2, ACT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        compare_case(&cases[i]);
}

static void test_choice(void **state)
{
    (void)state;
    conv_case conv2 = {32, 64, 14, 14, true, 64, 2, ACT_RELU};
    conv_case conv1 = {1, 32, 28, 28, true, 64, 2, ACT_RELU};
    conv2d_desc d2 = case_desc(&conv2), d1 = case_desc(&conv1);
    assert_int_equal(cpu_conv_choose(&d2), CPU_CONV_WINOGRAD);
    assert_int_not_equal(cpu_conv_choose(&d1), CPU_CONV_WINOGRAD);
    d2.kh = d2.kw = 3;
    assert_int_not_equal(cpu_conv_choose(&d2), CPU_CONV_WINOGRAD);
    d2.kh = d2.kw = 5;
    d2.stride_h = d2.stride_w = 2;
    assert_int_not_equal(cpu_conv_choose(&d2), CPU_CONV_WINOGRAD);
}

/* The layer end to end where the backend picks Winograd on its own. The
 * step is 1e-2, not test_gradients' 1e-3: the transforms' rounding (~1e-6
 * of outputs near 10 here) is not smooth in the inputs, and over the ~600
 * outputs one input reaches it swamps a difference quotient of step 1e-3.
 * Smooth activations only (a 1e-2 step would straddle relu's kink). */
static void gradcheck(const char *input, const char *conv, int batch, int threads)
{
    harness *h = harness_make(input, conv, 0, batch, threads);
    assert_int_equal(cpu_conv2d_algo(&h->l.desc.conv), CPU_CONV_WINOGRAD);
    harness_gradcheck(h, 1e-2f, 5e-3, 1e-2);
    harness_free(h);
}

static void test_gradients(void **state)
{
    (void)state;
    for (int t = 1; t <= 2; t++) {
        gradcheck("[16, 7, 5]", "{\"type\": \"conv2d\", \"filters\": 16, \"kernel\": 5, "
                  "\"padding\": \"same\", \"activation\": \"none\"}", 3, t);
        gradcheck("[16, 8, 9]", "{\"type\": \"conv2d\", \"filters\": 16, \"kernel\": 5, "
                  "\"padding\": \"valid\", \"activation\": \"tanh\"}", 2, t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_im2col),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
