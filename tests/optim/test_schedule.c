/* test_schedule.c — each PyDTNN callback over a scripted sequence of epoch
 * metrics: warm-up rates, plateau reductions after patience and the min_lr
 * floor, every-n reductions, the early-stopping epoch, checkpoint epochs,
 * the val_X -> X fallback, and a copied state resuming identically. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "optim/schedule.h"

static spec_training training(double lr)
{
    spec_training t;
    memset(&t, 0, sizeof t);
    t.epochs = 20;
    t.optimizer.name = OPT_ADAM;
    t.optimizer.learning_rate = lr;
    return t;
}

static spec_schedule *add(spec_training *t, spec_schedule_kind kind, const char *monitor)
{
    spec_schedule *s = &t->schedules[t->n_schedules++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    snprintf(s->monitor, sizeof s->monitor, "%s", monitor);
    s->factor = 0.1;
    s->every_epochs = 1;
    s->nepochs = 5;
    s->warmup_epochs = 5;
    return s;
}

/* An epoch's values. NAN for a name leaves it out (no validation set). */
static epoch_metrics metrics(double loss, double acc, double val_loss, double val_acc)
{
    epoch_metrics m = { .n = 0 };
    const char *names[] = { "loss", "accuracy", "val_loss", "val_accuracy" };
    double values[] = { loss, acc, val_loss, val_acc };
    for (int i = 0; i < 4; i++) {
        if (isnan(values[i]))
            continue;
        m.names[m.n] = names[i];
        m.values[m.n++] = values[i];
    }
    return m;
}

static epoch_metrics val_loss_only(double v)
{
    return metrics(NAN, NAN, v, NAN);
}

static void test_warm_up_ramp(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *w = add(&t, SCHED_WARM_UP, "");
    w->warmup_epochs = 4;
    w->init_lr = 0.01;
    schedule_state st;
    schedule_init(&st, &t);
    /* init_lr at epoch 0, a linear ramp, base_lr from epoch 4 on. */
    const double want[] = { 0.01, 0.0325, 0.055, 0.0775, 0.1, 0.1, 0.1 };
    for (int e = 0; e < 7; e++) {
        double lr = schedule_epoch_begin(&st, &t, e);
        assert_float_equal(lr, want[e], 1e-12);
        assert_float_equal(st.lr, want[e], 1e-12);
        epoch_metrics m = metrics(1.0, 0.5, NAN, NAN);
        assert_false(schedule_epoch_end(&st, &t, e, &m));
    }
    assert_false(st.stop);
}

static void test_no_schedules_keeps_rate(void **state)
{
    (void)state;
    spec_training t = training(0.003);
    schedule_state st;
    schedule_init(&st, &t);
    for (int e = 0; e < 5; e++) {
        assert_float_equal(schedule_epoch_begin(&st, &t, e), 0.003, 0);
        epoch_metrics m = metrics(1.0 + e, 0.5, 2.0 + e, 0.4);
        assert_false(schedule_epoch_end(&st, &t, e, &m));
    }
    assert_false(st.stop);
}

/* Runs a val_loss script; returns the rate before each epoch in lrs[]. */
static void run_script(schedule_state *st, const spec_training *t, const double *vals, int n,
                       double *lrs, bool *saved)
{
    schedule_init(st, t);
    for (int e = 0; e < n; e++) {
        lrs[e] = schedule_epoch_begin(st, t, e);
        epoch_metrics m = val_loss_only(vals[e]);
        bool s = schedule_epoch_end(st, t, e, &m);
        if (saved)
            saved[e] = s;
    }
}

static void test_plateau_patience_and_floor(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *p = add(&t, SCHED_REDUCE_LR_ON_PLATEAU, "val_loss");
    p->patience = 2;
    p->factor = 0.5;
    p->min_lr = 0.02;
    /* 2 epochs without a new best -> halve; an improvement resets the
     * count; 0.025 is clamped to 0.02, and nothing goes below. */
    const double vals[] = { 1.0, 0.9, 0.95, 0.95, 0.8, 0.85, 0.85, 0.9, 0.9, 0.9, 0.9, 0.9 };
    const double want[] = { 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02, 0.02 };
    double lrs[12];
    schedule_state st;
    run_script(&st, &t, vals, 12, lrs, NULL);
    for (int e = 0; e < 12; e++) {
        if (fabs(lrs[e] - want[e]) > 1e-12)
            fail_msg("epoch %d: lr %.6g, expected %.6g", e, lrs[e], want[e]);
    }
    assert_float_equal(st.lr, 0.02, 1e-12);
    assert_float_equal(st.best[0], 0.8, 0);
    assert_int_equal(st.best_epoch[0], 4);
    assert_false(st.stop);
}

static void test_plateau_accuracy_and_min_delta(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *p = add(&t, SCHED_REDUCE_LR_ON_PLATEAU, "val_accuracy");
    p->patience = 2;
    p->min_delta = 0.01;
    schedule_state st;
    schedule_init(&st, &t);
    /* Accuracy improves upwards; +0.005 is below min_delta and does not
     * count, so epochs 1 and 2 are both stale and the rate drops after 2. */
    const double acc[] = { 0.50, 0.505, 0.509, 0.70, 0.69 };
    const double want[] = { 0.1, 0.1, 0.1, 0.01, 0.01 };
    for (int e = 0; e < 5; e++) {
        assert_float_equal(schedule_epoch_begin(&st, &t, e), want[e], 1e-12);
        epoch_metrics m = metrics(1.0, 0.9, 1.0, acc[e]);
        schedule_epoch_end(&st, &t, e, &m);
    }
    assert_float_equal(st.best[0], 0.70, 0);
    assert_int_equal(st.wait[0], 1);
}

static void test_plateau_val_falls_back_to_train(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *p = add(&t, SCHED_REDUCE_LR_ON_PLATEAU, "val_loss");
    p->patience = 1;
    schedule_state st;
    schedule_init(&st, &t);
    /* No validation values: "val_loss" reads "loss". */
    epoch_metrics m0 = metrics(1.0, 0.5, NAN, NAN);
    epoch_metrics m1 = metrics(1.5, 0.5, NAN, NAN);
    schedule_epoch_end(&st, &t, 0, &m0);
    assert_float_equal(st.best[0], 1.0, 0);
    schedule_epoch_end(&st, &t, 1, &m1);
    assert_float_equal(st.lr, 0.01, 1e-12);

    /* A monitor found under neither name leaves the callback idle. */
    spec_training u = training(0.1);
    p = add(&u, SCHED_REDUCE_LR_ON_PLATEAU, "val_mae");
    p->patience = 0;
    schedule_init(&st, &u);
    for (int e = 0; e < 4; e++) {
        epoch_metrics m = metrics(1.0 + e, 0.5, 1.0 + e, 0.5);
        schedule_epoch_end(&st, &u, e, &m);
    }
    assert_float_equal(st.lr, 0.1, 0);
    assert_int_equal(st.best_epoch[0], -1);
}

static void test_every_nepochs(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *r = add(&t, SCHED_REDUCE_LR_EVERY_NEPOCHS, "");
    r->nepochs = 2;
    r->factor = 0.5;
    r->min_lr = 0.03;
    schedule_state st;
    schedule_init(&st, &t);
    /* Halved after epochs 2, 4, 6 (counted from 1), floored at 0.03. */
    const double want[] = { 0.1, 0.1, 0.05, 0.05, 0.03, 0.03, 0.03, 0.03 };
    for (int e = 0; e < 8; e++) {
        assert_float_equal(schedule_epoch_begin(&st, &t, e), want[e], 1e-12);
        epoch_metrics m = metrics(1.0, 0.5, NAN, NAN);
        schedule_epoch_end(&st, &t, e, &m);
    }
}

static void test_early_stopping_epoch(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *s = add(&t, SCHED_EARLY_STOPPING, "val_loss");
    s->patience = 3;
    schedule_state st;
    schedule_init(&st, &t);
    /* Best at epoch 1; epochs 2, 3, 4 do not improve: stop after epoch 4. */
    const double vals[] = { 1.0, 0.9, 0.91, 0.9, 0.93, 0.5 };
    int stopped = -1;
    for (int e = 0; e < 6 && stopped < 0; e++) {
        schedule_epoch_begin(&st, &t, e);
        epoch_metrics m = val_loss_only(vals[e]);
        schedule_epoch_end(&st, &t, e, &m);
        if (st.stop)
            stopped = e;
    }
    assert_int_equal(stopped, 4);
    assert_int_equal(st.best_epoch[0], 1);
    assert_float_equal(st.best[0], 0.9, 0);
    /* The rate is untouched by early stopping. */
    assert_float_equal(st.lr, 0.1, 0);
}

static void test_early_stopping_accuracy_nan(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *s = add(&t, SCHED_EARLY_STOPPING, "accuracy");
    s->patience = 2;
    s->min_delta = 0.01;
    schedule_state st;
    schedule_init(&st, &t);
    /* Accuracy must rise by more than 0.01; a NaN never improves. */
    epoch_metrics m0 = metrics(1.0, 0.80, NAN, NAN);
    epoch_metrics m1 = metrics(1.0, 0.805, NAN, NAN);
    epoch_metrics m2 = metrics(1.0, 0.85, NAN, NAN);
    epoch_metrics m3 = metrics(NAN, NAN, NAN, NAN);
    m3.names[0] = "accuracy";
    m3.values[0] = NAN;
    m3.n = 1;
    schedule_epoch_end(&st, &t, 0, &m0);
    schedule_epoch_end(&st, &t, 1, &m1);
    assert_false(st.stop);
    schedule_epoch_end(&st, &t, 2, &m2);
    assert_false(st.stop);
    assert_int_equal(st.best_epoch[0], 2);
    schedule_epoch_end(&st, &t, 3, &m3);
    assert_false(st.stop);
    schedule_epoch_end(&st, &t, 4, &m3);
    assert_true(st.stop);
}

static void test_checkpoint_periodic(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *c = add(&t, SCHED_MODEL_CHECKPOINT, "");
    c->every_epochs = 2;
    const double vals[] = { 1.0, 1.1, 1.2, 1.3, 1.4, 1.5 };
    double lrs[6];
    bool saved[6];
    schedule_state st;
    run_script(&st, &t, vals, 6, lrs, saved);
    /* Every second epoch, improvement or not. */
    const bool want[] = { false, true, false, true, false, true };
    for (int e = 0; e < 6; e++)
        assert_int_equal(saved[e], want[e]);
}

static void test_checkpoint_on_improvement(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    add(&t, SCHED_MODEL_CHECKPOINT, "val_loss");
    const double vals[] = { 1.0, 1.1, 0.9, 0.9, 0.5, 0.7 };
    double lrs[6];
    bool saved[6];
    schedule_state st;
    run_script(&st, &t, vals, 6, lrs, saved);
    const bool want[] = { true, false, true, false, true, false };
    for (int e = 0; e < 6; e++)
        assert_int_equal(saved[e], want[e]);

    /* With every_epochs 2 it must improve AND be a second epoch: epoch 2
     * improves but is odd-numbered (3rd) so no save; epoch 3 improves on
     * the best (0.8 < 0.9) and is due. */
    t.schedules[0].every_epochs = 2;
    const double vals2[] = { 1.0, 1.1, 0.9, 0.8, 0.85, 0.7 };
    const bool want2[] = { false, false, false, true, false, true };
    run_script(&st, &t, vals2, 6, lrs, saved);
    for (int e = 0; e < 6; e++)
        assert_int_equal(saved[e], want2[e]);
}

/* Warm-up owns the rate: the every-n reduction due inside the ramp is
 * skipped, and a plateau that matures during warm-up applies right after. */
static void test_warm_up_with_reductions(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    spec_schedule *w = add(&t, SCHED_WARM_UP, "");
    w->warmup_epochs = 3;
    w->init_lr = 0.04;
    spec_schedule *p = add(&t, SCHED_REDUCE_LR_ON_PLATEAU, "val_loss");
    p->patience = 1;
    p->factor = 0.5;
    spec_schedule *r = add(&t, SCHED_REDUCE_LR_EVERY_NEPOCHS, "");
    r->nepochs = 2;
    r->factor = 0.1;
    /* Epoch 0 best; 1 stale (plateau due, but inside the ramp);
     * after epoch 2 the ramp ends: base 0.1, plateau halves to 0.05;
     * after epoch 3 the plateau is stale again (0.025) and 4 epochs are
     * done, so every-n cuts by 10: 0.0025. */
    const double vals[] = { 1.0, 1.0, 1.0, 1.0, 0.1 };
    const double want[] = { 0.04, 0.06, 0.08, 0.05, 0.0025 };
    double lrs[5];
    schedule_state st;
    run_script(&st, &t, vals, 5, lrs, NULL);
    for (int e = 0; e < 5; e++) {
        if (fabs(lrs[e] - want[e]) > 1e-12)
            fail_msg("epoch %d: lr %.6g, expected %.6g", e, lrs[e], want[e]);
    }
}

/* The state is plain data: a copy taken between epochs continues exactly
 * as the original (what --resume relies on). */
static void test_state_copy_resumes(void **state)
{
    (void)state;
    spec_training t = training(0.1);
    add(&t, SCHED_WARM_UP, "")->warmup_epochs = 2;
    t.schedules[0].init_lr = 0.01;
    spec_schedule *p = add(&t, SCHED_REDUCE_LR_ON_PLATEAU, "val_accuracy");
    p->patience = 1;
    add(&t, SCHED_EARLY_STOPPING, "val_loss")->patience = 4;
    add(&t, SCHED_MODEL_CHECKPOINT, "val_accuracy");
    const double loss[] = { 1.0, 0.8, 0.9, 0.95, 0.99, 0.97, 0.96, 0.99 };
    const double acc[] = { 0.5, 0.6, 0.55, 0.65, 0.6, 0.6, 0.7, 0.6 };
    schedule_state a, b;
    schedule_init(&a, &t);
    bool saved_a[8], saved_b[8];
    double lr_a[8], lr_b[8];
    for (int e = 0; e < 8; e++) {
        if (e == 3)
            memcpy(&b, &a, sizeof a);
        lr_a[e] = schedule_epoch_begin(&a, &t, e);
        epoch_metrics m = metrics(NAN, NAN, loss[e], acc[e]);
        saved_a[e] = schedule_epoch_end(&a, &t, e, &m);
    }
    for (int e = 3; e < 8; e++) {
        lr_b[e] = schedule_epoch_begin(&b, &t, e);
        epoch_metrics m = metrics(NAN, NAN, loss[e], acc[e]);
        saved_b[e] = schedule_epoch_end(&b, &t, e, &m);
        assert_memory_equal(&lr_a[e], &lr_b[e], sizeof(double));
        assert_int_equal(saved_a[e], saved_b[e]);
    }
    assert_memory_equal(&a, &b, sizeof a);
    /* And the run did something: rate reduced, checkpoints at the bests,
     * early stop after 4 epochs without a lower val_loss. */
    assert_true(a.lr < 0.1);
    assert_true(saved_a[3] && saved_a[6] && !saved_a[4]);
    assert_true(a.stop);
}

/* stop_at_loss: an accuracy stops at or above the threshold, a loss at or
 * below it; val_X falls back to X without a validation set. */
static void test_stop_at_loss(void **state)
{
    (void)state;
    static const struct {
        const char *metric;
        double threshold;
        int stop_epoch; /* 0-based epoch after which it stops */
        bool has_val;
    } cases[] = {
        {"val_accuracy", 0.7, 3, true},
        {"accuracy", 0.55, 2, true},
        {"val_loss", 0.6, 3, true},
        {"val_loss", 0.9, 1, false}, /* falls back to loss */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        spec_training t = training(0.01);
        snprintf(t.stop_metric, sizeof t.stop_metric, "%s", cases[i].metric);
        t.stop_threshold = cases[i].threshold;
        schedule_state st;
        schedule_init(&st, &t);
        int stopped = -1;
        for (int e = 0; e < 6 && stopped < 0; e++) {
            schedule_epoch_begin(&st, &t, e);
            double acc = 0.4 + 0.1 * e, loss = 1.0 - 0.15 * e;
            epoch_metrics m = cases[i].has_val ? metrics(loss, acc, loss - 0.05, acc + 0.05)
                                               : metrics(loss, acc, NAN, NAN);
            schedule_epoch_end(&st, &t, e, &m);
            if (st.stop)
                stopped = e;
        }
        if (stopped != cases[i].stop_epoch)
            fail_msg("%s %g: stopped after epoch %d, want %d", cases[i].metric,
                     cases[i].threshold, stopped, cases[i].stop_epoch);
    }
}

/* training.warm_up_batches: lr / N, 2 lr / N, ... lr over the first N
 * steps, then lr; off (0) leaves lr alone. */
static void test_step_warm_up(void **state)
{
    (void)state;
    spec_training t = training(0.5);
    t.warm_up_batches = 4;
    const float want[6] = {0.125f, 0.25f, 0.375f, 0.5f, 0.5f, 0.5f};
    for (uint64_t k = 0; k < 6; k++)
        assert_true(schedule_step_lr(&t, k, 0, 0.5f) == want[k]);
    t.warm_up_batches = 0;
    assert_true(schedule_step_lr(&t, 0, 0, 0.5f) == 0.5f);
}

/* nanoGPT's get_lr(it) (train.py), transcribed:
 *   if it < warmup_iters: return learning_rate * (it + 1) / (warmup_iters + 1)
 *   if it > lr_decay_iters: return min_lr
 *   decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
 *   coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
 *   return min_lr + coeff * (learning_rate - min_lr) */
static double nanogpt_lr(double it, double warm, double decay, double lr, double min_lr)
{
    if (it < warm)
        return lr * (it + 1) / (warm + 1);
    if (it > decay)
        return min_lr;
    double ratio = (it - warm) / (decay - warm);
    return min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (lr - min_lr);
}

/* The cosine schedule against nanoGPT's formula at chosen steps, the
 * hand-checkable points (first step, end of warm-up, half way, the end),
 * decay_steps defaulting to the run's steps, and the step count from a
 * position with gradient accumulation. */
static void test_step_cosine(void **state)
{
    (void)state;
    spec_training t = training(6e-4);
    spec_schedule *c = add(&t, SCHED_COSINE, "");
    c->warmup_steps = 10;
    c->decay_steps = 110;
    c->min_lr = 6e-5;
    const uint64_t at[] = {0, 1, 5, 9, 10, 11, 37, 60, 99, 109, 110, 111, 500};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        float got = schedule_step_lr(&t, at[i], 999, 6e-4f);
        double want = nanogpt_lr((double)at[i], 10, 110, (double)6e-4f, 6e-5);
        if (fabs(got - want) > 1e-6 * want)
            fail_msg("step %llu: %.9g, nanoGPT %.9g", (unsigned long long)at[i], got, want);
    }
    assert_float_equal(schedule_step_lr(&t, 0, 999, 6e-4f), 6e-4 / 11, 1e-10);
    assert_float_equal(schedule_step_lr(&t, 10, 999, 6e-4f), 6e-4, 1e-10);
    assert_float_equal(schedule_step_lr(&t, 60, 999, 6e-4f), (6e-4 + 6e-5) / 2, 1e-10);
    assert_float_equal(schedule_step_lr(&t, 110, 999, 6e-4f), 6e-5, 1e-10);
    c->decay_steps = 0; /* the run's 210 steps */
    assert_float_equal(schedule_step_lr(&t, 110, 210, 6e-4f), (6e-4 + 6e-5) / 2, 1e-10);
    assert_float_equal(schedule_step_lr(&t, 210, 210, 6e-4f), 6e-5, 1e-10);
    /* 10 micro-batches an epoch, 4 a step: steps of 4, 4, 2 -> 3 an epoch. */
    assert_int_equal(schedule_opt_steps(0, 3, 10, 4), 0);
    assert_int_equal(schedule_opt_steps(0, 4, 10, 4), 1);
    assert_int_equal(schedule_opt_steps(0, 9, 10, 4), 2);
    assert_int_equal(schedule_opt_steps(2, 5, 10, 4), 7);
    assert_int_equal(schedule_opt_steps(5, 0, 10, 4), 15);
    assert_int_equal(schedule_opt_steps(2, 5, 10, 1), 25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_up_ramp),
        cmocka_unit_test(test_no_schedules_keeps_rate),
        cmocka_unit_test(test_plateau_patience_and_floor),
        cmocka_unit_test(test_plateau_accuracy_and_min_delta),
        cmocka_unit_test(test_plateau_val_falls_back_to_train),
        cmocka_unit_test(test_every_nepochs),
        cmocka_unit_test(test_early_stopping_epoch),
        cmocka_unit_test(test_early_stopping_accuracy_nan),
        cmocka_unit_test(test_checkpoint_periodic),
        cmocka_unit_test(test_checkpoint_on_improvement),
        cmocka_unit_test(test_warm_up_with_reductions),
        cmocka_unit_test(test_state_copy_resumes),
        cmocka_unit_test(test_stop_at_loss),
        cmocka_unit_test(test_step_warm_up),
        cmocka_unit_test(test_step_cosine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
