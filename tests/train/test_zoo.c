/* test_zoo.c — PyDTNN's model zoo presets build into models the engine
 * trains: each CIFAR-sized preset takes two SGD steps on random data of
 * its input shape with batch 2; its loss stays finite and the steps move
 * it. The ImageNet-sized ones are too big to step here; test_spec.c
 * checks their shapes and parameter counts. */
#include <math.h>
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

enum { BATCH = 2, STEPS = 2 };

static job_spec *zoo_spec(const char *preset, const char *input)
{
    return spec_fixture_parsef(
        "{\"model\": {\"preset\": \"%s\", \"input\": %s}, "
        "\"data\": {\"format\": \"synthetic\", \"num_classes\": 10}, "
        "\"training\": {\"optimizer\": {\"name\": \"sgd\", \"learning_rate\": 0.01}}}",
        preset, input);
}

static void check_trains(const char *preset, const char *input)
{
    job_spec *s = zoo_spec(preset, input);
    char err[256];
    backend *be = backend_cpu_create(1, err, sizeof err);
    if (!be)
        fail_msg("backend: %s", err);
    model *m = tt_make_model(s, be, BATCH);
    assert_int_equal(m->n_out, 10);
    assert_int_equal(m->n_trainable, s->n_params);
    optimizer *opt = optim_create(&s->training.optimizer, m->n_params);
    assert_non_null(opt);
    dataset d;
    tt_make_data(&d, m, BATCH);
    int64_t idx[BATCH] = {0, 1};
    assert_int_equal(model_load_batch(m, &d, idx, BATCH, err, sizeof err), 0);
    model_forward(m, BATCH, false, 0);
    double before = model_loss(m, BATCH, NULL);
    for (int step = 0; step < STEPS; step++) {
        assert_int_equal(model_load_batch(m, &d, idx, BATCH, err, sizeof err), 0);
        model_forward(m, BATCH, true, (uint64_t)step);
        double loss = model_loss(m, BATCH, NULL);
        if (!isfinite(loss) || loss <= 0)
            fail_msg("%s: step %d loss %g", preset, step, loss);
        model_backward(m, BATCH);
        model_optimizer_step(m, opt, 0.01f);
    }
    /* Evaluated again (no dropout), the steps have moved the loss. */
    model_forward(m, BATCH, false, 0);
    double after = model_loss(m, BATCH, NULL);
    if (!isfinite(after) || after == before)
        fail_msg("%s: loss %g before the steps, %g after", preset, before, after);
    tt_free_all(&d, opt, m, be, s);
}

#define CIFAR "[3, 32, 32]"

static void test_zoo_small(void **state)
{
    (void)state;
    check_trains("simplemlp", "[1, 28, 28]");
    check_trains("simplecnn_pydtnn", "[1, 28, 28]");
    check_trains("alexnet_cifar10", CIFAR);
}

static void test_zoo_vgg(void **state)
{
    (void)state;
    check_trains("vgg11_cifar10", CIFAR);
    check_trains("vgg11bn_cifar10", CIFAR);
    check_trains("vgg16_cifar10", CIFAR);
    check_trains("vgg16bn_cifar10", CIFAR);
}

static void test_zoo_resnet(void **state)
{
    (void)state;
    check_trains("resnet20_cifar10", CIFAR);
    check_trains("resnet32_cifar10", CIFAR);
    check_trains("resnet56_cifar10", CIFAR);
}

static void test_zoo_concat(void **state)
{
    (void)state;
    check_trains("densenet121_cifar10", CIFAR);
    check_trains("googlenet_cifar10", CIFAR);
}

/* Depthwise convolutions (groups = channels). */
static void test_zoo_mobilenet(void **state)
{
    (void)state;
    check_trains("mobilenetv1_cifar10", CIFAR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_small),
        cmocka_unit_test(test_zoo_vgg),
        cmocka_unit_test(test_zoo_resnet),
        cmocka_unit_test(test_zoo_concat),
        cmocka_unit_test(test_zoo_mobilenet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
