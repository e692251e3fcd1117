/* test_forward.c — every layer's forward pass and every loss against
 * values worked out by hand, plus the fused softmax + cross-entropy
 * against softmax followed by cross-entropy. */
#include "layer_harness.h"
#include "cpu/cpu.h"

#define TOL 1e-5f

static void set(float *dst, const float *src, int n)
{
    memcpy(dst, src, (size_t)n * sizeof *dst);
}

static void iota(float *dst, int n, float start)
{
    for (int i = 0; i < n; i++)
        dst[i] = start + (float)i;
}

static void expect(const float *got, const float *want, int n)
{
    for (int i = 0; i < n; i++)
        if (fabsf(got[i] - want[i]) > TOL * (1.0f + fabsf(want[i])))
            fail_msg("element %d: got %.7g, want %.7g", i, (double)got[i], (double)want[i]);
}

static void expect_near(double got, double want, double tol)
{
    if (fabs(got - want) > tol)
        fail_msg("got %.9g, want %.9g", got, want);
}

static void forward(harness *h, bool training)
{
    h->l.ops->forward(&h->l, h->be, h->batch, training, h->seed);
}

static void test_dense(void **state)
{
    (void)state;
    harness *h = harness_make("[2]", "{\"type\": \"dense\", \"units\": 3}", 0, 1, 1);
    set(h->x[0], (float[]){1, 2}, 2);
    harness_set_params(h, (float[]){1, 2, 3, 4, 5, 6, 0.1f, 0.2f, 0.3f}, 9);
    forward(h, true);
    expect(h->y, (float[]){9.1f, 12.2f, 15.3f}, 3);
    harness_free(h);

    h = harness_make("[2]", "{\"type\": \"dense\", \"units\": 2, \"activation\": \"softmax\"}",
                     0, 1, 2);
    set(h->x[0], (float[]){1, 0}, 2);
    harness_set_params(h, (float[]){0, logf(2.0f), 0, 0, 0, 0}, 6);
    forward(h, true);
    expect(h->y, (float[]){1.0f / 3, 2.0f / 3}, 2);
    harness_free(h);
}

static void test_conv2d(void **state)
{
    (void)state;
    harness *h = harness_make("[1, 3, 3]", "{\"type\": \"conv2d\", \"filters\": 1, "
                              "\"kernel\": 2}", 0, 1, 1);
    iota(h->x[0], 9, 1);
    harness_set_params(h, (float[]){1, 1, 1, 1, 0.5f}, 5);
    forward(h, true);
    expect(h->y, (float[]){12.5f, 16.5f, 24.5f, 28.5f}, 4);
    harness_free(h);

    h = harness_make("[1, 3, 3]", "{\"type\": \"conv2d\", \"filters\": 1, \"kernel\": 3, "
                     "\"padding\": \"same\"}", 0, 1, 2);
    iota(h->x[0], 9, 1);
    for (int i = 0; i < 9; i++)
        h->params[i] = 1;
    h->params[h->l.tensors[1].offset] = 0;
    forward(h, true);
    expect(h->y, (float[]){12, 21, 16, 27, 45, 33, 24, 39, 28}, 9);
    harness_free(h);

    /* Dilation 2: taps (0,0) (0,2) (2,0) (2,2). */
    h = harness_make("[1, 5, 5]", "{\"type\": \"conv2d\", \"filters\": 1, \"kernel\": 2, "
                     "\"dilation\": 2}", 0, 1, 1);
    iota(h->x[0], 25, 0);
    harness_set_params(h, (float[]){1, 1, 1, 1, 0}, 5);
    forward(h, true);
    float want[9];
    for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++)
            want[oy * 3 + ox] = 24.0f + 4.0f * ox + 20.0f * oy;
    expect(h->y, want, 9);
    harness_free(h);

    /* Stride 2 with a 1x1 kernel samples every other pixel; relu clamps. */
    h = harness_make("[1, 5, 5]", "{\"type\": \"conv2d\", \"filters\": 1, \"kernel\": 1, "
                     "\"stride\": 2, \"activation\": \"relu\"}", 0, 1, 1);
    iota(h->x[0], 25, 0);
    harness_set_params(h, (float[]){1, -10}, 2);
    forward(h, true);
    expect(h->y, (float[]){0, 0, 0, 0, 2, 4, 10, 12, 14}, 9);
    harness_free(h);
}

static void test_pooling(void **state)
{
    (void)state;
    harness *h = harness_make("[1, 4, 4]", "{\"type\": \"maxpool2d\", \"pool\": 2}", 0, 1, 1);
    iota(h->x[0], 16, 0);
    forward(h, true);
    expect(h->y, (float[]){5, 7, 13, 15}, 4);
    harness_free(h);

    /* "same" on 3x3 with pool 2 pads one row/column at the end, which
     * average pooling does not count. */
    h = harness_make("[1, 3, 3]", "{\"type\": \"avgpool2d\", \"pool\": 2, \"padding\": \"same\"}",
                     0, 1, 2);
    iota(h->x[0], 9, 1);
    forward(h, true);
    expect(h->y, (float[]){3, 4.5f, 7.5f, 9}, 4);
    harness_free(h);
}

/* Valid average pooling keeps only whole windows: with pool 2 and stride 1
 * on 3x4 every 2x2 window is averaged, and with the default stride 2 on
 * 3x5 the last row and column are dropped (not padded). */
static void test_avgpool_valid(void **state)
{
    (void)state;
    harness *h = harness_make("[2, 3, 4]", "{\"type\": \"avgpool2d\", \"pool\": 2, "
                              "\"stride\": 1, \"padding\": \"valid\"}", 0, 1, 2);
    set(h->x[0], (float[]){1, 2, 3, 4,   5, 6, 7, 8,    9, 10, 11, 12,
                           0, 4, -2, 8,  1, -3, 5, 0,   2, 2, -6, 1}, 24);
    forward(h, true);
    /* Channel 0: (1+2+5+6)/4 = 3.5, ...; channel 1: (0+4+1-3)/4 = 0.5,
     * (4-2-3+5)/4 = 1, (-2+8+5+0)/4 = 2.75, (1-3+2+2)/4 = 0.5,
     * (-3+5+2-6)/4 = -0.5, (5+0-6+1)/4 = 0. */
    expect(h->y, (float[]){3.5f, 4.5f, 5.5f, 7.5f, 8.5f, 9.5f,
                           0.5f, 1, 2.75f, 0.5f, -0.5f, 0}, 12);
    harness_free(h);

    h = harness_make("[1, 3, 5]", "{\"type\": \"avgpool2d\", \"pool\": 2}", 0, 2, 1);
    iota(h->x[0], 30, 1);
    forward(h, true);
    /* Sample 0: (1+2+6+7)/4 = 4, (3+4+8+9)/4 = 6; sample 1 is 15 more. */
    expect(h->y, (float[]){4, 6, 19, 21}, 4);
    harness_free(h);
}

/* Max pooling, pool 3, stride 2, "same" on 5x5: 3x3 outputs, one padded
 * row/column on each side (total (3-1)*2+3-5 = 2), so the windows cover
 * rows/columns {0,1}, {1,2,3}, {3,4}. Padding never wins a max: channel 0
 * is all negative, where a zero pad would give 0 on the border. */
static void test_maxpool_same_stride2(void **state)
{
    (void)state;
    harness *h = harness_make("[2, 5, 5]", "{\"type\": \"maxpool2d\", \"pool\": 3, "
                              "\"stride\": 2, \"padding\": \"same\"}", 0, 1, 2);
    for (int i = 0; i < 25; i++)
        h->x[0][i] = -1.0f - (float)i;
    set(h->x[0] + 25, (float[]){3, 1, 0, 2, 9,
                                0, 5, 1, 1, 0,
                                4, 0, 0, 7, 2,
                                1, 1, 8, 0, 0,
                                0, 6, 0, 3, 1}, 25);
    forward(h, true);
    /* Channel 0: each window's top-left real pixel, rows/columns 0, 1, 3. */
    expect(h->y, (float[]){-1, -2, -4, -6, -7, -9, -16, -17, -19,
                           5, 5, 9, 5, 8, 7, 6, 8, 3}, 18);
    harness_free(h);
}

/* Flatten keeps channel-major (C, H, W) order, sample by sample. */
static void test_flatten(void **state)
{
    (void)state;
    harness *h = harness_make("[2, 2, 3]", "{\"type\": \"flatten\"}", 0, 2, 1);
    iota(h->x[0], 24, 0);
    h->x[0][5] = -7.5f;
    h->x[0][17] = 100;
    forward(h, true);
    assert_int_equal(h->l.out_size, 12);
    expect(h->y, (float[]){0, 1, 2, 3, 4, -7.5f, 6, 7, 8, 9, 10, 11,
                           12, 13, 14, 15, 16, 100, 18, 19, 20, 21, 22, 23}, 24);
    harness_free(h);
}

static void test_batchnorm(void **state)
{
    (void)state;
    harness *h = harness_make("[2]", "{\"type\": \"batchnorm\"}", 0, 2, 1);
    set(h->x[0], (float[]){1, 10, 3, 30}, 4);
    harness_set_params(h, (float[]){1, 1, 0, 0}, 4);
    set(h->state, (float[]){0, 0, 1, 1}, 4);
    forward(h, true);
    float a = 1.0f / sqrtf(1.0f + 1e-5f), b = 10.0f / sqrtf(100.0f + 1e-5f);
    expect(h->y, (float[]){-a, -b, a, b}, 4);
    /* running = 0.9 * running + 0.1 * batch (unbiased variance). */
    expect(h->state, (float[]){0.2f, 2.0f, 1.1f, 0.9f + 0.1f * 200.0f}, 4);
    forward(h, false);
    expect(h->y, (float[]){(1 - 0.2f) / sqrtf(1.1f + 1e-5f), (10 - 2.0f) / sqrtf(20.9f + 1e-5f),
                           (3 - 0.2f) / sqrtf(1.1f + 1e-5f), (30 - 2.0f) / sqrtf(20.9f + 1e-5f)},
           4);
    harness_free(h);
}

static void test_activations(void **state)
{
    (void)state;
    harness *h = harness_make("[3]", "{\"type\": \"relu\"}", 0, 1, 1);
    set(h->x[0], (float[]){-1, 0, 2}, 3);
    forward(h, true);
    expect(h->y, (float[]){0, 0, 2}, 3);
    harness_free(h);
    h = harness_make("[3]", "{\"type\": \"sigmoid\"}", 0, 1, 1);
    set(h->x[0], (float[]){0, logf(3.0f), -logf(3.0f)}, 3);
    forward(h, true);
    expect(h->y, (float[]){0.5f, 0.75f, 0.25f}, 3);
    harness_free(h);
    h = harness_make("[2]", "{\"type\": \"tanh\"}", 0, 1, 1);
    set(h->x[0], (float[]){0, logf(2.0f)}, 2);
    forward(h, true);
    expect(h->y, (float[]){0, 0.6f}, 2);
    harness_free(h);
    h = harness_make("[3]", "{\"type\": \"softmax\"}", 0, 2, 1);
    set(h->x[0], (float[]){0, logf(2.0f), logf(3.0f), 1000, 1000, 1000}, 6);
    forward(h, true);
    expect(h->y, (float[]){1.0f / 6, 2.0f / 6, 3.0f / 6, 1.0f / 3, 1.0f / 3, 1.0f / 3}, 6);
    harness_free(h);
}

static void test_dropout(void **state)
{
    (void)state;
    harness *h = harness_make("[10000]", "{\"type\": \"dropout\", \"rate\": 0.25}", 0, 4, 2);
    long n = 40000;
    forward(h, true);
    long kept = 0;
    for (long i = 0; i < n; i++) {
        if (h->y[i] != 0.0f) {
            kept++;
            assert_float_equal(h->y[i], h->x[0][i] / 0.75f, 1e-6f);
        }
    }
    assert_in_range(kept, 29400, 30600);
    /* Another seed draws another mask; the same seed the same one. */
    float *mask0 = malloc((size_t)n * sizeof *mask0);
    assert_non_null(mask0);
    memcpy(mask0, h->aux, (size_t)n * sizeof *mask0);
    h->seed++;
    forward(h, true);
    long differ = 0;
    for (long i = 0; i < n; i++)
        differ += mask0[i] != h->aux[i];
    assert_true(differ > n / 10);
    h->seed--;
    forward(h, true);
    assert_memory_equal(mask0, h->aux, (size_t)n * sizeof *mask0);
    free(mask0);
    forward(h, false);
    expect(h->y, h->x[0], (int)n);
    harness_free(h);
}

static void test_merge(void **state)
{
    (void)state;
    harness *h = harness_make("[1, 2, 2]", "{\"type\": \"conv2d\", \"filters\": 2, "
                              "\"kernel\": 1}, {\"type\": \"concat\", \"inputs\": [-1, 0]}",
                              1, 2, 1);
    set(h->x[0], (float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    iota(h->x[1], 16, 10);
    forward(h, true);
    expect(h->y, (float[]){1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17,
                           5, 6, 7, 8, 18, 19, 20, 21, 22, 23, 24, 25}, 24);
    harness_free(h);
    h = harness_make("[3]", "{\"type\": \"relu\"}, {\"type\": \"add\", \"inputs\": [-1, 0]}", 1,
                     1, 1);
    set(h->x[0], (float[]){1, 2, 3}, 3);
    set(h->x[1], (float[]){10, 20, 30}, 3);
    forward(h, true);
    expect(h->y, (float[]){11, 22, 33}, 3);
    harness_free(h);
}

static void test_losses(void **state)
{
    (void)state;
    char err[128];
    backend *be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(be);
    float p[4], d[4];
    double l = be->softmax_xent(be, 2, 2, (float[]){0, 0, 0, logf(3.0f)},
                                (float[]){1, 0, 0, 1}, p, d);
    expect_near(l, log(2.0) + log(4.0 / 3.0), 1e-6);
    expect(p, (float[]){0.5f, 0.5f, 0.25f, 0.75f}, 4);
    expect(d, (float[]){-0.25f, 0.25f, 0.125f, -0.125f}, 4);

    l = be->binary_xent(be, 1, 2, (float[]){0.5f, 0.9f}, (float[]){1, 0}, d);
    expect_near(l, (log(2.0) + log(10.0)) / 2, 1e-5);
    expect(d, (float[]){-1.0f, 5.0f}, 2);

    l = be->mse(be, 1, 2, (float[]){1, 2}, (float[]){0, 0}, d);
    expect_near(l, 2.5, 1e-9);
    expect(d, (float[]){1, 2}, 2);

    /* Keras's CategoricalHinge example: rows (0.6, 0.4) against (0, 1)
     * and (0.4, 0.6) against (0, 0) lose 1.2 and 1.6. */
    l = be->categorical_hinge(be, 2, 2, (float[]){0.6f, 0.4f, 0.4f, 0.6f},
                              (float[]){0, 1, 0, 0}, d);
    expect_near(l, 2.8, 1e-6);
    expect(d, (float[]){0.5f, -0.5f, 0, 0.5f}, 4);
    /* Margin met: no loss, no gradient; all other outputs negative: neg
     * is the target's own 0, and only the target is pushed. */
    float d6[6];
    l = be->categorical_hinge(be, 2, 3, (float[]){3, 1, 0.5f, -1, 0.5f, -2},
                              (float[]){1, 0, 0, 0, 1, 0}, d6);
    expect_near(l, 0.5, 1e-6);
    expect(d6, (float[]){0, 0, 0, 0, -0.5f, 0}, 6);

    batch_metrics m;
    be->metrics(be, 2, 2, (float[]){0.1f, 0.9f, 0.8f, 0.2f}, (float[]){0, 1, 0, 1}, &m);
    expect_near(m.correct, 1.0, 0);
    expect_near(m.sq_err, 1.3, 1e-6);
    expect_near(m.abs_err, 1.8, 1e-6);
    be->destroy(be);
}

/* Fused softmax + cross-entropy equals softmax, then cross-entropy on the
 * probabilities, then the softmax backward. */
static void test_fused_softmax_xent(void **state)
{
    (void)state;
    char err[128];
    backend *be = backend_cpu_create(2, err, sizeof err);
    assert_non_null(be);
    enum { B = 3, N = 5 };
    float z[B * N], t[B * N] = {0}, p[B * N], d[B * N], q[B * N], dq[B * N], dz[B * N];
    rng g = rng_make(5, 0);
    harness_fill(z, B * N, &g, -3, 3);
    for (int r = 0; r < B; r++)
        t[r * N + (r * 2) % N] = 1;
    double fused = be->softmax_xent(be, B, N, z, t, p, d);
    be->activation_forward(be, ACT_SOFTMAX, B, N, z, q);
    double plain = 0;
    for (int i = 0; i < B * N; i++) {
        plain -= t[i] * log((double)q[i]);
        dq[i] = -t[i] / q[i] / B;
    }
    be->activation_backward(be, ACT_SOFTMAX, B, N, q, dq, dz, false);
    expect_near(fused, plain, 1e-5);
    expect(p, q, B * N);
    expect(d, dz, B * N);
    be->destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_conv2d),
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_avgpool_valid),
        cmocka_unit_test(test_maxpool_same_stride2),
        cmocka_unit_test(test_flatten),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_losses),
        cmocka_unit_test(test_fused_softmax_xent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
