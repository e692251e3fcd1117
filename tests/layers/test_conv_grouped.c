/* test_conv_grouped.c — grouped and depthwise convolution on the CPU
 * backend (cpu/cpu_conv_grouped.c): a conv with G groups must equal G
 * ordinary convolutions (run by the im2col path) over its channel slices,
 * forward, input, weight and bias gradients, with one and two threads,
 * stride, dilation, 'same' and 'valid' padding and accumulation; the
 * backend picks the grouped loop itself, and a spec whose groups do not
 * divide the channels is refused. The layer's finite-difference check is
 * in test_gradients.c. */
#include "layer_harness.h"

#include "cpu/cpu_conv.h"
#include "cpu/cpu.h"

#define TOL 1e-5

typedef struct grouped_case {
    int c, k, groups, h, w, kern, stride, dil, pad, batch, threads;
    spec_activation act;
} grouped_case;

static conv2d_desc case_desc(const grouped_case *gc, int c, int k, int groups)
{
    return harness_conv_desc((harness_conv){.batch = gc->batch, .c = c, .h = gc->h, .w = gc->w,
                                            .k = k, .kern = gc->kern, .stride = gc->stride,
                                            .pad = gc->pad, .dil = gc->dil, .groups = groups});
}

static void expect_close(const float *a, const float *ref, long n, const char *what,
                         const grouped_case *gc)
{
    double e = harness_rel_err(a, ref, n);
    if (!(e <= TOL))
        fail_msg("%s: grouped vs per-group im2col relative error %.3g (c %d k %d groups %d "
                 "%dx%d kernel %d stride %d dilation %d pad %d batch %d threads %d)",
                 what, e, gc->c, gc->k, gc->groups, gc->h, gc->w, gc->kern, gc->stride,
                 gc->dil, gc->pad, gc->batch, gc->threads);
}

/* Copy channels [first, first + n) of every sample of a (batch, c, plane)
 * tensor to or from a (batch, n, plane) one. */
static void slice(float *dst, const float *src, int batch, int c, int first, int n,
                  long plane, bool from_full)
{
    for (int b = 0; b < batch; b++) {
        const float *s = from_full ? src + ((long)b * c + first) * plane
                                   : src + (long)b * n * plane;
        float *t = from_full ? dst + (long)b * n * plane : dst + ((long)b * c + first) * plane;
        memcpy(t, s, (size_t)(n * plane) * sizeof *t);
    }
}

typedef struct conv_out {
    float *y, *dx, *dw, *db;
} conv_out;

static void run(backend *be, conv2d_desc *d, cpu_conv_algo algo, int batch, const float *x,
                const float *w, const float *bias, const float *dz, spec_activation act,
                const conv_out *o, bool accumulate)
{
    long ws = cpu_conv2d_prepare_algo(be, d, algo);
    assert_true(ws >= 0);
    float *work = be->alloc(be, ws > 0 ? ws : 1);
    assert_non_null(work);
    be->conv2d_forward(be, d, batch, x, w, bias, act, o->y, work);
    be->conv2d_backward(be, d, batch, x, w, dz, o->dx, accumulate, o->dw, o->db, work);
    be->conv2d_release(be, d);
    be->free(be, work);
}

static void compare_case(const grouped_case *gc)
{
    char err[256];
    backend *be = backend_cpu_create(gc->threads, err, sizeof err);
    assert_non_null(be);
    int G = gc->groups, cg = gc->c / G, kg = gc->k / G, kk = gc->kern * gc->kern;
    conv2d_desc d = case_desc(gc, gc->c, gc->k, G);
    cpu_conv_algo chosen = cpu_conv_choose(&d);
    assert_true(G > 1 ? chosen == CPU_CONV_GROUPED
                      : chosen == CPU_CONV_IM2COL || chosen == CPU_CONV_FOLDED);
    long plane = (long)gc->h * gc->w, oplane = (long)d.oh * d.ow;
    long xn = gc->batch * gc->c * plane, yn = gc->batch * gc->k * oplane;
    long wn = (long)gc->k * cg * kk;
    float *x = harness_fresh(xn), *w = harness_fresh(wn), *bias = harness_fresh(gc->k), *dz = harness_fresh(yn);
    rng g = rng_make(11, (uint64_t)(gc->c * 97 + gc->k * 13 + G));
    harness_fill(x, xn, &g, -1.0f, 1.0f);
    harness_fill(w, wn, &g, -0.5f, 0.5f);
    harness_fill(bias, gc->k, &g, -0.2f, 0.2f);
    harness_fill(dz, yn, &g, -1.0f, 1.0f);
    conv_out got = {harness_fresh(yn), harness_fresh(xn), harness_fresh(wn), harness_fresh(gc->k)};
    /* Accumulation: dx starts at 0.5 and keeps it. */
    for (long i = 0; i < xn; i++)
        got.dx[i] = 0.5f;
    run(be, &d, CPU_CONV_GROUPED, gc->batch, x, w, bias, dz, gc->act, &got, true);
    assert_int_equal(d.groups, G);

    conv_out want = {harness_fresh(yn), harness_fresh(xn), harness_fresh(wn), harness_fresh(gc->k)};
    float *xg = harness_fresh(gc->batch * cg * plane), *dzg = harness_fresh(gc->batch * kg * oplane);
    conv_out part = {harness_fresh(gc->batch * kg * oplane), harness_fresh(gc->batch * cg * plane), NULL,
                     NULL};
    for (int grp = 0; grp < G; grp++) {
        conv2d_desc dg = case_desc(gc, cg, kg, 1);
        slice(xg, x, gc->batch, gc->c, grp * cg, cg, plane, true);
        slice(dzg, dz, gc->batch, gc->k, grp * kg, kg, oplane, true);
        part.dw = want.dw + (long)grp * kg * cg * kk;
        part.db = want.db + grp * kg;
        run(be, &dg, CPU_CONV_IM2COL, gc->batch, xg, w + (long)grp * kg * cg * kk,
            bias + grp * kg, dzg, gc->act, &part, false);
        slice(want.y, part.y, gc->batch, gc->k, grp * kg, kg, oplane, false);
        slice(want.dx, part.dx, gc->batch, gc->c, grp * cg, cg, plane, false);
    }
    for (long i = 0; i < xn; i++)
        want.dx[i] += 0.5f;
    expect_close(got.y, want.y, yn, "y", gc);
    expect_close(got.dx, want.dx, xn, "dx", gc);
    expect_close(got.dw, want.dw, wn, "dw", gc);
    expect_close(got.db, want.db, gc->k, "db", gc);
    conv_out *all[] = {&got, &want};
    for (int i = 0; i < 2; i++) {
        free(all[i]->y);
        free(all[i]->dx);
        free(all[i]->dw);
        free(all[i]->db);
    }
    free(part.y);
    free(part.dx);
    free(xg);
    free(dzg);
    free(x);
    free(w);
    free(bias);
    free(dz);
    be->destroy(be);
}

static void test_grouped_vs_per_group(void **state)
{
    (void)state;
    static const grouped_case cases[] = {
        /* depthwise 3x3 'same', MobileNet's stride 1 and 2 */
        {8, 8, 8, 9, 9, 3, 1, 1, 1, 5, 1, ACT_RELU},
        {8, 8, 8, 9, 8, 3, 2, 1, 1, 5, 2, ACT_NONE},
        /* channel multiplier 2, dilation, no padding */
        {4, 8, 4, 9, 10, 3, 1, 2, 0, 3, 2, ACT_TANH},
        /* two groups of 3 channels, 3 filters each, even kernel */
        {6, 6, 2, 7, 7, 2, 1, 1, 0, 4, 1, ACT_NONE},
        /* one group: the loop is an ordinary convolution too */
        {3, 5, 1, 6, 6, 3, 2, 1, 1, 3, 2, ACT_SIGMOID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        compare_case(&cases[i]);
}

static void test_groups_must_divide(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"model\": {\"input\": [6, 8, 8], \"layers\": [{\"type\": \"conv2d\", \"filters\": 6,"
        " \"kernel\": 3, \"groups\": 4}, {\"type\": \"flatten\"}]},"
        " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2}}",
        "{\"model\": {\"input\": [6, 8, 8], \"layers\": [{\"type\": \"conv2d\", \"filters\": 4,"
        " \"kernel\": 3, \"groups\": 3}, {\"type\": \"flatten\"}]},"
        " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        spec_error e;
        job_spec *s = spec_parse(bad[i], strlen(bad[i]), &e);
        assert_null(s);
        assert_non_null(strstr(e.message, "must divide"));
    }
    /* Depthwise: one kernel per channel, so 8 * 9 weights + 8 biases. */
    job_spec *s = harness_spec("[8, 6, 6]", "{\"type\": \"conv2d\", \"filters\": 8, "
                                            "\"kernel\": 3, \"groups\": 8}", NULL);
    assert_int_equal(s->layers[0].n_params, 8 * 9 + 8);
    spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grouped_vs_per_group),
        cmocka_unit_test(test_groups_must_divide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
