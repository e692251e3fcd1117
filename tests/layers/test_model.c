/* test_model.c — the model: whole-graph gradients (residual add, concat,
 * batchnorm, dropout, every loss, fused softmax) against finite
 * differences of the mean batch loss, including layers that skip an input
 * gradient nothing trainable needs; the flat parameter layout (every
 * tensor 256-byte aligned, the padding zero through training steps) and
 * the weight-file keys; loading weights back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "backend/rng.h"
#include "model_fixture.h"
#include "cpu/cpu.h"

typedef struct fixture {
    job_spec *spec;
    backend *be;
    model *m;
    dataset data;
    int batch;
} fixture;

static fixture *fixture_make(const char *json, int batch, int threads)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->m = model_fixture_open(json, threads, batch, 3, &f->spec, &f->be);
    char err[256];
    f->batch = batch;
    dataset *d = &f->data;
    d->n = batch;
    d->features = f->m->in_size;
    d->shape = f->spec->input;
    d->num_classes = f->spec->data.num_classes;
    d->x = malloc((size_t)(d->n * d->features) * sizeof(float));
    d->y = malloc((size_t)d->n * sizeof(int32_t));
    assert_non_null(d->x);
    assert_non_null(d->y);
    rng g = rng_make(11, 0);
    for (long i = 0; i < d->n * d->features; i++)
        d->x[i] = (float)rng_uniform(&g);
    for (long i = 0; i < d->n; i++)
        d->y[i] = (int32_t)(i % d->num_classes);
    assert_int_equal(model_load_range(f->m, d, 0, batch, err, sizeof err), 0);
    return f;
}

static void fixture_free(fixture *f)
{
    model_free(f->m);
    f->be->destroy(f->be);
    spec_free(f->spec);
    free(f->data.x);
    free(f->data.y);
    free(f);
}

static double mean_loss(fixture *f)
{
    model_forward(f->m, f->batch, true, 7);
    return model_loss(f->m, f->batch, NULL) / f->batch;
}

/* Every `stride`-th parameter's gradient against central differences. */
static void gradcheck(fixture *f, double atol, double rtol)
{
    model *m = f->m;
    mean_loss(f);
    model_backward(m, f->batch);
    float *g = malloc((size_t)m->n_params * sizeof *g);
    assert_non_null(g);
    memcpy(g, m->grads, (size_t)m->n_params * sizeof *g);
    long stride = m->n_params > 300 ? m->n_params / 300 : 1;
    const float eps = 1e-3f;
    for (long i = 0; i < m->n_params; i += stride) {
        float saved = m->params[i];
        m->params[i] = saved + eps;
        double lp = mean_loss(f);
        m->params[i] = saved - eps;
        double lm = mean_loss(f);
        m->params[i] = saved;
        double num = (lp - lm) / (2.0 * eps);
        if (fabs(num - g[i]) > atol + rtol * fabs(num))
            fail_msg("param %ld: analytic %.6g, numeric %.6g", i, (double)g[i], num);
    }
    free(g);
}

/* A fixture for `json` whose every gradient has passed gradcheck; free it
 * with fixture_free. */
static fixture *gradchecked(const char *json, int batch, int threads)
{
    fixture *f = fixture_make(json, batch, threads);
    gradcheck(f, 2e-3, 2e-2);
    return f;
}

#define JOB(model, loss, classes)                                                           \
    "{\"model\": " model ", \"data\": {\"format\": \"synthetic\", \"num_classes\": " classes \
    "}, \"training\": {\"loss\": \"" loss "\"}}"

static void test_residual_graph(void **state)
{
    (void)state;
    fixture *f = gradchecked(JOB("{\"input\": [2, 6, 6], \"layers\": ["
        "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\", "
        "\"activation\": \"tanh\"},"
        "{\"type\": \"batchnorm\"},"
        "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\", "
        "\"activation\": \"sigmoid\"},"
        "{\"type\": \"add\", \"inputs\": [1, 2]},"
        "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1, \"inputs\": [1]},"
        "{\"type\": \"concat\", \"inputs\": [3, 4]},"
        "{\"type\": \"avgpool2d\", \"pool\": 2},"
        "{\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 8, \"activation\": \"tanh\"},"
        "{\"type\": \"dropout\", \"rate\": 0.3},"
        "{\"type\": \"dense\", \"units\": 4},"
        "{\"type\": \"softmax\"}]}", "categorical_crossentropy", "4"), 5, 2);
    assert_int_equal(f->m->output_kind, OUTPUT_SOFTMAX_LOGITS);
    fixture_free(f);
}

/* A layer's output gradient is skipped when nothing upstream of it has
 * parameters: here tanh sits on the model input and feeds both a dense
 * layer and the add, so neither computes a gradient for it, while every
 * parameter gradient stays right. */
static void test_untrainable_branch_gets_no_gradient(void **state)
{
    (void)state;
    fixture *f = gradchecked(JOB("{\"input\": [6], \"layers\": [{\"type\": \"tanh\"}, "
        "{\"type\": \"dense\", \"units\": 6, \"activation\": \"sigmoid\"}, "
        "{\"type\": \"add\", \"inputs\": [0, 1]}, {\"type\": \"dense\", \"units\": 3}, "
        "{\"type\": \"softmax\"}]}", "categorical_crossentropy", "3"), 4, 2);
    assert_null(f->m->layers[1].dx[0]);
    assert_null(f->m->layers[2].dx[0]);
    assert_non_null(f->m->layers[2].dx[1]);
    fixture_free(f);
}

static void test_losses_through_model(void **state)
{
    (void)state;
    /* simplecnn-style: a last dense without activation is logits for CCE. */
    fixture *f = gradchecked(JOB("{\"input\": [1, 5, 5], \"layers\": ["
        "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"padding\": \"same\"},"
        "{\"type\": \"maxpool2d\", \"pool\": 2}, {\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 3}]}", "categorical_crossentropy", "3"), 4, 1);
    assert_int_equal(f->m->output_kind, OUTPUT_SOFTMAX_LOGITS);
    /* The output the metrics read is a probability distribution. */
    for (int r = 0; r < 4; r++) {
        double s = 0;
        for (int j = 0; j < 3; j++)
            s += f->m->output[r * 3 + j];
        assert_true(fabs(s - 1.0) < 1e-5);
    }
    fixture_free(f);

    f = gradchecked(JOB("{\"input\": [6], \"layers\": [{\"type\": \"dense\", \"units\": 3, "
                        "\"activation\": \"sigmoid\"}]}", "binary_crossentropy", "3"), 4, 2);
    assert_int_equal(f->m->output_kind, OUTPUT_PLAIN);
    fixture_free(f);

    f = gradchecked(JOB("{\"input\": [6], \"layers\": [{\"type\": \"dense\", \"units\": 5, "
                        "\"activation\": \"relu\"}, {\"type\": \"dense\", \"units\": 3, "
                        "\"activation\": \"tanh\"}]}", "mse", "3"), 4, 2);
    fixture_free(f);

    f = gradchecked(JOB("{\"input\": [6], \"layers\": [{\"type\": \"dense\", \"units\": 3, "
                        "\"activation\": \"softmax\"}]}", "categorical_crossentropy", "3"),
                    4, 1);
    fixture_free(f);

    /* The hinge reads the last layer's output as it is, linear or not. */
    const char *hinge_tails[] = {"", ", \"activation\": \"tanh\""};
    for (int i = 0; i < 2; i++) {
        char job[512];
        snprintf(job, sizeof job,
                 JOB("{\"input\": [6], \"layers\": [{\"type\": \"dense\", \"units\": 5, "
                     "\"activation\": \"relu\"}, {\"type\": \"dense\", \"units\": 4%s}]}",
                     "categorical_hinge", "4"), hinge_tails[i]);
        f = fixture_make(job, 6, 2);
        assert_int_equal(f->m->output_kind, OUTPUT_PLAIN);
        assert_true(mean_loss(f) > 0.0);
        gradcheck(f, 2e-3, 2e-2);
        fixture_free(f);
    }
}

static void test_cce_needs_softmax_or_linear(void **state)
{
    (void)state;
    job_spec *s = spec_fixture_parse(JOB("{\"input\": [6], \"layers\": [{\"type\": \"dense\", "
                                         "\"units\": 3, \"activation\": \"relu\"}]}",
                                         "categorical_crossentropy", "3"));
    char err[256];
    backend *be = backend_cpu_create(1, err, sizeof err);
    model *m = model_create(s, be, 4, err, sizeof err);
    assert_null(m);
    assert_non_null(strstr(err, "training.loss"));
    assert_non_null(strstr(err, "relu"));
    be->destroy(be);
    spec_free(s);
}

/* mlp: flatten, dense 128 relu, dense 10 softmax — one flat buffer with
 * each tensor where the weight files say it is, at multiples of 64 floats. */
static void test_mlp_layout(void **state)
{
    (void)state;
    fixture *f = fixture_make("{\"model\": {\"preset\": \"mlp\", \"input\": [1, 28, 28]}, "
                              "\"data\": {\"format\": \"synthetic\"}}", 2,
                              1);
    model *m = f->m;
    assert_int_equal(m->n_trainable, 784 * 128 + 128 + 128 * 10 + 10);
    assert_int_equal(m->n_trainable, f->spec->n_params);
    /* 1280 and 10 floats each round up to a multiple of 64. */
    assert_int_equal(m->n_params, 784 * 128 + 128 + 1280 + 64);
    tensor_entry *t = NULL;
    int n = model_tensors(m, m->params, m->state, &t);
    assert_int_equal(n, 4);
    const char *names[] = {"1.dense.weight", "1.dense.bias", "2.dense.weight", "2.dense.bias"};
    long offsets[] = {0, 784 * 128, 784 * 128 + 128, 784 * 128 + 128 + 1280};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(t[i].name, names[i]);
        assert_ptr_equal(t[i].data, m->params + offsets[i]);
    }
    assert_int_equal(t[0].rank, 2);
    assert_int_equal(t[0].dims[0], 784);
    assert_int_equal(t[0].dims[1], 128);
    assert_int_equal(t[3].dims[0], 10);
    assert_ptr_equal(m->layers[1].grads, m->grads);
    /* flatten sits on the model input: dense 1 computes no dx for it. */
    assert_null(m->layers[1].dx[0]);
    assert_non_null(m->layers[2].dx[0]);
    assert_ptr_equal(m->layers[2].grads, m->grads + 784 * 128 + 128);
    assert_ptr_equal(m->layers[2].params, m->params + 784 * 128 + 128);
    free(t);
    fixture_free(f);
}

/* Every parameter tensor of `json`'s model starts at a multiple of
 * LAYER_PARAM_ALIGN floats, layers tile the buffer, the real count is the
 * spec's; the padding is zero in params and grads. */
static void check_aligned(const char *json, int batch)
{
    fixture *f = fixture_make(json, batch, 1);
    model *m = f->m;
    assert_int_equal(m->n_trainable, f->spec->n_params);
    assert_int_equal(m->n_params % LAYER_PARAM_ALIGN, 0);
    char *used = calloc((size_t)m->n_params + 1, 1);
    assert_non_null(used);
    long at = 0, real = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        assert_int_equal(l->params - m->params, at);
        assert_int_equal(l->param_span % LAYER_PARAM_ALIGN, 0);
        for (int k = 0; k < l->n_tensors; k++) {
            const layer_tensor *lt = &l->tensors[k];
            if (lt->is_state)
                continue;
            assert_int_equal(lt->offset % LAYER_PARAM_ALIGN, 0);
            long size = layer_tensor_size(lt);
            assert_true(lt->offset + size <= l->param_span);
            memset(used + at + lt->offset, 1, (size_t)size);
            real += size;
        }
        at += l->param_span;
    }
    assert_int_equal(at, m->n_params);
    assert_int_equal(real, m->n_trainable);
    /* Adam with weight decay keeps zero padding zero through steps. */
    spec_optimizer cfg = {.name = OPT_ADAM, .learning_rate = 0.01, .beta1 = 0.9,
                          .beta2 = 0.999, .epsilon = 1e-7, .weight_decay = 0.01};
    optimizer *opt = optim_create(&cfg, m->n_params);
    assert_non_null(opt);
    for (int step = 0; step < 2; step++) {
        mean_loss(f);
        model_backward(m, f->batch);
        model_optimizer_step(m, opt, 0.01f);
    }
    for (long i = 0; i < m->n_params; i++)
        if (!used[i] && (m->params[i] != 0.0f || m->grads[i] != 0.0f))
            fail_msg("padding float %ld: param %g grad %g", i, (double)m->params[i],
                     (double)m->grads[i]);
    optim_free(opt);
    free(used);
    fixture_free(f);
}

static void test_param_alignment(void **state)
{
    (void)state;
    check_aligned("{\"model\": {\"preset\": \"mlp\", \"input\": [1, 28, 28]}, "
                  "\"data\": {\"format\": \"synthetic\"}}", 2);
    check_aligned("{\"model\": {\"preset\": \"convnet\", \"input\": [1, 28, 28]}, "
                  "\"data\": {\"format\": \"synthetic\"}}", 2);
    check_aligned("{\"model\": {\"preset\": \"resnet20_cifar10\", \"input\": [3, 32, 32]}, "
                  "\"data\": {\"format\": \"synthetic\"}}", 2);
    /* Odd sizes everywhere: 3 filters of 3x3 over 3 channels, 5 units. */
    check_aligned(JOB("{\"input\": [3, 7, 7], \"layers\": ["
        "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"activation\": \"relu\"},"
        "{\"type\": \"batchnorm\"}, {\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 5, \"activation\": \"relu\"},"
        "{\"type\": \"dense\", \"units\": 3}]}", "categorical_crossentropy", "3"), 3);
}

static void test_init_reproducible_and_reload(void **state)
{
    (void)state;
    const char *job = JOB("{\"input\": [1, 6, 6], \"layers\": ["
        "{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"activation\": \"relu\"},"
        "{\"type\": \"batchnorm\"}, {\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 3}]}", "categorical_crossentropy", "3");
    fixture *a = fixture_make(job, 2, 1);
    fixture *b = fixture_make(job, 2, 2);
    assert_memory_equal(a->m->params, b->m->params, (size_t)a->m->n_params * sizeof(float));
    /* Glorot-uniform conv weights: within sqrt(6 / (fan_in + fan_out)). */
    float limit = sqrtf(6.0f / (9.0f + 18.0f));
    for (int i = 0; i < 18; i++)
        assert_true(fabsf(a->m->params[i]) <= limit);

    char err[256];
    for (long i = 0; i < b->m->n_params; i++)
        b->m->params[i] = 0;
    tensor_entry *t = NULL;
    int n = model_tensors(a->m, a->m->params, a->m->state, &t);
    assert_int_equal(n, 2 + 4 + 2);
    assert_string_equal(t[2].name, "1.batchnorm.gamma");
    assert_string_equal(t[4].name, "1.batchnorm.running_mean");
    assert_int_equal(model_load_tensors(b->m, t, n, err, sizeof err), 0);
    assert_memory_equal(a->m->params, b->m->params, (size_t)a->m->n_params * sizeof(float));
    /* A missing tensor and a wrong shape are refused by name. */
    assert_int_equal(model_load_tensors(b->m, t, n - 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "3.dense.bias"));
    t[0].dims[0] = 3;
    assert_int_equal(model_load_tensors(b->m, t, n, err, sizeof err), -1);
    assert_non_null(strstr(err, "0.conv2d.weight"));
    free(t);
    fixture_free(a);
    fixture_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_residual_graph),
        cmocka_unit_test(test_untrainable_branch_gets_no_gradient),
        cmocka_unit_test(test_losses_through_model),
        cmocka_unit_test(test_cce_needs_softmax_or_linear),
        cmocka_unit_test(test_mlp_layout),
        cmocka_unit_test(test_param_alignment),
        cmocka_unit_test(test_init_reproducible_and_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
