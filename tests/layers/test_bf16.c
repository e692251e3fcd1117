/* test_bf16.c — bf16 mixed precision on the CPU backend (backend.bf16,
 * training.precision): a convolution prepared in bf16 must run in
 * oneDNN's bf16 primitives, match the fp32 backend within bf16's
 * precision (1e-2 relative, max error over max value) forward, input,
 * weight and bias gradients, differ from it (so bf16 really ran), and
 * give the same bits run after run; a shape oneDNN has no bf16 kernel
 * for still runs, in fp32. The dense layer's three GEMMs (forward, dx,
 * dw) likewise, in oneDNN's bf16 matmul. Skipped (exit 77) on a CPU without
 * AVX512_BF16/AMX or a build without oneDNN. */
#include "layer_harness.h"

#include "cpu/cpu_conv.h"
#ifdef PUNCH_HAVE_DNNL
#include "cpu/cpu_conv_dnnl.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_matmul_bf16.h"
#endif

#define BF16_TOL 1e-2

typedef struct bf16_case {
    int c, k, h, w, kern, stride, pad, batch;
    spec_activation act;
} bf16_case;

/* A forward and backward's outputs, of a convolution or a dense layer. */
typedef struct bf16_run {
    float *y, *dx, *dw, *db;
    bool in_bf16;    /* convolution: ran in oneDNN's bf16 primitives */
    long bf16_gemms; /* dense: GEMMs the backend ran in oneDNN's bf16 matmul */
} bf16_run;

static conv2d_desc case_desc(const bf16_case *bc)
{
    return harness_conv_desc((harness_conv){.batch = bc->batch, .c = bc->c, .h = bc->h,
                                            .w = bc->w, .k = bc->k, .kern = bc->kern,
                                            .stride = bc->stride, .pad = bc->pad});
}

/* One forward and backward of the case on a fresh 2-thread backend,
 * prepared through the backend's own choice. */
static bf16_run run_case(const bf16_case *bc, bool bf16)
{
    char err[256];
    backend *be = backend_cpu_create(2, err, sizeof err);
    if (!be)
        fail_msg("%s", err);
    be->bf16 = bf16;
    conv2d_desc d = case_desc(bc);
    long ws = be->conv2d_prepare(be, &d);
    assert_true(ws >= 0);
    bf16_run r = {.in_bf16 = false};
#ifdef PUNCH_HAVE_DNNL
    r.in_bf16 = cpu_conv2d_algo(&d) == CPU_CONV_DNNL && cpu_conv_dnnl_is_bf16(d.impl);
#endif
    long xn = (long)bc->batch * bc->c * bc->h * bc->w;
    long yn = (long)bc->batch * bc->k * d.oh * d.ow;
    long wn = (long)bc->k * bc->c * bc->kern * bc->kern;
    float *x = harness_fresh(xn), *w = harness_fresh(wn);
    float *bias = harness_fresh(bc->k), *dz = harness_fresh(yn);
    rng g = rng_make(7, (uint64_t)(bc->c * 31 + bc->k));
    harness_fill(x, xn, &g, -1.0f, 1.0f);
    harness_fill(w, wn, &g, -0.3f, 0.3f);
    harness_fill(bias, bc->k, &g, -0.2f, 0.2f);
    harness_fill(dz, yn, &g, -1.0f, 1.0f);
    float *work = be->alloc(be, ws > 0 ? ws : 1);
    assert_non_null(work);
    r.y = harness_fresh(yn);
    r.dx = harness_fresh(xn);
    r.dw = harness_fresh(wn);
    r.db = harness_fresh(bc->k);
    be->conv2d_forward(be, &d, bc->batch, x, w, bias, bc->act, r.y, work);
    be->conv2d_backward(be, &d, bc->batch, x, w, dz, r.dx, false, r.dw, r.db, work);
    be->conv2d_release(be, &d);
    be->free(be, work);
    be->destroy(be);
    HARNESS_FREE(x, w, bias, dz);
    return r;
}

static void run_free(bf16_run *r)
{
    HARNESS_FREE(r->y, r->dx, r->dw, r->db);
}

static void expect_close(const float *a, const float *ref, long n, const char *what,
                         const bf16_case *bc, bool differ)
{
    double e = harness_rel_err(a, ref, n);
    if (!(e <= BF16_TOL))
        fail_msg("%s: bf16 vs fp32 relative error %.3g > %.g (c %d k %d %dx%d kernel %d)", what,
                 e, BF16_TOL, bc->c, bc->k, bc->h, bc->w, bc->kern);
    /* Rounding the inputs to 8 bits of mantissa must show. */
    if (differ && !(e > 1e-5))
        fail_msg("%s: bf16 equals fp32 to %.3g: did bf16 run?", what, e);
}

static void check_case(const bf16_case *bc, bool want_bf16)
{
    bf16_run ref = run_case(bc, false), a = run_case(bc, true), b = run_case(bc, true);
    if (want_bf16 && !a.in_bf16)
        fail_msg("c %d k %d: the bf16 backend did not pick oneDNN's bf16 convolution", bc->c,
                 bc->k);
    conv2d_desc d = case_desc(bc);
    long xn = (long)bc->batch * bc->c * bc->h * bc->w;
    long yn = (long)bc->batch * bc->k * d.oh * d.ow;
    long wn = (long)bc->k * bc->c * bc->kern * bc->kern;
    expect_close(a.y, ref.y, yn, "y", bc, a.in_bf16);
    expect_close(a.dx, ref.dx, xn, "dx", bc, a.in_bf16);
    expect_close(a.dw, ref.dw, wn, "dw", bc, a.in_bf16);
    expect_close(a.db, ref.db, bc->k, "db", bc, false); /* sums of fp32 dz: exact-ish */
    if (memcmp(a.y, b.y, (size_t)yn * sizeof *a.y) || memcmp(a.dx, b.dx, (size_t)xn * 4) ||
        memcmp(a.dw, b.dw, (size_t)wn * 4) || memcmp(a.db, b.db, (size_t)bc->k * 4))
        fail_msg("c %d k %d: two bf16 runs differ", bc->c, bc->k);
    run_free(&ref);
    run_free(&a);
    run_free(&b);
}

/* resnet20's and vgg11's shapes in small: 3x3 same, strided, ReLU fused,
 * an odd batch for the per-thread chunks. */
static void test_bf16_conv(void **state)
{
    (void)state;
    static const bf16_case cases[] = {
        {16, 16, 8, 8, 3, 1, 1, 8, ACT_NONE},
        {16, 32, 8, 8, 3, 2, 1, 5, ACT_RELU},
        {32, 32, 4, 4, 3, 1, 1, 4, ACT_RELU},
        {16, 32, 8, 8, 1, 2, 0, 4, ACT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_case(&cases[i], true);
}

/* A first layer (3 channels): in bf16 if oneDNN has a kernel, else fp32;
 * either way within bf16's tolerance and reproducible. */
static void test_bf16_first_layer(void **state)
{
    (void)state;
    bf16_case bc = {3, 16, 8, 8, 3, 1, 1, 4, ACT_RELU};
    check_case(&bc, false);
}

/* ---- dense ----------------------------------------------------------- */

typedef struct dense_case {
    int batch, in, out;
    spec_activation act;
    bool accumulate; /* dx += */
} dense_case;

static bf16_run run_dense(const dense_case *dc, bool bf16)
{
    char err[256];
    backend *be = backend_cpu_create(2, err, sizeof err);
    if (!be)
        fail_msg("%s", err);
    be->bf16 = bf16;
    long xn = (long)dc->batch * dc->in, yn = (long)dc->batch * dc->out;
    long wn = (long)dc->in * dc->out;
    float *x = harness_fresh(xn), *w = harness_fresh(wn);
    float *bias = harness_fresh(dc->out), *dz = harness_fresh(yn);
    rng g = rng_make(11, (uint64_t)(dc->in * 31 + dc->out));
    harness_fill(x, xn, &g, -1.0f, 1.0f);
    harness_fill(w, wn, &g, -0.3f, 0.3f);
    harness_fill(bias, dc->out, &g, -0.2f, 0.2f);
    harness_fill(dz, yn, &g, -1.0f, 1.0f);
    bf16_run r = {harness_fresh(yn), harness_fresh(xn), harness_fresh(wn),
                  harness_fresh(dc->out), false, 0};
    if (dc->accumulate)
        harness_fill(r.dx, xn, &g, -1.0f, 1.0f);
    be->dense_forward(be, dc->batch, dc->in, dc->out, x, w, bias, dc->act, r.y);
    be->dense_backward(be, dc->batch, dc->in, dc->out, x, w, dz, r.dx, dc->accumulate, r.dw,
                       r.db);
#ifdef PUNCH_HAVE_DNNL
    r.bf16_gemms = cpu_mm_bf16_calls(((cpu_backend *)be->impl)->mm_bf16);
    if (r.bf16_gemms)
        print_message("dense %dx%dx%d: %s\n", dc->batch, dc->in, dc->out,
                      cpu_mm_bf16_impl(((cpu_backend *)be->impl)->mm_bf16));
#endif
    be->destroy(be);
    HARNESS_FREE(x, w, bias, dz);
    return r;
}

static void dense_expect(const float *a, const float *ref, long n, const char *what,
                         const dense_case *dc)
{
    double e = harness_rel_err(a, ref, n);
    if (!(e <= BF16_TOL) || !(e > 1e-5))
        fail_msg("dense %dx%dx%d %s: bf16 vs fp32 relative error %.3g (want in (1e-5, %.g])",
                 dc->batch, dc->in, dc->out, what, e, BF16_TOL);
}

/* A batch split over both threads (and an MLP's ReLU), and a small odd
 * shape run on the caller with dx accumulated. */
static void test_bf16_dense(void **state)
{
    (void)state;
    static const dense_case cases[] = {
        {64, 256, 128, ACT_RELU, false},
        {5, 40, 24, ACT_NONE, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const dense_case *dc = &cases[i];
        bf16_run ref = run_dense(dc, false), a = run_dense(dc, true), b = run_dense(dc, true);
        if (ref.bf16_gemms != 0 || a.bf16_gemms != 3)
            fail_msg("dense %dx%dx%d: %ld of 3 GEMMs in bf16 matmul (fp32 backend: %ld)",
                     dc->batch, dc->in, dc->out, a.bf16_gemms, ref.bf16_gemms);
        long xn = (long)dc->batch * dc->in, yn = (long)dc->batch * dc->out;
        long wn = (long)dc->in * dc->out;
        dense_expect(a.y, ref.y, yn, "y", dc);
        dense_expect(a.dx, ref.dx, xn, "dx", dc);
        dense_expect(a.dw, ref.dw, wn, "dw", dc);
        if (memcmp(a.y, b.y, (size_t)yn * 4) || memcmp(a.dx, b.dx, (size_t)xn * 4) ||
            memcmp(a.dw, b.dw, (size_t)wn * 4) || memcmp(a.db, b.db, (size_t)dc->out * 4))
            fail_msg("dense %dx%dx%d: two bf16 runs differ", dc->batch, dc->in, dc->out);
        run_free(&ref);
        run_free(&a);
        run_free(&b);
    }
}

#ifdef PUNCH_HAVE_DNNL
/* The dense pair keeps the forward's bf16 copy of w for the backward's dx
 * and rounds dz once: a forward and backward round x, w, dz and x^T (four
 * matrices; six when each GEMM rounds both operands, as the gemm op does),
 * with the bits the gemm op gives. A forward after w changed must round w
 * again, even with a copy of the old w held (a stale copy gives the old y). */
static void test_bf16_dense_reuses_rounding(void **state)
{
    (void)state;
    enum { B = 64, IN = 96, OUT = 80 };
    char err[256];
    backend *be = backend_cpu_create(2, err, sizeof err);
    if (!be)
        fail_msg("%s", err);
    be->bf16 = true;
    float *x = harness_fresh(B * IN), *w = harness_fresh(IN * OUT), *dz = harness_fresh(B * OUT);
    float *y = harness_fresh(B * OUT), *dx = harness_fresh(B * IN), *dw = harness_fresh(IN * OUT);
    float *y2 = harness_fresh(B * OUT), *dx2 = harness_fresh(B * IN);
    float *dw2 = harness_fresh(IN * OUT);
    rng g = rng_make(5, 1);
    harness_fill(x, B * IN, &g, -1.0f, 1.0f);
    harness_fill(w, IN * OUT, &g, -0.3f, 0.3f);
    harness_fill(dz, B * OUT, &g, -1.0f, 1.0f);
    be->gemm(be, false, false, B, OUT, IN, 1.0f, x, IN, w, OUT, 0.0f, y2, OUT);
    be->gemm(be, false, true, B, IN, OUT, 1.0f, dz, OUT, w, OUT, 0.0f, dx2, IN);
    be->gemm(be, true, false, IN, OUT, B, 1.0f, x, IN, dz, OUT, 0.0f, dw2, OUT);
    cpu_mm_bf16 *mm = ((cpu_backend *)be->impl)->mm_bf16;
    assert_non_null(mm);
    long before = cpu_mm_bf16_roundings(mm);
    assert_int_equal(before, 6);
    be->dense_forward(be, B, IN, OUT, x, w, NULL, ACT_NONE, y);
    be->dense_backward(be, B, IN, OUT, x, w, dz, dx, false, dw, NULL);
    if (cpu_mm_bf16_roundings(mm) - before != 4)
        fail_msg("dense forward and backward rounded %ld matrices to bf16, want 4",
                 cpu_mm_bf16_roundings(mm) - before);
    assert_memory_equal(y, y2, sizeof(float) * B * OUT);
    assert_memory_equal(dx, dx2, sizeof(float) * B * IN);
    assert_memory_equal(dw, dw2, sizeof(float) * IN * OUT);
    be->dense_forward(be, B, IN, OUT, x, w, NULL, ACT_NONE, y); /* a copy of w held */
    for (long i = 0; i < IN * OUT; i++)
        w[i] = -w[i];
    be->dense_forward(be, B, IN, OUT, x, w, NULL, ACT_NONE, y);
    for (long i = 0; i < B * OUT; i++)
        if (y[i] != -y2[i])
            fail_msg("y[%ld] after w changed: %g, want %g: a stale bf16 copy of w", i, y[i],
                     -y2[i]);
    be->destroy(be);
    HARNESS_FREE(x, w, dz, y, dx, dw, y2, dx2, dw2);
}
#endif

int main(void)
{
#ifndef PUNCH_HAVE_DNNL
    puts("skipped: a build without oneDNN has no bf16 convolution");
    return 77;
#endif
    if (!spec_cpu_has_bf16()) {
        puts("skipped: this CPU has neither AVX512_BF16 nor AMX-BF16");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_conv),
        cmocka_unit_test(test_bf16_first_layer),
        cmocka_unit_test(test_bf16_dense),
#ifdef PUNCH_HAVE_DNNL
        cmocka_unit_test(test_bf16_dense_reuses_rounding),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
