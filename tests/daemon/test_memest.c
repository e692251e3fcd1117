/* test_memest.c — a job's memory estimate against models whose sizes are
 * known: a small MLP counted by hand, vgg16_cifar10 (15,245,130 parameters
 * as PyDTNN prints), and the issue's 31 dense 20000x20000 layers (49.6 GB of
 * weights alone), which admission refuses on a host of 24 GiB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sched/admission.h"
#include "sched/memest.h"

#include "../layers/spec_fixture.h"

static void test_mlp_by_hand(void **state)
{
    (void)state;
    job_spec *s = spec_fixture_parse(
        "{\"model\": {\"input\": [64], \"layers\": [{\"type\": \"dense\", \"units\": 256, "
        "\"activation\": \"relu\"}, {\"type\": \"dense\", \"units\": 10, \"activation\": "
        "\"softmax\"}]}, \"data\": {\"format\": \"synthetic\", \"synthetic_train\": 60000, "
        "\"synthetic_test\": 100}, \"training\": {\"batch_size\": 32, \"optimizer\": "
        "{\"name\": \"adam\"}}, \"distributed\": {\"trainer\": \"allreduce\", \"workers\": 2}}");
    memest m;
    memest_job(s, &m);
    const double p = 64 * 256 + 256 + 256 * 10 + 10; /* 19,210 */
    assert_true(m.params == p * 4 && m.grads == p * 4);
    assert_true(m.optimizer == 2 * p * 4);           /* adam: m and v */
    assert_true(m.state == 0);
    assert_true(m.activations == 2.0 * 32 * (256 + 10) * 4);
    assert_true(m.batch == 32.0 * (64 + 2 * 10) * 4);
    assert_true(m.data == 60100.0 * (64 + 1) * 4);
    assert_true(m.per_rank == m.params + m.grads + m.optimizer + m.activations + m.batch +
                                  m.data + MEMEST_RANK_RUNTIME);
    assert_int_equal(m.ranks, 2);
    assert_true(m.total == 2 * m.per_rank);
    spec_free(s);
    /* Plain SGD keeps no state; SGD with momentum one slot. */
    s = spec_fixture_parse("{\"model\": {\"input\": [4], \"layers\": [{\"type\": \"dense\", \"units\": 2}]},"
              " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2},"
              " \"training\": {\"optimizer\": {\"name\": \"sgd\"}}}");
    memest_job(s, &m);
    assert_true(m.optimizer == 0);
    spec_free(s);
    s = spec_fixture_parse("{\"model\": {\"input\": [4], \"layers\": [{\"type\": \"dense\", \"units\": 2}]},"
              " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2},"
              " \"training\": {\"optimizer\": {\"name\": \"sgd\", \"momentum\": 0.9}}}");
    memest_job(s, &m);
    assert_true(m.optimizer == m.params);
    spec_free(s);
}

static void test_vgg16(void **state)
{
    (void)state;
    job_spec *s = spec_fixture_parse("{\"model\": {\"preset\": \"vgg16_cifar10\", \"input\": [3, 32, 32]},"
                        " \"data\": {\"format\": \"synthetic\", \"synthetic_train\": 1,"
                        " \"synthetic_test\": 1}}");
    memest m;
    memest_job(s, &m);
    assert_true(m.params == 15245130.0 * 4);
    assert_true(m.activations > 0);
    spec_free(s);
}

/* The issue's model: 31 dense layers of 20000 units on 20000 inputs. */
static char *huge_dense(void)
{
    static char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text, "{\"model\": {\"input\": [20000], "
                                                   "\"layers\": [");
    for (int i = 0; i < 31; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s{\"type\": \"dense\", \"units\": "
                              "20000}", i ? ", " : "");
    snprintf(text + n, sizeof text - n, "]}, \"data\": {\"format\": \"synthetic\", "
             "\"synthetic_train\": 100, \"synthetic_test\": 10, \"num_classes\": 20000}}");
    return text;
}

static void test_issue_model_refused(void **state)
{
    (void)state;
    job_spec *s = spec_fixture_parse(huge_dense());
    memest m;
    memest_job(s, &m);
    const double gib = 1024.0 * 1024 * 1024;
    assert_true(m.params > 46 * gib && m.params < 47 * gib);
    daemon_ctx d;
    memset(&d, 0, sizeof d);
    config_defaults(&d.cfg);
    d.hosts = 1;
    d.total_slots = 4;
    d.host_memory = 24 * gib;
    const char *field = NULL;
    char why[768];
    assert_false(admission_memory(&d, &m, &field, why, sizeof why));
    assert_string_equal(field, "model");
    assert_non_null(strstr(why, "could never run"));
    assert_non_null(strstr(why, "parameters 46.2 GiB")); /* 12,400,620,000 floats */
    assert_non_null(strstr(why, "24.0 GiB"));
    /* Unknown host memory: admitted. */
    d.host_memory = 0;
    assert_true(admission_memory(&d, &m, &field, why, sizeof why));
    spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_by_hand),
        cmocka_unit_test(test_vgg16),
        cmocka_unit_test(test_issue_model_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
