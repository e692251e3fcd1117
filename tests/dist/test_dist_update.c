/* test_dist_update.c — the asynchronous trainers' update rules
 * (engine/distributed/dist_async_update.h), which the worker's exchange and the
 * server's apply call, on hand-made vectors checked by hand against
 * dist-keras's workers and parameter servers (and the papers they
 * follow). Every value is a short binary fraction, so the float
 * arithmetic is exact and the checks are equalities. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "distributed/dist_async_update.h"

static void assert_floats(const float *got, const float *want, long n)
{
    for (long i = 0; i < n; i++) {
        if (got[i] != want[i])
            fail_msg("entry %ld: got %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    }
}

/* DOWNPOUR (Dean et al. 2012): a worker runs `window` local SGD steps from
 * the center it pulled and pushes the accumulated change, which the server
 * adds whole: the center moves by -lr * (g1 + g2 + g3). */
static void test_downpour_adds_accumulated_delta(void **state)
{
    (void)state;
    float center[3] = {1.0f, -2.0f, 0.5f};
    float anchor[3], x[3];
    const float lr = 0.5f;
    const float g[3][3] = {{1.0f, 0.25f, -2.0f}, {0.5f, -0.75f, 0.0f}, {-0.25f, 1.0f, 1.5f}};
    for (int i = 0; i < 3; i++)
        anchor[i] = x[i] = center[i];
    for (int step = 0; step < 3; step++)
        for (int i = 0; i < 3; i++)
            x[i] -= lr * g[step][i];
    float div = dist_update_residual_div(TRAINER_DOWNPOUR, 3);
    assert_true(div == 1.0f);
    float r[3];
    dist_update_residual(x, anchor, 3, div, r);
    const float want_r[3] = {-0.625f, -0.25f, 0.25f}; /* -lr * sum of g */
    assert_floats(r, want_r, 3);
    /* However stale, a downpour commit is applied in full. */
    assert_true(dist_update_scale(TRAINER_DOWNPOUR, 5) == 1.0f);
    dist_update_apply(center, r, 3, dist_update_scale(TRAINER_DOWNPOUR, 5));
    const float want_c[3] = {0.375f, -2.25f, 0.75f};
    assert_floats(center, want_c, 3);
}

/* ADAG (Hermans): the residual is divided by the communication window;
 * the other residual trainers do not divide. */
static void test_adag_divides_by_window(void **state)
{
    (void)state;
    float x[4] = {3.0f, -1.0f, 0.5f, 2.0f};
    const float anchor[4] = {1.0f, 1.0f, 0.5f, -2.0f};
    assert_true(dist_update_residual_div(TRAINER_ADAG, 4) == 4.0f);
    assert_true(dist_update_residual_div(TRAINER_DYNSGD, 4) == 1.0f);
    assert_true(dist_update_residual_div(TRAINER_ADAG, 0) == 1.0f); /* never divide by 0 */
    /* In place, as the worker computes it over its own parameters. */
    dist_update_residual(x, anchor, 4, dist_update_residual_div(TRAINER_ADAG, 4), x);
    const float want[4] = {0.5f, -0.5f, 0.0f, 1.0f};
    assert_floats(x, want, 4);
    float center[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    dist_update_apply(center, x, 4, dist_update_scale(TRAINER_ADAG, 3));
    const float want_c[4] = {0.5f, 0.5f, 2.0f, 4.0f};
    assert_floats(center, want_c, 4);
}

/* DynSGD (Jiang et al., SIGMOD 2017): a commit that arrives after
 * `staleness` other commits since the worker's pull counts 1/(s + 1). */
static void test_dynsgd_scales_by_staleness(void **state)
{
    (void)state;
    assert_true(dist_update_scale(TRAINER_DYNSGD, 0) == 1.0f);
    assert_true(dist_update_scale(TRAINER_DYNSGD, 1) == 0.5f);
    assert_true(dist_update_scale(TRAINER_DYNSGD, 3) == 0.25f);
    assert_true(dist_update_scale(TRAINER_DYNSGD, -2) == 1.0f); /* clock skew counts as fresh */
    for (int t = TRAINER_DOWNPOUR; t <= TRAINER_EAMSGD; t++)
        if (t != TRAINER_DYNSGD)
            assert_true(dist_update_scale((spec_trainer)t, 3) == 1.0f);
    float center[3] = {1.0f, 2.0f, 3.0f};
    const float r[3] = {4.0f, -8.0f, 0.5f};
    dist_update_apply(center, r, 3, dist_update_scale(TRAINER_DYNSGD, 3));
    const float want[3] = {2.0f, 0.0f, 3.125f};
    assert_floats(center, want, 3);
}

/* EASGD (Zhang, Choromanska, LeCun 2015), asynchronous form as dist-keras's
 * AEASGDWorker: alpha = rho * eta with eta the trainer's learning rate
 * (distributed.learning_rate), e = alpha (x - center); the worker moves by
 * -e and the center by +e, so their gap shrinks by (1 - 2 alpha). */
static void test_easgd_elastic_difference(void **state)
{
    (void)state;
    /* dist-keras's defaults, rho 5 and learning_rate 0.1: alpha 0.5. */
    assert_true(dist_update_alpha(0.1, 5.0) == 0.5f);
    float alpha = dist_update_alpha(0.125, 2.0);
    assert_true(alpha == 0.25f);
    const float x0[3] = {2.0f, -1.0f, 0.5f}, c0[3] = {1.0f, 1.0f, 0.5f};
    float x[3] = {x0[0], x0[1], x0[2]};
    float center[3] = {c0[0], c0[1], c0[2]};
    float x_new[3];
    /* e in place of x, as the worker computes it. */
    dist_update_elastic(x, center, 3, alpha, x, x_new);
    const float want_e[3] = {0.25f, -0.5f, 0.0f};
    const float want_x[3] = {1.75f, -0.5f, 0.5f};
    assert_floats(x, want_e, 3);
    assert_floats(x_new, want_x, 3);
    dist_update_apply(center, x, 3, dist_update_scale(TRAINER_AEASGD, 7));
    const float want_c[3] = {1.25f, 0.5f, 0.5f};
    assert_floats(center, want_c, 3);
    for (int i = 0; i < 3; i++)
        assert_true(x_new[i] - center[i] == (1.0f - 2.0f * alpha) * (x0[i] - c0[i]));
}

/* EAMSGD's local step: the worker optimizer steps from the look-ahead
 * x - m r (here SGD, rate 0.25, gradient 2: a step d of -0.5), then, as
 * dist-keras's EAMSGDWorker, r = m r - eta d and x -= r. */
static void test_eamsgd_momentum_step(void **state)
{
    (void)state;
    float x[2] = {1.0f, 2.0f};
    float r[2] = {0.5f, -1.0f};
    float ahead[2];
    dist_update_lookahead(x, r, 2, 0.5f, ahead);
    const float want_ahead[2] = {0.75f, 2.5f};
    assert_floats(ahead, want_ahead, 2);
    const float after[2] = {ahead[0] - 0.25f * 2.0f, ahead[1] - 0.25f * 2.0f};
    dist_update_momentum(x, r, ahead, after, 2, 0.5f, 0.5f);
    /* r = 0.5 r + 0.5 * 0.5; x -= r. */
    const float want_r[2] = {0.5f, -0.25f};
    const float want_x[2] = {0.5f, 2.25f};
    assert_floats(r, want_r, 2);
    assert_floats(x, want_x, 2);
}

/* dist-keras's EAMSGDWorker.optimize, line by line, for one step of SGD
 * (rate `sgd`) on f(w) = (w1^2 + w2^2) / 2 (gradient w), with the
 * look-ahead's sign as a parameter: dist-keras adds r_t = m r (sign +1). */
static void seed_eamsgd_step(float *W, float *r, float m, float lr, float sgd, float sign)
{
    for (int i = 0; i < 2; i++) {
        float r_t = m * r[i];
        float W_copy = W[i];
        float ahead = W[i] + sign * r_t;        /* W += r_t */
        float trained = ahead - sgd * ahead;    /* train_on_batch */
        float gradient = trained - ahead;       /* get_weights() - W */
        r[i] = r_t - lr * gradient;
        W[i] = W_copy - r[i];                   /* W_copy -= r */
    }
}

/* The look-ahead departs from dist-keras in its sign only (docs/distributed.md's
 * departures): on a 2-parameter quadratic, where the gradient depends on
 * where it is taken, the engine's rules give the seed's formula with x - m r,
 * and with the look-ahead at x + m r they give the seed's own numbers.
 * By hand, x = (1, 2), r = (0.5, -1), m = eta = 0.5, SGD rate 0.25:
 *   engine: ahead (0.75, 2.5), d = -0.25 ahead = (-0.1875, -0.625),
 *           r = (0.34375, -0.1875), x = (0.65625, 2.1875);
 *   seed:   ahead (1.25, 1.5), d = (-0.3125, -0.375),
 *           r = (0.40625, -0.3125), x = (0.59375, 2.3125). */
static void test_eamsgd_lookahead_against_the_seed(void **state)
{
    (void)state;
    const float m = 0.5f, eta = 0.5f, sgd = 0.25f;
    for (int seed_sign = 0; seed_sign < 2; seed_sign++) {
        float x[2] = {1.0f, 2.0f}, r[2] = {0.5f, -1.0f}, ahead[2], after[2];
        float sx[2] = {1.0f, 2.0f}, sr[2] = {0.5f, -1.0f};
        dist_update_lookahead(x, r, 2, m, ahead);
        if (seed_sign)
            for (int i = 0; i < 2; i++)
                ahead[i] = x[i] + m * r[i];
        for (int i = 0; i < 2; i++)
            after[i] = ahead[i] - sgd * ahead[i];
        dist_update_momentum(x, r, ahead, after, 2, m, eta);
        seed_eamsgd_step(sx, sr, m, eta, sgd, seed_sign ? 1.0f : -1.0f);
        assert_floats(x, sx, 2);
        assert_floats(r, sr, 2);
        const float engine_x[2] = {0.65625f, 2.1875f}, engine_r[2] = {0.34375f, -0.1875f};
        const float seed_x[2] = {0.59375f, 2.3125f}, seed_r[2] = {0.40625f, -0.3125f};
        assert_floats(x, seed_sign ? seed_x : engine_x, 2);
        assert_floats(r, seed_sign ? seed_r : engine_r, 2);
    }
}

/* Under a constant optimizer step d the momentum r tends to
 * -eta d / (1 - m), so x moves by eta / (1 - m) times the optimizer's
 * own step: with dist-keras's eta 0.1 and m 0.9, by the step itself.
 * Here eta = m = 0.5 and d = -0.5: r_k = 0.5 (1 - 2^-k), x falls by r_k. */
static void test_eamsgd_momentum_accumulates_optimizer_steps(void **state)
{
    (void)state;
    float x[1] = {4.0f}, r[1] = {0.0f}, ahead[1], after[1];
    float want_x = 4.0f;
    for (int k = 1; k <= 6; k++) {
        dist_update_lookahead(x, r, 1, 0.5f, ahead);
        after[0] = ahead[0] - 0.5f;
        dist_update_momentum(x, r, ahead, after, 1, 0.5f, 0.5f);
        float want_r = 0.5f * (1.0f - 1.0f / (float)(1 << k));
        want_x -= want_r;
        assert_floats(r, &want_r, 1);
        assert_floats(x, &want_x, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_downpour_adds_accumulated_delta),
        cmocka_unit_test(test_adag_divides_by_window),
        cmocka_unit_test(test_dynsgd_scales_by_staleness),
        cmocka_unit_test(test_easgd_elastic_difference),
        cmocka_unit_test(test_eamsgd_momentum_step),
        cmocka_unit_test(test_eamsgd_lookahead_against_the_seed),
        cmocka_unit_test(test_eamsgd_momentum_accumulates_optimizer_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
