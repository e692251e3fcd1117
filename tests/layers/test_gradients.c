/* test_gradients.c — every layer's backward pass against central finite
 * differences (float32 layers, double-precision loss), on the CPU backend
 * with one and two threads, including accumulation into shared inputs. */
#include "layer_harness.h"

/* Smooth layers: tight. Kinked ones (relu, max) use a small eps; a
 * difference that straddles a kink would show up as a large error. */
#define EPS 1e-3f
#define ATOL 5e-3
#define RTOL 1e-2

static void check(const char *input, const char *layers, int index, int batch, int threads)
{
    harness *h = harness_make(input, layers, index, batch, threads);
    harness_gradcheck(h, EPS, ATOL, RTOL);
    harness_free(h);
}

static void test_dense(void **state)
{
    (void)state;
    const char *acts[] = {"none", "relu", "sigmoid", "tanh", "softmax"};
    for (int t = 1; t <= 2; t++)
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
            char l[128];
            snprintf(l, sizeof l, "{\"type\": \"dense\", \"units\": 5, \"activation\": \"%s\"}",
                     acts[a]);
            check("[7]", l, 0, 3, t);
        }
    check("[300]", "{\"type\": \"dense\", \"units\": 200, \"activation\": \"tanh\"}", 0, 8, 2);
    check("[6]", "{\"type\": \"dense\", \"units\": 4, \"use_bias\": false}", 0, 2, 1);
}

static void test_conv2d(void **state)
{
    (void)state;
    /* Few channels run the direct kernels (cpu_conv_direct.c): an even
     * kernel pads one more at the bottom/right. Many channels run im2col +
     * GEMM, plain and pointwise; groups the grouped loop. */
    static const struct {
        const char *input, *layer;
        int batch;
    } cases[] = {
        {"[2, 5, 5]", "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, "
                      "\"padding\": \"same\", \"activation\": \"relu\"}", 3},
        {"[2, 7, 6]", "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, "
                      "\"stride\": 2, \"padding\": \"valid\", \"activation\": \"tanh\"}", 2},
        {"[1, 7, 7]", "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, "
                      "\"dilation\": 2, \"padding\": \"same\"}", 2},
        {"[3, 4, 4]", "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1}", 3},
        {"[2, 5, 5]", "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 2, "
                      "\"stride\": 2, \"padding\": \"same\", \"activation\": \"sigmoid\"}", 3},
        {"[2, 6, 5]", "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 2, "
                      "\"padding\": \"same\", \"activation\": \"tanh\"}", 3},
        {"[3, 5, 5]", "{\"type\": \"conv2d\", \"filters\": 7, \"kernel\": 3, "
                      "\"padding\": \"same\", \"activation\": \"relu\"}", 3},
        {"[5, 4, 4]", "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 1}", 3},
        /* Grouped (cpu_conv_grouped.c): depthwise as MobileNet's, a
         * channel multiplier with stride 2, two groups with dilation. */
        {"[4, 5, 5]", "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"groups\": 4, "
                      "\"padding\": \"same\", \"activation\": \"relu\"}", 3},
        {"[3, 7, 6]", "{\"type\": \"conv2d\", \"filters\": 6, \"kernel\": 3, \"groups\": 3, "
                      "\"stride\": 2, \"padding\": \"same\", \"activation\": \"tanh\"}", 2},
        {"[4, 7, 7]", "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"groups\": 2, "
                      "\"dilation\": 2, \"padding\": \"same\"}", 2},
    };
    for (int t = 1; t <= 2; t++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            check(cases[i].input, cases[i].layer, 0, cases[i].batch, t);
    /* Fewer samples than threads: a thread with no work must not count. */
    check("[2, 4, 4]", "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3}", 0, 1, 2);
}

static void test_pooling(void **state)
{
    (void)state;
    for (int t = 1; t <= 2; t++) {
        check("[2, 6, 6]", "{\"type\": \"maxpool2d\", \"pool\": 2}", 0, 2, t);
        check("[2, 5, 5]", "{\"type\": \"maxpool2d\", \"pool\": 3, \"stride\": 2, "
              "\"padding\": \"same\"}", 0, 2, t);
        check("[2, 6, 6]", "{\"type\": \"avgpool2d\", \"pool\": 2}", 0, 2, t);
        check("[2, 5, 5]", "{\"type\": \"avgpool2d\", \"pool\": 2, \"padding\": \"same\"}",
              0, 2, t);
    }
}

static void test_batchnorm(void **state)
{
    (void)state;
    for (int t = 1; t <= 2; t++) {
        check("[3, 4, 4]", "{\"type\": \"batchnorm\"}", 0, 4, t);
        check("[6]", "{\"type\": \"batchnorm\"}", 0, 5, t);
    }
}

static void test_activations(void **state)
{
    (void)state;
    const char *types[] = {"relu", "sigmoid", "tanh"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char l[64];
        snprintf(l, sizeof l, "{\"type\": \"%s\"}", types[i]);
        check("[2, 3, 3]", l, 0, 3, 2);
    }
    check("[9]", "{\"type\": \"softmax\"}", 0, 4, 2);
}

static void test_dropout_flatten(void **state)
{
    (void)state;
    check("[50]", "{\"type\": \"dropout\", \"rate\": 0.5}", 0, 4, 2);
    check("[2, 3, 3]", "{\"type\": \"flatten\"}", 0, 3, 1);
}

static void test_add_concat(void **state)
{
    (void)state;
    check("[2, 3, 3]", "{\"type\": \"relu\"}, {\"type\": \"add\", \"inputs\": [-1, 0]}", 1, 3, 2);
    check("[2, 3, 3]", "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 1}, "
          "{\"type\": \"concat\", \"inputs\": [-1, 0]}", 1, 3, 2);
    check("[5]", "{\"type\": \"dense\", \"units\": 4}, {\"type\": \"concat\", "
          "\"inputs\": [0, -1]}", 1, 2, 1);
}

/* One tensor read twice by the same layer: its gradient is the sum. */
static void test_add_same_input_twice(void **state)
{
    (void)state;
    harness *h = harness_make("[4]", "{\"type\": \"add\", \"inputs\": [-1, -1]}", 0, 2, 1);
    h->l.x[1] = h->x[0];
    h->l.dx[1] = h->dx[0];
    harness_loss(h);
    memcpy(h->dy, h->r, (size_t)(2 * 4) * sizeof(float));
    h->l.dx_accumulate[0] = false;
    h->l.dx_accumulate[1] = true;
    h->l.ops->backward(&h->l, h->be, 2);
    for (int i = 0; i < 8; i++) {
        assert_float_equal(h->y[i], 2.0f * h->x[0][i], 1e-6f);
        assert_float_equal(h->dx[0][i], 2.0f * h->r[i], 1e-6f);
    }
    h->l.x[1] = h->x[1];
    h->l.dx[1] = h->dx[1];
    harness_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_conv2d),
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_dropout_flatten),
        cmocka_unit_test(test_add_concat),
        cmocka_unit_test(test_add_same_input_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
