/* test_seq_steps.c — per-step outputs (data.per_step_labels, issue 28):
 * the masked softmax cross-entropy of a model whose last layer predicts
 * at every step. Its loss against a hand reference from the logits (mean
 * over real steps only), its parameter gradients against finite
 * differences with mixed lengths, padding steps adding no loss, gradient
 * or metric count whatever their labels, and a tiny character language
 * model (embedding -> lstm -> dense per step) whose loss falls well below
 * the unigram entropy of its text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "backend/rng.h"
#include "optim/optim.h"
#include "../layers/model_fixture.h"
#include "cpu/cpu.h"

#define VOCAB 7
#define T_MAX 6
#define N_SEQ 5
#define EPS 1e-3f

static const int32_t LENGTHS[N_SEQ] = {2, T_MAX, 4, 1, 5};

static const char *const STEP_JOB =
    "{\"model\": {\"input\": {\"tokens\": 7}, \"layers\": ["
    "{\"type\": \"embedding\", \"output_dim\": 4},"
    "{\"type\": \"lstm\", \"units\": 5, \"return_sequences\": true},"
    "{\"type\": \"dense\", \"units\": 7, \"activation\": \"softmax\"}]},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@t.npz\", \"num_classes\": 7,"
    " \"max_length\": 6, \"per_step_labels\": true},"
    " \"training\": {\"loss\": \"categorical_crossentropy\"}}";

typedef struct fixture {
    job_spec *spec;
    backend *be;
    model *m;
    dataset d;
} fixture;

/* A dataset of n sequences of `steps` ids with per-step labels (-1 at
 * padding, as data/sequence.c stores them). */
static void data_alloc(dataset *d, long n, int steps, int classes)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    d->features = steps;
    d->shape = (spec_shape){2, {steps, 1, 1}};
    d->num_classes = classes;
    d->label_steps = steps;
    d->x = calloc((size_t)(n * steps), sizeof *d->x);
    d->y = calloc((size_t)(n * steps), sizeof *d->y);
    d->len = calloc((size_t)n, sizeof *d->len);
    assert_non_null(d->x);
    assert_non_null(d->y);
    assert_non_null(d->len);
}

static void data_free(dataset *d)
{
    free(d->x);
    free(d->y);
    free(d->len);
}

static fixture *fixture_make(const char *json, int threads, int batch)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->m = model_fixture_open(json, threads, batch, 5, &f->spec, &f->be);
    return f;
}

static void fixture_free(fixture *f)
{
    model_free(f->m);
    f->be->destroy(f->be);
    spec_free(f->spec);
    data_free(&f->d);
    free(f);
}

/* Random ids and labels at real steps; padding ids 0, labels -1. */
static void step_data(dataset *d)
{
    data_alloc(d, N_SEQ, T_MAX, VOCAB);
    rng g = rng_make(17, 0);
    for (int n = 0; n < N_SEQ; n++) {
        d->len[n] = LENGTHS[n];
        for (int t = 0; t < T_MAX; t++) {
            bool real = t < LENGTHS[n];
            d->x[n * T_MAX + t] = real ? (float)(1 + (int)(rng_uniform(&g) * (VOCAB - 1))) : 0;
            d->y[n * T_MAX + t] = real ? (int32_t)(rng_uniform(&g) * VOCAB) % VOCAB : -1;
        }
    }
}

static long real_steps(void)
{
    long s = 0;
    for (int n = 0; n < N_SEQ; n++)
        s += LENGTHS[n];
    return s;
}

/* Mean loss over real steps of the whole set (one batch). */
static double step_loss(fixture *f, batch_metrics *bm)
{
    char err[256];
    int n = (int)f->d.n;
    if (model_load_range(f->m, &f->d, 0, n, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    model_forward(f->m, n, false, 0);
    double sum = model_loss(f->m, n, bm);
    return sum / (double)model_loss_terms(f->m, n);
}

/* The loss, the metric count and the probabilities against a reference
 * computed here from the last layer's logits: log-softmax in double,
 * -log p[label] averaged over the real steps (PyTorch's CrossEntropyLoss
 * with ignore_index at padding), argmax hits counted there only. */
static void test_loss_reference(void **state)
{
    (void)state;
    fixture *f = fixture_make(STEP_JOB, 1, N_SEQ);
    step_data(&f->d);
    model *m = f->m;
    assert_int_equal(m->out_steps, T_MAX);
    assert_int_equal(m->classes, VOCAB);
    assert_int_equal(m->n_out, T_MAX * VOCAB);
    batch_metrics bm;
    double loss = step_loss(f, &bm);
    assert_int_equal(model_loss_terms(m, N_SEQ), real_steps());
    const float *z = m->layers[m->n_layers - 1].y;
    double ref = 0.0, correct = 0.0;
    for (int n = 0; n < N_SEQ; n++)
        for (int t = 0; t < T_MAX; t++) {
            const float *row = z + ((long)n * T_MAX + t) * VOCAB;
            const float *p = m->output + ((long)n * T_MAX + t) * VOCAB;
            if (t >= LENGTHS[n]) {
                for (int c = 0; c < VOCAB; c++)
                    assert_true(p[c] == 0.0f);
                continue;
            }
            double mx = row[0], sum = 0.0;
            int best = 0;
            for (int c = 1; c < VOCAB; c++)
                if (row[c] > mx) {
                    mx = row[c];
                    best = c;
                }
            for (int c = 0; c < VOCAB; c++)
                sum += exp(row[c] - mx);
            int label = f->d.y[n * T_MAX + t];
            ref -= row[label] - mx - log(sum);
            correct += best == label;
            for (int c = 0; c < VOCAB; c++)
                assert_true(fabs(p[c] - exp(row[c] - mx) / sum) < 1e-6);
        }
    ref /= (double)real_steps();
    if (fabs(loss - ref) > 1e-6 * fabs(ref))
        fail_msg("loss %.9g, reference %.9g", loss, ref);
    assert_true(bm.correct == correct);
    batch_metrics sums = bm;
    assert_true(fabs(model_metric(&sums, (double)real_steps(), METRIC_ACCURACY, VOCAB) -
                     correct / (double)real_steps()) < 1e-12);
    fixture_free(f);
}

/* Every parameter's gradient of the mean loss over real steps against
 * central differences, on one and two threads; the output gradient is zero
 * at every padding step. */
static void test_gradients(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        fixture *f = fixture_make(STEP_JOB, threads, N_SEQ);
        step_data(&f->d);
        model *m = f->m;
        step_loss(f, NULL);
        model_backward(m, N_SEQ);
        const float *dy = m->layers[m->n_layers - 1].dy;
        for (int n = 0; n < N_SEQ; n++)
            for (int t = LENGTHS[n]; t < T_MAX; t++)
                for (int c = 0; c < VOCAB; c++)
                    assert_true(dy[((long)n * T_MAX + t) * VOCAB + c] == 0.0f);
        float *g = malloc((size_t)m->n_params * sizeof *g);
        assert_non_null(g);
        memcpy(g, m->grads, (size_t)m->n_params * sizeof *g);
        double gmax = 0.0;
        for (long i = 0; i < m->n_params; i++) {
            float saved = m->params[i];
            m->params[i] = saved + EPS;
            double lp = step_loss(f, NULL);
            m->params[i] = saved - EPS;
            double lm = step_loss(f, NULL);
            m->params[i] = saved;
            double num = (lp - lm) / (2.0 * EPS);
            gmax = fmax(gmax, fabs(num));
            if (fabs(num - g[i]) > 1e-3 + 2e-2 * fabs(num))
                fail_msg("threads %d param %ld: analytic %.6g, numeric %.6g", threads, i,
                         (double)g[i], num);
        }
        assert_true(gmax > 1e-2);
        free(g);
        fixture_free(f);
    }
}

/* Labels and ids at padding steps never matter: the same bits of loss,
 * metrics and gradients with garbage there. */
static void test_padding_ignored(void **state)
{
    (void)state;
    fixture *f = fixture_make(STEP_JOB, 2, N_SEQ);
    step_data(&f->d);
    model *m = f->m;
    batch_metrics b0, b1;
    double clean = step_loss(f, &b0);
    model_backward(m, N_SEQ);
    float *g = malloc((size_t)m->n_params * sizeof *g);
    assert_non_null(g);
    memcpy(g, m->grads, (size_t)m->n_params * sizeof *g);
    for (int n = 0; n < N_SEQ; n++)
        for (int t = LENGTHS[n]; t < T_MAX; t++) {
            f->d.x[n * T_MAX + t] = (float)(3 + n);
            f->d.y[n * T_MAX + t] = 0;
        }
    double dirty = step_loss(f, &b1);
    model_backward(m, N_SEQ);
    assert_memory_equal(&clean, &dirty, sizeof clean);
    assert_memory_equal(&b0, &b1, sizeof b0);
    assert_memory_equal(g, m->grads, (size_t)m->n_params * sizeof *g);
    /* A real step's label must be a class. */
    f->d.y[1 * T_MAX + 2] = VOCAB;
    char err[256] = "";
    assert_int_equal(model_load_range(m, &f->d, 0, N_SEQ, err, sizeof err), -1);
    assert_non_null(strstr(err, "sample 1 step 2: label 7 out of range [0, 7)"));
    free(g);
    fixture_free(f);
}

#define LM_T 16
#define LM_N 48

static const char *const LM_JOB =
    "{\"model\": {\"input\": {\"tokens\": 16}, \"layers\": ["
    "{\"type\": \"embedding\", \"output_dim\": 16},"
    "{\"type\": \"lstm\", \"units\": 32, \"return_sequences\": true},"
    "{\"type\": \"dense\", \"units\": 16, \"activation\": \"softmax\"}]},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@t.npz\", \"num_classes\": 16,"
    " \"max_length\": 16, \"per_step_labels\": true},"
    " \"training\": {\"loss\": \"categorical_crossentropy\","
    " \"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.02}}}";

/* A character language model on a text with structure beyond its letter
 * counts (words repeat in order): windows of LM_T characters, the next
 * character the target at every step, as data.format "text" cuts them.
 * After a few epochs its mean loss is well below the text's unigram
 * entropy, which is all a model blind to the context could reach. */
static void test_char_lm_learns(void **state)
{
    (void)state;
    static const char text[] = "the cat sat on the mat and the dog ate the hat ";
    int L = (int)strlen(text);
    char alphabet[32] = "";
    int ids[128];
    int V = 0;
    for (int i = 0; i < L; i++) {
        char *at = strchr(alphabet, text[i]);
        if (!at) {
            alphabet[V] = text[i];
            at = &alphabet[V++];
        }
        ids[i] = (int)(at - alphabet);
    }
    assert_true(V <= 16);
    double counts[16] = {0}, unigram = 0.0;
    for (int i = 0; i < L; i++)
        counts[ids[i]] += 1.0;
    for (int v = 0; v < V; v++)
        if (counts[v] > 0)
            unigram -= counts[v] / L * log(counts[v] / L);
    fixture *f = fixture_make(LM_JOB, 2, LM_N);
    data_alloc(&f->d, LM_N, LM_T, 16);
    for (int n = 0; n < LM_N; n++) {
        f->d.len[n] = LM_T;
        for (int t = 0; t < LM_T; t++) {
            int at = (n * 5 + t) % L;
            f->d.x[n * LM_T + t] = (float)ids[at];
            f->d.y[n * LM_T + t] = ids[(at + 1) % L];
        }
    }
    optimizer *opt = optim_create(&f->spec->training.optimizer, f->m->n_params);
    assert_non_null(opt);
    double first = step_loss(f, NULL);
    char err[256];
    for (int step = 0; step < 150; step++) {
        assert_int_equal(model_load_range(f->m, &f->d, 0, LM_N, err, sizeof err), 0);
        model_forward(f->m, LM_N, true, (uint64_t)step);
        model_loss(f->m, LM_N, NULL);
        model_backward_step(f->m, LM_N, opt, 0.02f);
    }
    batch_metrics bm;
    double last = step_loss(f, &bm);
    double acc = model_metric(&bm, (double)LM_N * LM_T, METRIC_ACCURACY, 16);
    print_message("char lm: loss %.3f -> %.3f nats, unigram entropy %.3f, accuracy %.3f\n",
                  first, last, unigram, acc);
    assert_true(acc > 0.8);
    if (!(last < 0.5 * unigram))
        fail_msg("loss %g -> %g: not below half the unigram entropy %g", first, last, unigram);
    optim_free(opt);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_reference),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_padding_ignored),
        cmocka_unit_test(test_char_lm_learns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
