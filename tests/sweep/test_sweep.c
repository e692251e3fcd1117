/* test_sweep.c — a sweep's pure parts: parameters expanded into trials
 * (the grid's every combination in order, random draws within their
 * bounds and the same for the same seed, refusals naming the field), a
 * trial's values written at spec paths, ASHA's rungs and its promotion
 * rule (top floor(n / eta) of a rung, not yet promoted, NaN last), and
 * PBT's: the population drawn with its seed, the bottom quantile exploiting
 * the top one (NaN last, reproducible with the seed), and explore's
 * x0.8 / x1.2 within bounds or a fresh draw from a list. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sweep/sweep_asha.h"
#include "sweep/sweep_pbt.h"
#include "sweep/sweep_search.h"

static json_t *trials_of(const char *search_text, sweep_error *err)
{
    json_t *search = json_loads(search_text, 0, NULL);
    assert_non_null(search);
    memset(err, 0, sizeof *err);
    json_t *t = sweep_search_trials(search, 1000, err);
    json_decref(search);
    return t;
}

static void test_grid_every_combination(void **state)
{
    (void)state;
    sweep_error err;
    json_t *t = trials_of("{\"method\": \"grid\", \"parameters\": {"
                          "\"training.optimizer.learning_rate\": {\"values\": [0.1, 0.01]},"
                          "\"training.batch_size\": {\"values\": [16, 32, 64]}}}", &err);
    assert_non_null(t);
    assert_int_equal(json_array_size(t), 6);
    /* The last parameter varies fastest; each pair occurs once. */
    assert_true(json_real_value(json_object_get(json_array_get(t, 0),
                                                "training.optimizer.learning_rate")) == 0.1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(t, 1),
                                                        "training.batch_size")), 32);
    for (size_t i = 0; i < 6; i++)
        for (size_t j = i + 1; j < 6; j++)
            assert_false(json_equal(json_array_get(t, i), json_array_get(t, j)));
    json_decref(t);
}

static void test_grid_refusals(void **state)
{
    (void)state;
    sweep_error err;
    assert_null(trials_of("{\"method\": \"grid\", \"parameters\": {\"a\": {\"uniform\": [0, 1]}}}",
                          &err));
    assert_string_equal(err.field, "search.parameters.a");
    assert_null(trials_of("{\"method\": \"grid\", \"parameters\": {\"a\": {\"values\": []}}}", &err));
    assert_string_equal(err.field, "search.parameters.a.values");
    assert_null(trials_of("{\"method\": \"nope\", \"parameters\": {\"a\": {\"values\": [1]}}}",
                          &err));
    assert_string_equal(err.field, "search.method");
    /* 40 x 40 = 1600 > the limit of 1000. */
    char big[4096] = "{\"method\": \"grid\", \"parameters\": {\"a\": {\"values\": [0";
    for (int i = 1; i < 40; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", i);
    strcat(big, "]}, \"b\": {\"values\": [0");
    for (int i = 1; i < 40; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", i);
    strcat(big, "]}}}");
    assert_null(trials_of(big, &err));
    assert_non_null(strstr(err.msg, "more than 1000"));
    assert_null(trials_of("{\"method\": \"random\", \"trials\": 3, \"parameters\": "
                          "{\"lr\": {\"loguniform\": [0, 1]}}}", &err));
    assert_string_equal(err.field, "search.parameters.lr.loguniform");
}

static void test_random_bounds_and_seed(void **state)
{
    (void)state;
    const char *text = "{\"method\": \"random\", \"trials\": 50, \"seed\": %d, \"parameters\": {"
                       "\"lr\": {\"loguniform\": [0.0001, 0.1]}, \"u\": {\"uniform\": [-1, 1]},"
                       "\"n\": {\"int\": [2, 4]}, \"act\": {\"values\": [\"relu\", \"tanh\"]}}}";
    char a[512], b[512];
    snprintf(a, sizeof a, text, 7);
    snprintf(b, sizeof b, text, 8);
    sweep_error err;
    json_t *t1 = trials_of(a, &err), *t2 = trials_of(a, &err), *t3 = trials_of(b, &err);
    assert_non_null(t1);
    assert_non_null(t3);
    assert_int_equal(json_array_size(t1), 50);
    assert_true(json_equal(t1, t2));
    assert_false(json_equal(t1, t3));
    bool seen[5] = {false};
    size_t i;
    json_t *o;
    json_array_foreach(t1, i, o) {
        double lr = json_real_value(json_object_get(o, "lr"));
        double u = json_real_value(json_object_get(o, "u"));
        json_int_t n = json_integer_value(json_object_get(o, "n"));
        assert_true(lr >= 0.0001 && lr < 0.1);
        assert_true(u >= -1 && u < 1);
        assert_true(json_is_integer(json_object_get(o, "n")) && n >= 2 && n <= 4);
        seen[n] = true;
        assert_true(json_is_string(json_object_get(o, "act")));
    }
    assert_true(seen[2] && seen[3] && seen[4]); /* both ends of an int range are drawn */
    json_decref(t1);
    json_decref(t2);
    json_decref(t3);
}

static void test_apply_paths(void **state)
{
    (void)state;
    json_t *spec = json_loads("{\"model\": {\"layers\": [{\"units\": 1}, {\"units\": 2}]},"
                              "\"training\": {\"epochs\": 1}}", 0, NULL);
    json_t *v = json_integer(64);
    char msg[256];
    assert_true(sweep_search_apply(spec, "model.layers[1].units", v, msg, sizeof msg));
    assert_true(sweep_search_apply(spec, "training.optimizer.learning_rate", v, msg,
                                   sizeof msg));
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(json_object_get(spec, "model"),
                                                        "layers"), 1), "units")), 64);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(
                         json_object_get(spec, "training"), "optimizer"), "learning_rate")), 64);
    assert_false(sweep_search_apply(spec, "model.layers[5].units", v, msg, sizeof msg));
    assert_non_null(strstr(msg, "no element [5]"));
    assert_false(sweep_search_apply(spec, "training..epochs", v, msg, sizeof msg));
    assert_false(sweep_search_apply(spec, "training.epochs.x", v, msg, sizeof msg));
    json_decref(v);
    json_decref(spec);
}

static void test_asha_rungs(void **state)
{
    (void)state;
    int r[SWEEP_ASHA_MAX_RUNGS];
    assert_int_equal(sweep_asha_rungs(1, 9, 3, r, SWEEP_ASHA_MAX_RUNGS), 3);
    assert_true(r[0] == 1 && r[1] == 3 && r[2] == 9);
    assert_int_equal(sweep_asha_rungs(1, 3, 3, r, SWEEP_ASHA_MAX_RUNGS), 2);
    assert_true(r[0] == 1 && r[1] == 3);
    assert_int_equal(sweep_asha_rungs(2, 10, 2, r, SWEEP_ASHA_MAX_RUNGS), 4);
    assert_true(r[0] == 2 && r[1] == 4 && r[2] == 8 && r[3] == 10);
    assert_int_equal(sweep_asha_rungs(0, 9, 3, r, SWEEP_ASHA_MAX_RUNGS), 0);
    assert_int_equal(sweep_asha_rungs(1, 9, 1, r, SWEEP_ASHA_MAX_RUNGS), 0);
}

static void test_asha_rule(void **state)
{
    (void)state;
    /* Fewer than eta completions: nobody is in the top 1/eta. */
    sweep_asha_entry two[] = {{0.5, false}, {0.1, false}};
    assert_int_equal(sweep_asha_pick(two, 2, 3, false), -1);
    /* Three (minimize): the best, 0.1 at index 1. */
    sweep_asha_entry three[] = {{0.5, false}, {0.1, false}, {0.3, false}};
    assert_int_equal(sweep_asha_pick(three, 3, 3, false), 1);
    assert_int_equal(sweep_asha_pick(three, 3, 3, true), 0);
    /* Once it is promoted, the second best is not in the top third. */
    three[1].promoted = true;
    assert_int_equal(sweep_asha_pick(three, 3, 3, false), -1);
    /* Six: top two; the best is promoted already, the second is picked. */
    sweep_asha_entry six[] = {{0.9, false}, {0.2, true}, {0.8, false},
                              {0.3, false}, {0.7, false}, {0.6, false}};
    assert_int_equal(sweep_asha_pick(six, 6, 3, false), 3);
    /* NaN ranks last and is never promoted; ties go to the earlier trial. */
    sweep_asha_entry nan3[] = {{NAN, false}, {0.4, false}, {0.4, false}};
    assert_int_equal(sweep_asha_pick(nan3, 3, 3, false), 1);
    assert_int_equal(sweep_asha_pick(nan3, 3, 3, true), 1);
    sweep_asha_entry allnan[] = {{NAN, false}, {NAN, false}, {NAN, false}};
    assert_int_equal(sweep_asha_pick(allnan, 3, 3, false), -1);
}

static void test_pbt_population(void **state)
{
    (void)state;
    sweep_error err;
    const char *text = "{\"method\": \"pbt\", \"pbt\": {\"population\": 5, \"seed\": 7},"
                       " \"parameters\": {\"training.optimizer.learning_rate\":"
                       " {\"loguniform\": [0.001, 1]}}}";
    json_t *a = trials_of(text, &err), *b = trials_of(text, &err);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), 5);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    a = trials_of("{\"method\": \"pbt\", \"pbt\": {\"population\": 1}, \"parameters\":"
                  " {\"training.batch_size\": {\"values\": [1]}}}", &err);
    assert_null(a);
    assert_string_equal(err.field, "search.pbt.population");
    a = trials_of("{\"method\": \"pbt\", \"parameters\":"
                  " {\"training.batch_size\": {\"values\": [1]}}}", &err);
    assert_null(a);
    assert_string_equal(err.field, "search.pbt");
}

static void test_pbt_plan(void **state)
{
    (void)state;
    /* Loss (min): 0.9 and NAN are the bottom two of 8 at quantile 0.25;
     * their donors are among the top two (0.1 at 2, 0.2 at 5). */
    const double loss[8] = {0.5, 0.9, 0.1, 0.4, NAN, 0.2, 0.3, 0.6};
    int donor[8], again[8];
    uint64_t s1 = sweep_pbt_state(3, 1), s2 = sweep_pbt_state(3, 1);
    assert_int_equal(sweep_pbt_plan(loss, 8, 0.25, false, &s1, donor), 2);
    assert_int_equal(sweep_pbt_plan(loss, 8, 0.25, false, &s2, again), 2);
    assert_memory_equal(donor, again, sizeof donor);
    for (int i = 0; i < 8; i++) {
        if (i == 1 || i == 4)
            assert_true(donor[i] == 2 || donor[i] == 5);
        else
            assert_int_equal(donor[i], -1);
    }
    /* Accuracy (max): the lowest exploits the highest; two members,
     * quantile 0.25: one moves (ceil), never more than half. */
    const double acc[2] = {0.3, 0.8};
    uint64_t s3 = sweep_pbt_state(0, 1);
    assert_int_equal(sweep_pbt_plan(acc, 2, 0.25, true, &s3, donor), 1);
    assert_int_equal(donor[0], 1);
    assert_int_equal(donor[1], -1);
    assert_int_equal(sweep_pbt_count(3, 0.5), 1);
    assert_int_equal(sweep_pbt_count(10, 0.25), 3);
    /* Another generation draws from another stream. */
    assert_true(sweep_pbt_state(3, 1) != sweep_pbt_state(3, 2));
}

static void test_pbt_explore(void **state)
{
    (void)state;
    json_t *search = json_loads("{\"parameters\": {\"lr\": {\"loguniform\": [0.001, 1]},"
                                " \"units\": {\"int\": [4, 64]},"
                                " \"act\": {\"values\": [\"relu\", \"tanh\"]}}}", 0, NULL);
    json_t *params = json_loads("{\"lr\": 0.1, \"units\": 10, \"act\": \"relu\"}", 0, NULL);
    json_t *edge = json_loads("{\"lr\": 0.95, \"units\": 64, \"act\": \"tanh\"}", 0, NULL);
    assert_non_null(search);
    uint64_t st = 42;
    bool down = false, up = false;
    for (int i = 0; i < 64; i++) {
        sweep_error err;
        json_t *p = sweep_search_explore(search, params, &st, &err);
        assert_non_null(p);
        double lr = json_real_value(json_object_get(p, "lr"));
        json_int_t u = json_integer_value(json_object_get(p, "units"));
        assert_true(fabs(lr - 0.08) < 1e-12 || fabs(lr - 0.12) < 1e-12);
        down |= lr < 0.1;
        up |= lr > 0.1;
        assert_true(u == 8 || u == 12);
        const char *act = json_string_value(json_object_get(p, "act"));
        assert_true(strcmp(act, "relu") == 0 || strcmp(act, "tanh") == 0);
        json_decref(p);
        /* Kept within [a, b]. */
        p = sweep_search_explore(search, edge, &st, &err);
        assert_true(json_real_value(json_object_get(p, "lr")) <= 1.0);
        assert_true(json_integer_value(json_object_get(p, "units")) <= 64);
        json_decref(p);
    }
    assert_true(down && up);
    uint64_t a = 5, b = 5;
    sweep_error err;
    json_t *x = sweep_search_explore(search, params, &a, &err);
    json_t *y = sweep_search_explore(search, params, &b, &err);
    assert_true(json_equal(x, y));
    json_decref(x);
    json_decref(y);
    json_decref(params);
    json_decref(edge);
    json_decref(search);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_every_combination),
        cmocka_unit_test(test_grid_refusals),
        cmocka_unit_test(test_random_bounds_and_seed),
        cmocka_unit_test(test_apply_paths),
        cmocka_unit_test(test_asha_rungs),
        cmocka_unit_test(test_asha_rule),
        cmocka_unit_test(test_pbt_population),
        cmocka_unit_test(test_pbt_plan),
        cmocka_unit_test(test_pbt_explore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
