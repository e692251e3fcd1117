/* test_batch_steps.c — a sequence batch runs at its own longest length
 * (model/batch_steps.c): the loss, the outputs and every parameter
 * gradient of a short batch in a model of data.max_length 20 are the
 * bits of the same model made to run the batch at all 20 steps, and equal
 * those of the model at max_length = the batch's longest length, for a
 * one-label model through every kind of sequence layer and a per-step
 * model; the layers' sample-steps fall to the batches' own lengths, and a
 * model with a layer laid out over all T steps (flatten) keeps running at
 * T. */
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
#include "backend/rng.h"
#include "../layers/spec_fixture.h"
#include "cpu/cpu.h"

#define VOCAB 11
#define CLASSES 3
#define T_LONG 20
#define N_SEQ 6

/* The batch's lengths: the longest is 7, far below T_LONG. */
static const int32_t LENGTHS[N_SEQ] = {3, 7, 1, 5, 7, 2};
#define T_SHORT 7

/* embedding -> lstm (sequences) -> conv1d same -> layer_norm -> self-
 * attention -> bidirectional gru -> strided valid conv1d -> maxpool1d ->
 * global average -> dense: every sequence layer, windows that shorten
 * time included. %d is data.max_length. */
static const char *const ONE_LABEL_JOB =
    "{\"model\": {\"input\": {\"tokens\": 11}, \"layers\": ["
    "{\"type\": \"embedding\", \"output_dim\": 6},"
    "{\"type\": \"positional_embedding\", \"max_length\": 32},"
    "{\"type\": \"lstm\", \"units\": 8, \"return_sequences\": true},"
    "{\"type\": \"conv1d\", \"filters\": 6, \"kernel_size\": 3, \"padding\": \"same\","
    " \"activation\": \"tanh\"},"
    "{\"type\": \"layer_norm\"},"
    "{\"type\": \"multi_head_attention\", \"heads\": 2, \"key_dim\": 3},"
    "{\"type\": \"bidirectional\", \"layer\": {\"type\": \"gru\", \"units\": 4,"
    " \"return_sequences\": true}},"
    "{\"type\": \"conv1d\", \"filters\": 5, \"kernel_size\": 2, \"strides\": 2,"
    " \"padding\": \"same\"},"
    "{\"type\": \"maxpool1d\", \"pool_size\": 2, \"strides\": 1},"
    "{\"type\": \"dense\", \"units\": 5, \"activation\": \"relu\"},"
    "{\"type\": \"global_avgpool1d\"},"
    "{\"type\": \"dense\", \"units\": 3, \"activation\": \"softmax\"}]},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@t.npz\", \"num_classes\": 3,"
    " \"max_length\": %d},"
    " \"training\": {\"loss\": \"categorical_crossentropy\"}}";

/* A label per step: embedding -> causal conv1d -> lstm (go_backwards) ->
 * dense per step. */
static const char *const PER_STEP_JOB =
    "{\"model\": {\"input\": {\"tokens\": 11}, \"layers\": ["
    "{\"type\": \"embedding\", \"output_dim\": 5},"
    "{\"type\": \"conv1d\", \"filters\": 6, \"kernel_size\": 3, \"padding\": \"causal\"},"
    "{\"type\": \"lstm\", \"units\": 7, \"return_sequences\": true, \"go_backwards\": true},"
    "{\"type\": \"dense\", \"units\": 3, \"activation\": \"softmax\"}]},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@t.npz\", \"num_classes\": 3,"
    " \"max_length\": %d, \"per_step_labels\": true},"
    " \"training\": {\"loss\": \"categorical_crossentropy\"}}";

/* Runs at T: a flatten lays the sequence out over all its steps. */
static const char *const FLATTEN_JOB =
    "{\"model\": {\"input\": {\"tokens\": 11}, \"layers\": ["
    "{\"type\": \"embedding\", \"output_dim\": 4},"
    "{\"type\": \"flatten\"},"
    "{\"type\": \"dense\", \"units\": 3, \"activation\": \"softmax\"}]},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@t.npz\", \"num_classes\": 3,"
    " \"max_length\": %d},"
    " \"training\": {\"loss\": \"categorical_crossentropy\"}}";

typedef struct run {
    job_spec *spec;
    backend *be;
    model *m;
    dataset d;
} run;

/* The model of `job` at max_length `steps` on one thread (a fixed
 * summation order), and the test batch padded to `steps`. */
static run *run_make(const char *job, int steps, bool per_step)
{
    run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    char json[4096];
    snprintf(json, sizeof json, job, steps);
    r->spec = spec_fixture_parse(json);
    char err[256];
    r->be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(r->be);
    r->m = model_create(r->spec, r->be, N_SEQ, err, sizeof err);
    if (!r->m)
        fail_msg("model_create: %s", err);
    dataset *d = &r->d;
    d->n = N_SEQ;
    d->features = steps;
    d->shape = (spec_shape){2, {steps, 1, 1}};
    d->num_classes = CLASSES;
    d->label_steps = per_step ? steps : 1;
    d->x = calloc((size_t)(N_SEQ * steps), sizeof *d->x);
    d->y = calloc((size_t)(N_SEQ * d->label_steps), sizeof *d->y);
    d->len = calloc(N_SEQ, sizeof *d->len);
    assert_true(d->x && d->y && d->len);
    rng g = rng_make(23, 0);
    for (int n = 0; n < N_SEQ; n++) {
        d->len[n] = LENGTHS[n];
        for (int t = 0; t < T_SHORT; t++) {
            float id = (float)(1 + (int)(rng_uniform(&g) * (VOCAB - 1)));
            int32_t label = (int32_t)(rng_uniform(&g) * CLASSES) % CLASSES;
            bool real = t < LENGTHS[n];
            d->x[n * steps + t] = real ? id : 0.0f;
            if (per_step)
                d->y[n * steps + t] = real ? label : -1;
            else if (t == 0)
                d->y[n] = label;
        }
        for (int t = T_SHORT; per_step && t < steps; t++)
            d->y[n * steps + t] = -1;
    }
    return r;
}

static void run_free(run *r)
{
    model_free(r->m);
    r->be->destroy(r->be);
    spec_free(r->spec);
    free(r->d.x);
    free(r->d.y);
    free(r->d.len);
    free(r);
}

/* Forward, loss and backward of the whole batch: the mean loss. */
static double run_step(run *r)
{
    char err[256];
    if (model_load_range(r->m, &r->d, 0, N_SEQ, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    model_forward(r->m, N_SEQ, true, 0);
    double loss = model_loss(r->m, N_SEQ, NULL) / (double)model_loss_terms(r->m, N_SEQ);
    model_backward(r->m, N_SEQ);
    return loss;
}

/* Largest |a - b| / (1 + |b|) over n floats. */
static double max_rel_diff(const float *a, const float *b, long n)
{
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        if (!(d <= worst))
            worst = d;
    }
    return worst;
}

/* The job at T_LONG run at 7 steps against the same job made to run
 * every batch at T_LONG (what it did before batch_steps.c): the same
 * loss, outputs and gradients, to the bit. */
static void check_same_as_padded(const char *job, bool per_step, const run *lo,
                                 double loss_lo)
{
    run *full = run_make(job, T_LONG, per_step);
    full->m->short_steps = false;
    model_set_params(full->m, lo->m->params);
    double loss_full = run_step(full);
    assert_int_equal(full->m->batch_steps, T_LONG);
    assert_true(loss_full == loss_lo);
    assert_memory_equal(full->m->output, lo->m->output,
                        (size_t)N_SEQ * (size_t)lo->m->n_out * sizeof(float));
    long differ = 0;
    for (long i = 0; i < lo->m->n_params; i++)
        differ += full->m->grads[i] != lo->m->grads[i];
    print_message("against every batch at T = %d: %ld of %ld gradients differ\n", T_LONG,
                  differ, lo->m->n_params);
    assert_int_equal(differ, 0);
    run_free(full);
}

/* The job at T_LONG (batches at 7 steps) against the job at T_SHORT
 * (nothing to skip), from the same weights. */
static void check_same_as_full(const char *job, bool per_step)
{
    run *lo = run_make(job, T_LONG, per_step), *sh = run_make(job, T_SHORT, per_step);
    assert_true(lo->m->short_steps);
    assert_int_equal(lo->m->n_params, sh->m->n_params);
    char err[256];
    assert_int_equal(model_init_params(sh->m, 9, err, sizeof err), 0);
    model_set_params(lo->m, sh->m->params);
    double loss_lo = run_step(lo), loss_sh = run_step(sh);
    assert_int_equal(lo->m->batch_steps, T_SHORT);
    assert_int_equal(sh->m->batch_steps, T_SHORT);
    check_same_as_padded(job, per_step, lo, loss_lo);
    double dloss = fabs(loss_lo - loss_sh), dgrad = max_rel_diff(lo->m->grads, sh->m->grads,
                                                                 lo->m->n_params);
    /* What a trainer reads: one prediction a sample, or T_LONG rows of them
     * a sample whose first T_SHORT are the short model's. */
    double dout = 0.0;
    long per_lo = lo->m->n_out, per_sh = sh->m->n_out;
    for (int n = 0; n < N_SEQ; n++) {
        double d = max_rel_diff(lo->m->output + n * per_lo, sh->m->output + n * per_sh, per_sh);
        dout = d > dout ? d : dout;
        for (long i = per_sh; i < per_lo; i++)
            assert_true(lo->m->output[n * per_lo + i] == 0.0f);
    }
    print_message("loss %.9g vs %.9g (|d| %.3g), outputs %.3g, gradients %.3g apart\n",
                  loss_lo, loss_sh, dloss, dout, dgrad);
    /* The same computation but for a per-step loss's gradient scale,
     * rows / real steps with rows = N x max_length (model_loss_steps):
     * rounded differently for another max_length. */
    assert_true(dloss <= 1e-6 * fabs(loss_sh));
    assert_true(dout <= 1e-6);
    assert_true(dgrad <= 1e-5);
    double sum = 0.0;
    for (long i = 0; i < lo->m->n_params; i++)
        sum += fabs((double)lo->m->grads[i]);
    assert_true(sum > 0.0);
    run_free(lo);
    run_free(sh);
}

static void test_one_label_same_as_full(void **state)
{
    (void)state;
    check_same_as_full(ONE_LABEL_JOB, false);
}

static void test_per_step_same_as_full(void **state)
{
    (void)state;
    check_same_as_full(PER_STEP_JOB, true);
}

/* Batches of 2: the layers run each batch's longest length, not T. */
static void test_steps_run(void **state)
{
    (void)state;
    run *r = run_make(ONE_LABEL_JOB, T_LONG, false);
    char err[256];
    long want = 0;
    for (int first = 0; first < N_SEQ; first += 2) {
        assert_int_equal(model_load_range(r->m, &r->d, first, 2, err, sizeof err), 0);
        int most = LENGTHS[first] > LENGTHS[first + 1] ? LENGTHS[first] : LENGTHS[first + 1];
        assert_int_equal(r->m->batch_steps, most);
        want += 2L * most;
    }
    assert_int_equal(r->m->seq_steps_run, want);
    assert_true(want < (long)N_SEQ * T_LONG / 2);
    run_free(r);
}

static void test_flatten_runs_full(void **state)
{
    (void)state;
    run *r = run_make(FLATTEN_JOB, T_LONG, false);
    assert_false(r->m->short_steps);
    char err[256];
    assert_int_equal(model_load_range(r->m, &r->d, 0, N_SEQ, err, sizeof err), 0);
    assert_int_equal(r->m->batch_steps, T_LONG);
    assert_int_equal(r->m->seq_steps_run, (long)N_SEQ * T_LONG);
    run_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_label_same_as_full),
        cmocka_unit_test(test_per_step_same_as_full),
        cmocka_unit_test(test_steps_run),
        cmocka_unit_test(test_flatten_runs_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
