/* train_test_util.h — what the step-level train tests share: a job spec
 * from JSON (spec_fixture_parse), a model with seeded weights, and a random dataset shaped for
 * a model. Header-only; include after <cmocka.h>. */
#ifndef PUNCH_TRAIN_TEST_UTIL_H
#define PUNCH_TRAIN_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "backend/rng.h"
#include "../layers/model_fixture.h"

static inline model *tt_make_model(const job_spec *s, backend *be, int batch)
{
    return model_fixture_seeded(s, be, batch, 3);
}

/* n random samples of m's input size, rows 64-byte aligned when the row
 * size allows (x is 64-byte aligned); free d->x and d->y. */
static inline void tt_make_data(dataset *d, const model *m, long n)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    d->features = m->in_size;
    d->num_classes = m->n_out;
    size_t bytes = ((size_t)(n * d->features) * sizeof(float) + 63) & ~(size_t)63;
    d->x = aligned_alloc(64, bytes);
    d->y = malloc((size_t)n * sizeof(int32_t));
    assert_non_null(d->x);
    assert_non_null(d->y);
    rng g = rng_make(11, 0);
    for (long i = 0; i < n * d->features; i++)
        d->x[i] = (float)rng_symmetric(&g, 2.0);
    for (long i = 0; i < n; i++)
        d->y[i] = (int32_t)(rng_uniform(&g) * m->n_out) % m->n_out;
}

/* Free what a step test built: d's samples (tt_make_data), the optimizer
 * (NULL when there is none), the model, its backend and its spec. */
static inline void tt_free_all(dataset *d, optimizer *opt, model *m, backend *be, job_spec *s)
{
    free(d->x);
    free(d->y);
    optim_free(opt);
    model_free(m);
    be->destroy(be);
    spec_free(s);
}

#endif
