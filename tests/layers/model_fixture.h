/* model_fixture.h — a model for a test on the CPU backend: the spec from
 * JSON text, a CPU backend, the model for a batch size with its parameters
 * drawn from a seed; any failure fails the test with the engine's message.
 * Shared by the layer, sequence and train tests. Header-only; include after
 * <cmocka.h>. */
#ifndef PUNCH_MODEL_FIXTURE_H
#define PUNCH_MODEL_FIXTURE_H

#include "cpu/cpu.h"
#include "model/model.h"
#include "spec_fixture.h"

/* s's model on be for batches of `batch`, parameters from `seed`. */
static inline model *model_fixture_seeded(const job_spec *s, backend *be, int batch,
                                          unsigned long seed)
{
    char err[256];
    model *m = model_create(s, be, batch, err, sizeof err);
    if (!m)
        fail_msg("model_create: %s", err);
    assert_int_equal(model_init_params(m, seed, err, sizeof err), 0);
    return m;
}

/* json's model on a CPU backend of `threads` threads, as
 * model_fixture_seeded; its spec into *spec and backend into *be, for the
 * caller to free after the model. */
static inline model *model_fixture_open(const char *json, int threads, int batch,
                                        unsigned long seed, job_spec **spec, backend **be)
{
    *spec = spec_fixture_parse(json);
    char err[256];
    *be = backend_cpu_create(threads, err, sizeof err);
    assert_non_null(*be);
    return model_fixture_seeded(*spec, *be, batch, seed);
}

#endif
