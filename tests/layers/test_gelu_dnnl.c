/* test_gelu_dnnl.c — the CPU backend's GELU in oneDNN's eltwise
 * primitives (cpu_gelu_dnnl.h), both forms, against double-precision
 * formulas on x from -100 to 100 (0, tiny, the knee, large |x| of either
 * sign): forward and gradient within GELU_REL_TOL of their scale; a JIT kernel, not oneDNN's reference one, must run.
 * The same bits twice, on one thread and on two, in place and not, and
 * the backward's accumulate adds exactly what it would write. Skipped
 * (exit 77) in a build without oneDNN. */
#include "layer_harness.h"

#ifdef PUNCH_HAVE_DNNL
#include "cpu/cpu_backend.h"
#include "cpu/cpu_gelu_dnnl.h"
#endif

/* Errors are relative to each formula's scale: the sum of its terms'
 * magnitudes, 0.5 |x| (1 + |t|) for f = 0.5 x (1 + t) (t: tanh(u) or
 * erf(x / sqrt 2)), and 0.5 (1 + |t|) + |second term| for the gradient.
 * That is what float can resolve where 1 + t cancels (f and f' below
 * ~1e-8 for x < -6 round to 0, in libm's tanhf as in oneDNN), and plain
 * relative error wherever nothing cancels. Measured on AVX-512
 * (jit:avx512_core): 1.2e-7 (tanh, 2 ulps) and 4.8e-7 (erf, near 0). */
#define GELU_REL_TOL 1e-6
/* Several pool chunks of several blocks, each ending in a short one. */
#define GELU_N 40007L

/* f(x) and f'(x) in double, with their scales (the comment above). */
typedef struct gelu_ref {
    double f, grad, f_scale, grad_scale;
} gelu_ref;

static gelu_ref ref_gelu(bool exact, double x)
{
    if (exact) {
        double t = erf(x / sqrt(2.0)), second = x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
        return (gelu_ref){0.5 * x * (1.0 + t), 0.5 * (1.0 + t) + second,
                          0.5 * fabs(x) * (1.0 + fabs(t)), 0.5 * (1.0 + fabs(t)) + fabs(second)};
    }
    double k = sqrt(2.0 / M_PI), c = 0.044715;
    double t = tanh(k * (x + c * x * x * x)), d = k * (1.0 + 3.0 * c * x * x);
    return (gelu_ref){0.5 * x * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d,
                      0.5 * fabs(x) * (1.0 + fabs(t)),
                      0.5 * (1.0 + fabs(t)) + 0.5 * fabs(x) * (1.0 + t * t) * d};
}

/* x: a sweep of [-12, 12], then special values. */
static void fill_x(float *x, long n)
{
    static const float special[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 1e-3f, -1e-3f, 20.0f,
                                    -20.0f, 50.0f, -50.0f, 100.0f, -100.0f, 5.5f, -5.5f};
    long s = (long)(sizeof special / sizeof *special);
    for (long i = 0; i < n - s; i++)
        x[i] = -12.0f + 24.0f * (float)i / (float)(n - s);
    for (long i = 0; i < s; i++)
        x[n - s + i] = special[i];
}

#ifdef PUNCH_HAVE_DNNL
static void fill_rand(float *p, long n, uint64_t seed)
{
    rng g = rng_make(seed, 0);
    harness_fill(p, n, &g, -2.0f, 2.0f);
}

static backend *make_backend(int threads)
{
    char err[256];
    backend *be = backend_cpu_create(threads, err, sizeof err);
    if (!be)
        fail_msg("%s", err);
    return be;
}

/* |got - want| over scale; x = 0 (scale 0) must be exact. */
static double rel_err(double got, double want, double scale)
{
    if (scale == 0.0)
        return got == want ? 0.0 : INFINITY;
    return fabs(got - want) / scale;
}

static void check_form(bool exact)
{
    float *x = harness_fresh(GELU_N), *dy = harness_fresh(GELU_N);
    float *y = harness_fresh(GELU_N), *dx = harness_fresh(GELU_N);
    fill_x(x, GELU_N);
    for (long i = 0; i < GELU_N; i++)
        dy[i] = 1.0f;
    backend *be = make_backend(2);
    be->gelu_forward(be, exact, GELU_N, x, y);
    be->gelu_backward(be, exact, GELU_N, x, dy, dx, false);
    const char *impl = cpu_gelu_dnnl_impl(((cpu_backend *)be->impl)->gelu_dnnl);
    assert_true(impl[0] != '\0' && strncmp(impl, "ref", 3) != 0);
    double worst_y = 0.0, worst_g = 0.0;
    for (long i = 0; i < GELU_N; i++) {
        gelu_ref r = ref_gelu(exact, x[i]);
        double ey = rel_err(y[i], r.f, r.f_scale), eg = rel_err(dx[i], r.grad, r.grad_scale);
        worst_y = ey > worst_y ? ey : worst_y;
        worst_g = eg > worst_g ? eg : worst_g;
    }
    print_message("gelu %s (%s): max rel error forward %.3g, gradient %.3g\n",
                  exact ? "erf" : "tanh", impl, worst_y, worst_g);
    assert_true(worst_y <= GELU_REL_TOL);
    assert_true(worst_g <= GELU_REL_TOL);
    be->destroy(be);
    HARNESS_FREE(x, dy, y, dx);
}

/* Forward and backward outputs of one backend of `threads` threads, with
 * dy random; in place when asked (y over a copy of x, dx over dy). */
static void run_form(bool exact, int threads, bool in_place, float *y, float *dx)
{
    float *x = harness_fresh(GELU_N), *dy = harness_fresh(GELU_N);
    fill_x(x, GELU_N);
    fill_rand(dy, GELU_N, 7);
    backend *be = make_backend(threads);
    if (in_place) {
        memcpy(y, x, GELU_N * sizeof *y);
        be->gelu_forward(be, exact, GELU_N, y, y);
        be->gelu_backward(be, exact, GELU_N, x, dy, dy, false);
        memcpy(dx, dy, GELU_N * sizeof *dx);
    } else {
        be->gelu_forward(be, exact, GELU_N, x, y);
        be->gelu_backward(be, exact, GELU_N, x, dy, dx, false);
    }
    be->destroy(be);
    HARNESS_FREE(x, dy);
}

static void check_bits(bool exact)
{
    size_t bytes = GELU_N * sizeof(float);
    float *y[4], *dx[4];
    for (int r = 0; r < 4; r++) {
        y[r] = harness_fresh(GELU_N);
        dx[r] = harness_fresh(GELU_N);
    }
    run_form(exact, 2, false, y[0], dx[0]);
    run_form(exact, 2, false, y[1], dx[1]);
    run_form(exact, 1, false, y[2], dx[2]);
    run_form(exact, 2, true, y[3], dx[3]);
    for (int r = 1; r < 4; r++) {
        assert_memory_equal(y[0], y[r], bytes);
        assert_memory_equal(dx[0], dx[r], bytes);
    }
    for (int r = 0; r < 4; r++)
        HARNESS_FREE(y[r], dx[r]);
}

static void test_gelu_dnnl_tanh(void **state)
{
    (void)state;
    check_form(false);
    check_bits(false);
}

static void test_gelu_dnnl_erf(void **state)
{
    (void)state;
    check_form(true);
    check_bits(true);
}

/* dx += dy * gelu'(x) adds, to the bit, what the plain backward writes. */
static void test_gelu_dnnl_accumulate(void **state)
{
    (void)state;
    float *x = harness_fresh(GELU_N), *dy = harness_fresh(GELU_N);
    float *g = harness_fresh(GELU_N), *acc = harness_fresh(GELU_N);
    fill_x(x, GELU_N);
    fill_rand(dy, GELU_N, 3);
    fill_rand(acc, GELU_N, 5);
    float *want = harness_fresh(GELU_N);
    backend *be = make_backend(2);
    be->gelu_backward(be, false, GELU_N, x, dy, g, false);
    for (long i = 0; i < GELU_N; i++)
        want[i] = acc[i] + g[i];
    be->gelu_backward(be, false, GELU_N, x, dy, acc, true);
    assert_memory_equal(want, acc, GELU_N * sizeof *acc);
    be->destroy(be);
    HARNESS_FREE(x, dy, g, acc, want);
}
#endif

int main(void)
{
#ifndef PUNCH_HAVE_DNNL
    return 77;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gelu_dnnl_tanh),
        cmocka_unit_test(test_gelu_dnnl_erf),
        cmocka_unit_test(test_gelu_dnnl_accumulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
