/* test_fused_step.c — the single trainer's fast paths give the same bits
 * as the plain ones: model_backward_step (the optimizer step fused into
 * the backward pass) against model_backward + model_optimizer_step, over
 * several steps, on 1 and 2 threads, for a dense layer split by rows, one
 * whose update runs in pieces, one without bias, and layers without a
 * fused path; and a contiguous range (copied over the pool) against the
 * same rows gathered by index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "train_test_util.h"
#include "cpu/cpu.h"

#define JOB(model, optimizer)                                                              \
    "{\"model\": " model ", \"data\": {\"format\": \"synthetic\", \"num_classes\": 10}, "  \
    "\"training\": {\"loss\": \"categorical_crossentropy\", \"optimizer\": " optimizer "}}"

/* mlp's shape: dense 784 -> 128 is split by input rows on 2 threads. */
static const char *const MLP_JOB =
    JOB("{\"input\": [1, 28, 28], \"layers\": [{\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 128, \"activation\": \"relu\"},"
        "{\"type\": \"dense\", \"units\": 10, \"activation\": \"softmax\"}]}",
        "{\"name\": \"adam\", \"learning_rate\": 0.01, \"weight_decay\": 0.001}");

/* A wide dense layer (in < out: updated in pieces after the GEMM), one
 * without bias, and batchnorm (no fused path) in between. */
static const char *const WIDE_JOB =
    JOB("{\"input\": [12], \"layers\": ["
        "{\"type\": \"dense\", \"units\": 600, \"activation\": \"tanh\"},"
        "{\"type\": \"batchnorm\"},"
        "{\"type\": \"dense\", \"units\": 40, \"activation\": \"relu\", \"use_bias\": false},"
        "{\"type\": \"dense\", \"units\": 10}]}",
        "{\"name\": \"sgd\", \"learning_rate\": 0.05, \"momentum\": 0.9, \"nesterov\": true, "
        "\"decay\": 0.01}");

static const char *const NADAM_JOB =
    JOB("{\"input\": [1, 28, 28], \"layers\": [{\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 64, \"activation\": \"sigmoid\"},"
        "{\"type\": \"dense\", \"units\": 10}]}",
        "{\"name\": \"nadam\", \"learning_rate\": 0.002}");

static void assert_same_floats(const float *a, const float *b, long n, const char *what)
{
    for (long i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0)
            fail_msg("%s[%ld]: %.9g vs %.9g", what, i, (double)a[i], (double)b[i]);
}

static void check_fused_equals_separate(const char *json, int threads, int batch)
{
    job_spec *s = spec_fixture_parse(json);
    char err[256];
    backend *be = backend_cpu_create(threads, err, sizeof err);
    assert_non_null(be);
    model *a = tt_make_model(s, be, batch), *b = tt_make_model(s, be, batch);
    optimizer *oa = optim_create(&s->training.optimizer, a->n_params);
    optimizer *ob = optim_create(&s->training.optimizer, b->n_params);
    assert_non_null(oa);
    assert_non_null(ob);
    dataset d;
    tt_make_data(&d, a, 4L * batch);
    int64_t *idx = malloc((size_t)batch * sizeof *idx);
    assert_non_null(idx);
    for (int step = 0; step < 4; step++) {
        for (int r = 0; r < batch; r++)
            idx[r] = (r * 7 + step * 5) % d.n;
        /* The last step is a short batch, as an epoch's last one. */
        int n = step == 3 ? batch - 3 : batch;
        assert_int_equal(model_load_batch(a, &d, idx, n, err, sizeof err), 0);
        assert_int_equal(model_load_batch(b, &d, idx, n, err, sizeof err), 0);
        model_forward(a, n, true, (uint64_t)step);
        model_forward(b, n, true, (uint64_t)step);
        double la = model_loss(a, n, NULL), lb = model_loss(b, n, NULL);
        assert_memory_equal(&la, &lb, sizeof la);
        model_backward(a, n);
        model_optimizer_step(a, oa, 0.5f);
        model_backward_step(b, n, ob, 0.5f);
        assert_same_floats(a->grads, b->grads, a->n_params, "grads");
        assert_same_floats(a->params, b->params, a->n_params, "params");
    }
    long ns = optim_state_floats(oa);
    float *sa = malloc((size_t)ns * sizeof *sa), *sb = malloc((size_t)ns * sizeof *sb);
    assert_non_null(sa);
    assert_non_null(sb);
    optim_state_save(oa, sa);
    optim_state_save(ob, sb);
    assert_same_floats(sa, sb, ns, "optimizer state");
    assert_int_equal(optim_iterations(ob), 4);
    free(sa);
    free(sb);
    free(idx);
    free(d.x);
    free(d.y);
    optim_free(oa);
    optim_free(ob);
    model_free(a);
    model_free(b);
    be->destroy(be);
    spec_free(s);
}

static void test_fused_step_mlp(void **state)
{
    (void)state;
    check_fused_equals_separate(MLP_JOB, 1, 32);
    check_fused_equals_separate(MLP_JOB, 2, 32);
    check_fused_equals_separate(MLP_JOB, 3, 17);
}

static void test_fused_step_wide_and_unfused_layers(void **state)
{
    (void)state;
    check_fused_equals_separate(WIDE_JOB, 1, 24);
    check_fused_equals_separate(WIDE_JOB, 2, 24);
}

static void test_fused_step_nadam(void **state)
{
    (void)state;
    check_fused_equals_separate(NADAM_JOB, 2, 40);
}

/* Forward outputs of rows [first, first + batch) loaded as a range and
 * gathered by index. */
static void check_range(model *m, const dataset *d, long first, int batch)
{
    char err[256];
    long n = (long)batch * m->n_out;
    float *ranged = malloc((size_t)n * sizeof *ranged);
    assert_non_null(ranged);
    assert_int_equal(model_load_range(m, d, first, batch, err, sizeof err), 0);
    model_forward(m, batch, false, 0);
    model_loss(m, batch, NULL);
    memcpy(ranged, m->output, (size_t)n * sizeof *ranged);
    int64_t idx[64];
    for (int r = 0; r < batch; r++)
        idx[r] = first + r;
    assert_int_equal(model_load_batch(m, d, idx, batch, err, sizeof err), 0);
    model_forward(m, batch, false, 0);
    model_loss(m, batch, NULL);
    assert_same_floats(ranged, m->output, n, "outputs");
    free(ranged);
}

static void test_range_equals_gather(void **state)
{
    (void)state;
    job_spec *s = spec_fixture_parse(MLP_JOB);
    char err[256];
    backend *be = backend_cpu_create(2, err, sizeof err);
    assert_non_null(be);
    /* 48 rows of 784 floats: enough to be copied over the pool. */
    model *m = tt_make_model(s, be, 48);
    dataset d;
    tt_make_data(&d, m, 100);
    check_range(m, &d, 0, 48);
    check_range(m, &d, 21, 48);
    check_range(m, &d, 50, 5);
    /* Rows that start anywhere. */
    float *x = d.x;
    d.x = x + 1;
    d.n = 99;
    check_range(m, &d, 3, 48);
    d.x = x;
    tt_free_all(&d, NULL, m, be, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_step_mlp),
        cmocka_unit_test(test_fused_step_wide_and_unfused_layers),
        cmocka_unit_test(test_fused_step_nadam),
        cmocka_unit_test(test_range_equals_gather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
