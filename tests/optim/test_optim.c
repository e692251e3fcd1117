/* test_optim.c — each optimizer's first steps against the update rules
 * written out in double precision, hand-worked SGD, RMSprop and Nadam
 * numbers, decay, weight decay, blocked-versus-tail equality, a step split
 * into ranges equal to the whole step, and checkpoint state that resumes
 * bit-exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "optim/optim.h"

/* 19 = two full 8-wide blocks plus a 3-element tail. */
#define N 19
#define STEPS 3

static spec_optimizer cfg_default(spec_optimizer_name name, double lr)
{
    spec_optimizer c = {
        .name = name, .learning_rate = lr, .momentum = 0.0, .nesterov = false,
        .decay = 0.0, .rho = 0.9, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7,
        .weight_decay = 0.0,
    };
    return c;
}

/* Deterministic parameters and per-step gradients of both signs and
 * different magnitudes, one of them zero. */
static double param0(int i)
{
    return 0.5 + 0.1 * i - 0.07 * (i % 3);
}

static double grad_at(int step, int i)
{
    if (i == 7)
        return 0.0;
    return ((i % 2) ? -1.0 : 1.0) * (0.05 + 0.03 * i) * (1.0 + 0.5 * step);
}

static void fill_params(float *p)
{
    for (int i = 0; i < N; i++)
        p[i] = (float)param0(i);
}

static void fill_grads(float *g, int step)
{
    for (int i = 0; i < N; i++)
        g[i] = (float)grad_at(step, i);
}

/* The reference state: every update below follows the formula in its
 * optimizer's file, in double, element by element. */
typedef struct ref {
    double p[N], s1[N], s2[N];
    double m_schedule;
    long t;
} ref;

static void ref_init(ref *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < N; i++)
        r->p[i] = (float)param0(i); /* start from the same float values */
    r->m_schedule = 1.0;
}

static double ref_rate(const spec_optimizer *c, const ref *r)
{
    return c->learning_rate / (1.0 + c->decay * (double)r->t);
}

static void ref_step(const spec_optimizer *c, ref *r, int step)
{
    double lr = ref_rate(c, r);
    double t = (double)(r->t + 1);
    double mu_t = c->beta1 * (1.0 - 0.5 * pow(0.96, t * 0.004));
    double mu_n = c->beta1 * (1.0 - 0.5 * pow(0.96, (t + 1.0) * 0.004));
    double s_t = r->m_schedule * mu_t;
    for (int i = 0; i < N; i++) {
        double l2 = c->name == OPT_ADAMW ? 0.0 : c->weight_decay;
        double g = (double)(float)grad_at(step, i) + l2 * r->p[i];
        switch (c->name) {
        case OPT_SGD:
            if (c->momentum == 0.0) {
                r->p[i] -= lr * g;
            } else {
                r->s1[i] = c->momentum * r->s1[i] - lr * g;
                r->p[i] += c->nesterov ? c->momentum * r->s1[i] - lr * g : r->s1[i];
            }
            break;
        case OPT_RMSPROP:
            r->s1[i] = c->rho * r->s1[i] + (1.0 - c->rho) * g * g;
            r->p[i] -= lr * g / (sqrt(r->s1[i]) + c->epsilon);
            break;
        case OPT_ADAM: {
            r->s1[i] = c->beta1 * r->s1[i] + (1.0 - c->beta1) * g;
            r->s2[i] = c->beta2 * r->s2[i] + (1.0 - c->beta2) * g * g;
            double lr_t = lr * sqrt(1.0 - pow(c->beta2, t)) / (1.0 - pow(c->beta1, t));
            r->p[i] -= lr_t * r->s1[i] / (sqrt(r->s2[i]) + c->epsilon);
            break;
        }
        case OPT_NADAM: {
            double g_prime = g / (1.0 - s_t);
            r->s1[i] = c->beta1 * r->s1[i] + (1.0 - c->beta1) * g;
            double m_prime = r->s1[i] / (1.0 - s_t * mu_n);
            r->s2[i] = c->beta2 * r->s2[i] + (1.0 - c->beta2) * g * g;
            double v_prime = r->s2[i] / (1.0 - pow(c->beta2, t));
            double m_bar = (1.0 - mu_t) * g_prime + mu_n * m_prime;
            r->p[i] -= lr * m_bar / (sqrt(v_prime) + c->epsilon);
            break;
        }
        case OPT_ADAMW: { /* torch.optim.AdamW */
            r->p[i] *= 1.0 - lr * c->weight_decay;
            r->s1[i] = c->beta1 * r->s1[i] + (1.0 - c->beta1) * g;
            r->s2[i] = c->beta2 * r->s2[i] + (1.0 - c->beta2) * g * g;
            double denom = sqrt(r->s2[i]) / sqrt(1.0 - pow(c->beta2, t)) + c->epsilon;
            r->p[i] -= lr / (1.0 - pow(c->beta1, t)) * r->s1[i] / denom;
            break;
        }
        }
    }
    r->m_schedule = s_t;
    r->t++;
}

/* Runs STEPS steps of the engine's optimizer and of the reference, checking
 * the parameters after every step. The tolerance is a few float roundings
 * of values near 1; the updates themselves are 1e-2 .. 1e-1. */
static void check_against_reference(spec_optimizer c)
{
    float p[N], g[N];
    fill_params(p);
    ref r;
    ref_init(&r);
    optimizer *o = optim_create(&c, N);
    assert_non_null(o);
    for (int s = 0; s < STEPS; s++) {
        fill_grads(g, s);
        optim_step(o, p, g, N, (float)c.learning_rate);
        ref_step(&c, &r, s);
        for (int i = 0; i < N; i++) {
            if (fabs(p[i] - r.p[i]) > 2e-6) {
                fail_msg("optimizer %d step %d element %d: got %.9g, expected %.9g",
                         (int)c.name, s + 1, i, (double)p[i], r.p[i]);
            }
        }
        /* The update moved every element with a gradient. */
        assert_true(fabs(r.p[0] - param0(0)) > 1e-3);
    }
    assert_int_equal(optim_iterations(o), STEPS);
    optim_free(o);
}

static void test_sgd_plain_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    optimizer *o = optim_create(&c, 1);
    assert_non_null(o);
    assert_int_equal(optim_state_floats(o), 3); /* no slots without momentum */
    float p = 1.0f, g = 0.5f;
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 0.95f, 1e-7);
    g = -1.0f;
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 1.05f, 1e-7);
    optim_free(o);
}

static void test_sgd_momentum_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    c.momentum = 0.9;
    optimizer *o = optim_create(&c, 1);
    assert_non_null(o);
    float p = 1.0f, g = 0.5f;
    /* v = -0.05, p = 0.95; v = 0.9 * -0.05 - 0.05 = -0.095, p = 0.855;
     * v = 0.9 * -0.095 - 0.05 = -0.1355, p = 0.7195. */
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 0.95f, 1e-7);
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 0.855f, 1e-7);
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 0.7195f, 1e-7);
    optim_free(o);
}

static void test_sgd_nesterov_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    c.momentum = 0.9;
    c.nesterov = true;
    optimizer *o = optim_create(&c, 1);
    assert_non_null(o);
    float p = 1.0f, g = 0.5f;
    /* v = -0.05, p += 0.9 * -0.05 - 0.05 -> 0.905;
     * v = -0.095, p += 0.9 * -0.095 - 0.05 = -0.1355 -> 0.7695. */
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 0.905f, 1e-7);
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 0.7695f, 1e-7);
    optim_free(o);
}

static void test_sgd_decay_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    c.decay = 0.5;
    optimizer *o = optim_create(&c, 1);
    assert_non_null(o);
    float p = 0.0f, g = 1.0f;
    /* Rates 0.1, 0.1 / 1.5, 0.1 / 2: the first step is undecayed. */
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, -0.1f, 1e-7);
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, -0.1f - 0.1f / 1.5f, 1e-7);
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, -0.1f - 0.1f / 1.5f - 0.05f, 1e-7);
    optim_free(o);
}

static void test_weight_decay_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    c.weight_decay = 0.01;
    optimizer *o = optim_create(&c, 1);
    assert_non_null(o);
    /* g' = 0.5 + 0.01 * 2 = 0.52; p = 2 - 0.052 = 1.948. A zero gradient
     * still shrinks the weight: p = 1.948 * (1 - 0.001). */
    float p = 2.0f, g = 0.5f;
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 1.948f, 1e-6);
    g = 0.0f;
    optim_step(o, &p, &g, 1, 0.1f);
    assert_float_equal(p, 1.948f * 0.999f, 1e-6);
    optim_free(o);
}

/* Adam's first step is lr * g / (|g| + eps / sqrt(1 - beta2)): a step of
 * almost exactly lr against the gradient's sign, whatever its size. */
static void test_adam_first_step_is_lr_sized(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_ADAM, 0.01);
    optimizer *o = optim_create(&c, N);
    assert_non_null(o);
    float p[N], g[N];
    fill_params(p);
    fill_grads(g, 0);
    optim_step(o, p, g, N, 0.01f);
    for (int i = 0; i < N; i++) {
        double want = g[i] > 0 ? -0.01 : g[i] < 0 ? 0.01 : 0.0;
        assert_true(fabs((p[i] - (float)param0(i)) - want) < 1e-5);
    }
    optim_free(o);
}

/* RMSprop (rho 0.9, epsilon 1e-7, lr 0.01) on g = 0.5 and -2, twice.
 * Step 1: a = 0.1 g^2 = 0.025 and 0.4, sqrt(a) = |g| / sqrt(10), so the
 * step is lr * sqrt(10) = 0.0316227766 against the sign of g (epsilon
 * changes it by 2e-8 relative): p = 0.96837724, 1.03162277.
 * Step 2: a = 0.9 * 0.1 g^2 + 0.1 g^2 = 0.19 g^2, a step of
 * lr / sqrt(0.19) = 0.0229415734: p = 0.94543568, 1.05456434. */
static void test_rmsprop_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_RMSPROP, 0.01);
    optimizer *o = optim_create(&c, 2);
    assert_non_null(o);
    float p[2] = {1.0f, 1.0f}, g[2] = {0.5f, -2.0f};
    optim_step(o, p, g, 2, 0.01f);
    assert_float_equal(p[0], 0.96837724f, 1e-6);
    assert_float_equal(p[1], 1.03162277f, 1e-6);
    optim_step(o, p, g, 2, 0.01f);
    assert_float_equal(p[0], 0.94543568f, 1e-6);
    assert_float_equal(p[1], 1.05456434f, 1e-6);
    optim_free(o);
}

/* Nadam's first step (beta1 0.9, beta2 0.999, epsilon 1e-7, lr 0.01) on
 * g = 0.5 and -2. Keras's momentum schedule: mu_1 = 0.9 * (1 - 0.5 *
 * 0.96^0.004) = 0.450073474, mu_2 = 0.9 * (1 - 0.5 * 0.96^0.008) =
 * 0.450146935, S_1 = mu_1. So the raw gradient's weight (1 - mu_1) /
 * (1 - S_1) is 1 and the moment's mu_2 / (1 - S_1 * mu_2) = 0.564517784.
 * m = 0.1 g and sqrt(v / (1 - beta2)) = sqrt(0.001 g^2 / 0.001) = |g|, so
 * m_bar = g * (1 + 0.0564517784) and the step is lr * 1.0564517784 =
 * 0.0105645178 against the sign of g: p = 0.98943548, 1.01056452. */
static void test_nadam_first_step_by_hand(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_NADAM, 0.01);
    optimizer *o = optim_create(&c, 2);
    assert_non_null(o);
    float p[2] = {1.0f, 1.0f}, g[2] = {0.5f, -2.0f};
    optim_step(o, p, g, 2, 0.01f);
    assert_float_equal(p[0], 0.98943548f, 1e-6);
    assert_float_equal(p[1], 1.01056452f, 1e-6);
    optim_free(o);
}

static void test_sgd_reference(void **state)
{
    (void)state;
    check_against_reference(cfg_default(OPT_SGD, 0.1));
}

static void test_sgd_momentum_reference(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    c.momentum = 0.9;
    c.decay = 0.1;
    c.weight_decay = 0.05;
    check_against_reference(c);
    c.nesterov = true;
    check_against_reference(c);
}

static void test_rmsprop_reference(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_RMSPROP, 0.01);
    check_against_reference(c);
    c.rho = 0.5;
    c.decay = 0.2;
    c.weight_decay = 0.1;
    check_against_reference(c);
}

static void test_adam_reference(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_ADAM, 0.05);
    check_against_reference(c);
    c.beta1 = 0.5;
    c.beta2 = 0.9;
    c.epsilon = 1e-3;
    c.weight_decay = 0.01;
    check_against_reference(c);
}

static void test_nadam_reference(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_NADAM, 0.05);
    check_against_reference(c);
    c.beta1 = 0.8;
    c.decay = 0.1;
    c.weight_decay = 0.01;
    check_against_reference(c);
}

static void test_adamw_reference(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_ADAMW, 0.05);
    c.epsilon = 1e-8;
    c.weight_decay = 0.1;
    check_against_reference(c);
    c.beta1 = 0.5;
    c.epsilon = 1e-3; /* where eps's bias correction shows */
    c.decay = 0.1;
    check_against_reference(c);
}

/* adamw with decay ranges: each element moves to the bit as under an
 * optimizer decaying everything (inside a range) or nothing (outside),
 * whole or stepped in parts cutting across the ranges. */
static void test_adamw_decay_ranges(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_ADAMW, 0.05);
    c.weight_decay = 0.2;
    spec_optimizer none = c;
    none.weight_decay = 0.0;
    const long ranges[] = {2, 7, 10, 19};
    optimizer *masked = optim_create(&c, N), *split = optim_create(&c, N);
    optimizer *all = optim_create(&c, N), *nodecay = optim_create(&none, N);
    assert_non_null(masked);
    assert_non_null(split);
    assert_non_null(all);
    assert_non_null(nodecay);
    assert_int_equal(optim_set_decay_ranges(masked, ranges, 2), 0);
    assert_int_equal(optim_set_decay_ranges(split, ranges, 2), 0);
    float pm[N], ps[N], pa[N], pn[N], g[N];
    fill_params(pm);
    fill_params(ps);
    fill_params(pa);
    fill_params(pn);
    for (int s = 0; s < STEPS; s++) {
        fill_grads(g, s);
        optim_step(masked, pm, g, N, 0.05f);
        optim_step(all, pa, g, N, 0.05f);
        optim_step(nodecay, pn, g, N, 0.05f);
        optim_step_range(split, ps, g, 5, 12, 0.05f);
        optim_step_range(split, ps, g, 0, 5, 0.05f);
        optim_step_range(split, ps, g, 12, N, 0.05f);
        optim_step_end(split);
    }
    for (int i = 0; i < N; i++) {
        bool in = (i >= 2 && i < 7) || i >= 10;
        assert_memory_equal(&pm[i], in ? &pa[i] : &pn[i], sizeof(float));
        assert_memory_equal(&ps[i], &pm[i], sizeof(float));
    }
    assert_true(fabs(pa[3] - pn[3]) > 1e-4); /* the decay did something */
    optim_free(masked);
    optim_free(split);
    optim_free(all);
    optim_free(nodecay);
}

/* training.clip_norm: a gradient above the bound comes out with exactly
 * the bound's norm and its direction; one below is untouched. */
static void test_clip_norm(void **state)
{
    (void)state;
    float g[N], h[N];
    fill_grads(g, 1);
    memcpy(h, g, sizeof g);
    double norm = optim_grad_norm(g, N);
    assert_true(norm > 0.5);
    assert_float_equal(optim_clip_norm(g, N, 0.5), norm, 0.0);
    assert_float_equal(optim_grad_norm(g, N), 0.5, 1e-6 * 0.5);
    for (int i = 0; i < N; i++)
        assert_float_equal(g[i], h[i] * 0.5 / norm, 1e-7);
    memcpy(g, h, sizeof g);
    optim_clip_norm(g, N, 2.0 * norm);
    assert_memory_equal(g, h, sizeof g);
    assert_true(optim_clip_norm(g, N, 0.0) == 0.0); /* off */
    assert_memory_equal(g, h, sizeof g);
}

/* training.grad_accum_steps: the group's mean after k micro-batches, a
 * partial group's mean on demand, and k = 1 passing gradients through. */
static void test_grad_accum(void **state)
{
    (void)state;
    grad_accum a;
    float g1[N], g2[N], g3[N];
    fill_grads(g1, 0);
    fill_grads(g2, 1);
    fill_grads(g3, 2);
    assert_int_equal(grad_accum_init(&a, N, 2), 0);
    assert_null(grad_accum_add(&a, g1));
    float *m = grad_accum_add(&a, g2);
    assert_non_null(m);
    for (int i = 0; i < N; i++)
        assert_true(m[i] == (g1[i] + g2[i]) * 0.5f);
    assert_null(grad_accum_mean(&a)); /* nothing pending */
    assert_null(grad_accum_add(&a, g3));
    m = grad_accum_mean(&a);
    assert_non_null(m);
    assert_memory_equal(m, g3, sizeof g3);
    grad_accum_free(&a);
    assert_int_equal(grad_accum_init(&a, N, 1), 0);
    assert_ptr_equal(grad_accum_add(&a, g1), g1);
    grad_accum_free(&a);
}

/* The 8-wide blocks and the scalar tail must agree to the bit: element i
 * of a long vector (inside a block) moves exactly as a lone element does
 * (always in the tail). */
static void test_block_equals_tail(void **state)
{
    (void)state;
    spec_optimizer_name names[] = { OPT_SGD, OPT_RMSPROP, OPT_ADAM, OPT_NADAM, OPT_ADAMW };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        spec_optimizer c = cfg_default(names[k], 0.01);
        c.momentum = 0.9;
        c.nesterov = true;
        c.weight_decay = 0.01;
        float p[N], g[N];
        fill_params(p);
        optimizer *all = optim_create(&c, N);
        assert_non_null(all);
        optimizer *one[N];
        float lone[N];
        for (int i = 0; i < N; i++) {
            one[i] = optim_create(&c, 1);
            assert_non_null(one[i]);
            lone[i] = p[i];
        }
        for (int s = 0; s < STEPS; s++) {
            fill_grads(g, s);
            optim_step(all, p, g, N, 0.01f);
            for (int i = 0; i < N; i++)
                optim_step(one[i], &lone[i], &g[i], 1, 0.01f);
        }
        for (int i = 0; i < N; i++) {
            assert_memory_equal(&p[i], &lone[i], sizeof(float));
            optim_free(one[i]);
        }
        optim_free(all);
    }
}

/* Save after 3 steps, load into a fresh optimizer, and both continue to
 * the same bits as an optimizer that never stopped. */
static void check_resume(spec_optimizer c)
{
    float p[N], g[N];
    fill_params(p);
    optimizer *a = optim_create(&c, N);
    assert_non_null(a);
    for (int s = 0; s < STEPS; s++) {
        fill_grads(g, s);
        optim_step(a, p, g, N, (float)c.learning_rate);
    }
    long nf = optim_state_floats(a);
    float *saved = malloc((size_t)nf * sizeof(float));
    assert_non_null(saved);
    optim_state_save(a, saved);
    for (long i = 0; i < nf; i++)
        assert_true(isfinite(saved[i]));
    float q[N];
    memcpy(q, p, sizeof p);

    optimizer *b = optim_create(&c, N);
    assert_non_null(b);
    assert_true(optim_state_valid(b, saved, nf));
    optim_state_load(b, saved);
    assert_int_equal(optim_iterations(b), STEPS);
    for (int s = STEPS; s < 2 * STEPS; s++) {
        fill_grads(g, s);
        optim_step(a, p, g, N, (float)c.learning_rate);
        optim_step(b, q, g, N, (float)c.learning_rate);
    }
    assert_memory_equal(p, q, sizeof p);
    float *sa = malloc((size_t)nf * sizeof(float));
    float *sb = malloc((size_t)nf * sizeof(float));
    assert_non_null(sa);
    assert_non_null(sb);
    optim_state_save(a, sa);
    optim_state_save(b, sb);
    assert_memory_equal(sa, sb, (size_t)nf * sizeof(float));
    free(sa);
    free(sb);
    free(saved);
    optim_free(a);
    optim_free(b);
}

static void test_state_resume_bit_exact(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_SGD, 0.1);
    c.momentum = 0.9;
    c.decay = 0.01;
    check_resume(c);
    check_resume(cfg_default(OPT_RMSPROP, 0.01));
    check_resume(cfg_default(OPT_ADAM, 0.01));
    check_resume(cfg_default(OPT_NADAM, 0.01));
    check_resume(cfg_default(OPT_ADAMW, 0.01));
}

static void test_state_layout(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_ADAM, 0.01);
    optimizer *o = optim_create(&c, N);
    assert_non_null(o);
    assert_int_equal(optim_state_floats(o), 3 + 2 * N);
    /* A count past 2^24 (where a float stops holding every integer)
     * survives the round trip. */
    long nf = optim_state_floats(o);
    float *buf = calloc((size_t)nf, sizeof(float));
    assert_non_null(buf);
    buf[0] = 5.0f;
    buf[1] = 3.0f; /* 3 * 2^24 + 5 */
    buf[2] = 1.0f;
    assert_true(optim_state_valid(o, buf, nf));
    optim_state_load(o, buf);
    assert_int_equal(optim_iterations(o), 3L * (1L << 24) + 5);
    float *out = calloc((size_t)nf, sizeof(float));
    assert_non_null(out);
    optim_state_save(o, out);
    assert_memory_equal(buf, out, (size_t)nf * sizeof(float));

    /* Wrong length, negative, fractional or NaN counts are refused, and
     * loading them anyway changes nothing. */
    assert_false(optim_state_valid(o, buf, nf - 1));
    buf[0] = -1.0f;
    assert_false(optim_state_valid(o, buf, nf));
    buf[0] = 2.5f;
    assert_false(optim_state_valid(o, buf, nf));
    buf[0] = NAN;
    assert_false(optim_state_valid(o, buf, nf));
    optim_state_load(o, buf);
    assert_int_equal(optim_iterations(o), 3L * (1L << 24) + 5);
    buf[0] = 0.0f;
    buf[2] = 2.0f; /* m_schedule only shrinks from 1 */
    assert_false(optim_state_valid(o, buf, nf));
    free(buf);
    free(out);
    optim_free(o);
}

static void test_create_edges(void **state)
{
    (void)state;
    spec_optimizer c = cfg_default(OPT_ADAM, 0.01);
    assert_null(optim_create(&c, -1));
    c.name = (spec_optimizer_name)42;
    assert_null(optim_create(&c, 4));
    /* A model without parameters still steps (and counts). */
    c = cfg_default(OPT_NADAM, 0.01);
    optimizer *o = optim_create(&c, 0);
    assert_non_null(o);
    optim_step(o, NULL, NULL, 0, 0.01f);
    assert_int_equal(optim_iterations(o), 1);
    assert_int_equal(optim_state_floats(o), 3);
    optim_free(o);
    optim_free(NULL);
}

/* A step split into ranges (as a threaded trainer runs it), the ranges in
 * reverse order and cutting blocks anywhere, gives optim_step's bits, for
 * every optimizer including Nadam's schedule and Keras's decay. */
static void test_ranges_equal_whole_step(void **state)
{
    (void)state;
    static const long cuts[] = {N, 13, 5, 4, 0};
    spec_optimizer cs[] = {cfg_default(OPT_SGD, 0.1), cfg_default(OPT_SGD, 0.1),
                           cfg_default(OPT_RMSPROP, 0.01), cfg_default(OPT_ADAM, 0.01),
                           cfg_default(OPT_NADAM, 0.01)};
    cs[1].momentum = 0.9;
    cs[1].nesterov = true;
    cs[3].decay = 0.1;
    cs[4].weight_decay = 0.01;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        float pw[N], pr[N], g[N];
        fill_params(pw);
        fill_params(pr);
        optimizer *whole = optim_create(&cs[k], N);
        optimizer *ranged = optim_create(&cs[k], N);
        assert_non_null(whole);
        assert_non_null(ranged);
        for (int s = 0; s < STEPS; s++) {
            fill_grads(g, s);
            optim_step(whole, pw, g, N, (float)cs[k].learning_rate);
            for (size_t c = 0; c + 1 < sizeof cuts / sizeof cuts[0]; c++)
                optim_step_range(ranged, pr, g, cuts[c + 1], cuts[c],
                                 (float)cs[k].learning_rate);
            optim_step_end(ranged);
            assert_memory_equal(pw, pr, sizeof pw);
        }
        long n_state = optim_state_floats(whole);
        float *sw = malloc((size_t)n_state * sizeof *sw);
        float *sr = malloc((size_t)n_state * sizeof *sr);
        assert_non_null(sw);
        assert_non_null(sr);
        optim_state_save(whole, sw);
        optim_state_save(ranged, sr);
        assert_memory_equal(sw, sr, (size_t)n_state * sizeof *sw);
        free(sw);
        free(sr);
        optim_free(whole);
        optim_free(ranged);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd_plain_by_hand),
        cmocka_unit_test(test_sgd_momentum_by_hand),
        cmocka_unit_test(test_sgd_nesterov_by_hand),
        cmocka_unit_test(test_sgd_decay_by_hand),
        cmocka_unit_test(test_weight_decay_by_hand),
        cmocka_unit_test(test_adam_first_step_is_lr_sized),
        cmocka_unit_test(test_rmsprop_by_hand),
        cmocka_unit_test(test_nadam_first_step_by_hand),
        cmocka_unit_test(test_sgd_reference),
        cmocka_unit_test(test_sgd_momentum_reference),
        cmocka_unit_test(test_rmsprop_reference),
        cmocka_unit_test(test_adam_reference),
        cmocka_unit_test(test_nadam_reference),
        cmocka_unit_test(test_adamw_reference),
        cmocka_unit_test(test_adamw_decay_ranges),
        cmocka_unit_test(test_clip_norm),
        cmocka_unit_test(test_grad_accum),
        cmocka_unit_test(test_block_equals_tail),
        cmocka_unit_test(test_ranges_equal_whole_step),
        cmocka_unit_test(test_state_resume_bit_exact),
        cmocka_unit_test(test_state_layout),
        cmocka_unit_test(test_create_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
