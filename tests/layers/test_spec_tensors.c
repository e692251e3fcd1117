/* test_spec_tensors.c — lib/jobspec's list of a model's weight tensors
 * (spec_tensors, what a server checks a warm start's file against without
 * building the model) against the engine's own (model_tensors) on the
 * presets of every layer kind: names, order and shapes; then
 * spec_tensors_check_file on a file the model wrote and on a mismatched
 * one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "cpu/cpu.h"
#include "jobspec/spec_tensors.h"
#include "model/model.h"
#include "spec_fixture.h"

static const char *const specs[] = {
    "{\"model\":{\"preset\":\"simplecnn\",\"input\":[1,28,28]},\"data\":{\"format\":"
    "\"synthetic\",\"num_classes\":10}}",
    "{\"model\":{\"preset\":\"resnet20_cifar10\",\"input\":[3,32,32]},\"data\":{\"format\":"
    "\"synthetic\",\"num_classes\":10}}",
    "{\"model\":{\"preset\":\"mobilenetv1_cifar10\",\"input\":[3,32,32]},\"data\":{\"format\":"
    "\"synthetic\",\"num_classes\":10}}",
    "{\"model\":{\"preset\":\"cntk_lstm\",\"input\":{\"tokens\":256}},\"data\":{\"format\":"
    "\"synthetic\",\"num_classes\":5,\"max_length\":12}}",
    "{\"model\":{\"preset\":\"bilstm_tagger\",\"input\":{\"tokens\":64}},\"data\":{\"format\":"
    "\"npz\",\"train\":\"@t\",\"num_classes\":5,\"max_length\":16,\"per_step_labels\":true}}",
    "{\"model\":{\"preset\":\"gpt\",\"input\":{\"tokens\":64},\"n_embd\":32,\"n_head\":2},"
    "\"data\":{\"format\":\"npz\",\"train\":\"@t\",\"num_classes\":64,\"max_length\":16,"
    "\"per_step_labels\":true}}",
    "{\"model\":{\"preset\":\"transformer_classifier\",\"input\":{\"tokens\":64},"
    "\"n_embd\":32,\"n_head\":2},\"data\":{\"format\":\"npz\",\"train\":\"@t\","
    "\"num_classes\":4,\"max_length\":16}}",
    "{\"model\":{\"input\":{\"sequence\":[6]},\"layers\":[{\"type\":\"conv1d\",\"filters\":4,"
    "\"kernel\":3},{\"type\":\"bidirectional\",\"layer\":{\"type\":\"gru\",\"units\":5}},"
    "{\"type\":\"dense\",\"units\":3,\"activation\":\"softmax\"}]},\"data\":{\"format\":"
    "\"synthetic\",\"num_classes\":3,\"max_length\":10}}",
};

static model *build(const job_spec *spec, backend **be)
{
    char err[512];
    *be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(*be);
    model *m = model_create(spec, *be, 1, err, sizeof err);
    if (!m)
        fail_msg("model_create: %s", err);
    return m;
}

static void test_same_as_engine(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        job_spec *spec = spec_fixture_parse(specs[i]);
        backend *be;
        model *m = build(spec, &be);
        float *hp = calloc((size_t)m->n_params + 1, sizeof *hp);
        float *hs = calloc((size_t)m->n_state + 1, sizeof *hs);
        tensor_entry *engine = NULL, *lib = NULL;
        int n_engine = model_tensors(m, hp, hs, &engine);
        int n_lib = spec_tensors(spec, &lib);
        assert_true(n_engine > 0);
        if (n_lib != n_engine)
            fail_msg("%s: %d tensors in lib, %d in the engine", specs[i], n_lib, n_engine);
        for (int k = 0; k < n_engine; k++) {
            assert_string_equal(lib[k].name, engine[k].name);
            assert_int_equal(lib[k].rank, engine[k].rank);
            for (int r = 0; r < engine[k].rank; r++)
                if (lib[k].dims[r] != engine[k].dims[r])
                    fail_msg("%s: dim %d of %s: lib %ld, engine %ld", specs[i], r,
                             engine[k].name, lib[k].dims[r], engine[k].dims[r]);
        }
        free(engine);
        free(lib);
        free(hp);
        free(hs);
        model_free(m);
        be->destroy(be);
        spec_free(spec);
    }
}

/* A file the engine wrote passes; the same tensors under a model with one
 * unit more fail, naming the tensor and both shapes. */
static void test_check_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/punch-spectensors-XXXXXX", path[128], err[600];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    job_spec *spec = spec_fixture_parse(specs[0]);
    backend *be;
    model *m = build(spec, &be);
    assert_int_equal(model_init_params(m, 1, err, sizeof err), 0);
    float *hp = calloc((size_t)m->n_params + 1, sizeof *hp);
    float *hs = calloc((size_t)m->n_state + 1, sizeof *hs);
    tensor_entry *t = NULL;
    int n = model_tensors(m, hp, hs, &t);
    assert_true(n > 0);
    if (safetensors_write(path, t, n, NULL, NULL, 0, err, sizeof err) != 0)
        fail_msg("save: %s", err);
    free(t);
    free(hp);
    free(hs);
    assert_int_equal(spec_tensors_check_file(spec, path, err, sizeof err), 0);
    job_spec *other = spec_fixture_parse(
        "{\"model\":{\"input\":[1,28,28],\"layers\":[{\"type\":\"conv2d\",\"filters\":9,"
        "\"kernel\":3},{\"type\":\"flatten\"},{\"type\":\"dense\",\"units\":10,"
        "\"activation\":\"softmax\"}]},\"data\":{\"format\":\"synthetic\",\"num_classes\":10}}");
    assert_int_equal(spec_tensors_check_file(other, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "training.init_from: "));
    assert_non_null(strstr(err, "w.safetensors"));
    spec_free(other);
    model_free(m);
    be->destroy(be);
    spec_free(spec);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_engine),
        cmocka_unit_test(test_check_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
