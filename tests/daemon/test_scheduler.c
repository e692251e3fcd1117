/* test_scheduler.c — the run policy: order (priority, fair-share tag, FIFO),
 * per-user running limit, slot budget, no backfill past a wide job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "scheduler.h"

static int cmp(const void *a, const void *b) { return sched_compare(a, b); }

static void test_order(void **state)
{
    (void)state;
    sched_job q[] = {
        {"a", 1, 0, 0.0, 1}, {"a", 1, 0, 1.0, 2}, {"b", 1, 0, 0.0, 3},
        {"c", 1, 5, 9.0, 4}, {"b", 1, -1, 0.0, 5},
    };
    qsort(q, 5, sizeof q[0], cmp);
    /* Priority 5 first; then tag 0 in FIFO order; then tag 1; then priority -1. */
    assert_int_equal(q[0].seq, 4);
    assert_int_equal(q[1].seq, 1);
    assert_int_equal(q[2].seq, 3);
    assert_int_equal(q[3].seq, 2);
    assert_int_equal(q[4].seq, 5);
}

static void test_start_tag(void **state)
{
    (void)state;
    /* A user far ahead keeps their own tag; one idle for long restarts at the clock. */
    assert_true(sched_start_tag(10.0, 25.0) == 25.0);
    assert_true(sched_start_tag(10.0, 3.0) == 10.0);
}

/* Simulate start-time fair queuing over a burst: user a submits 6 jobs, then
 * b submits 2; b's jobs interleave with a's instead of waiting behind all 6. */
static void test_fair_share_interleaves(void **state)
{
    (void)state;
    double vclock = 0, fin_a = 0, fin_b = 0;
    sched_job q[8];
    int n = 0;
    for (int i = 0; i < 6; i++) {
        double s = sched_start_tag(vclock, fin_a);
        fin_a = s + 1;
        q[n] = (sched_job){"a", 1, 0, s, n + 1};
        n++;
    }
    for (int i = 0; i < 2; i++) {
        double s = sched_start_tag(vclock, fin_b);
        fin_b = s + 1;
        q[n] = (sched_job){"b", 1, 0, s, n + 1};
        n++;
    }
    qsort(q, (size_t)n, sizeof q[0], cmp);
    const char *want[] = {"a", "b", "a", "b", "a", "a", "a", "a"};
    for (int i = 0; i < n; i++)
        assert_string_equal(q[i].owner, want[i]);
}

static void test_per_user_limit(void **state)
{
    (void)state;
    sched_job q[] = {{"a", 1, 0, 0, 1}, {"a", 1, 0, 1, 2}, {"b", 1, 0, 2, 3}, {"c", 1, 0, 3, 4}};
    size_t picked[4];
    /* Four free slots, limit one each: a's second job waits. */
    size_t n = sched_pick(q, 4, NULL, 0, 4, 1, picked);
    assert_int_equal(n, 3);
    assert_int_equal(picked[0], 0);
    assert_int_equal(picked[1], 2);
    assert_int_equal(picked[2], 3);
    /* b already runs one: only a and c start. */
    sched_owner running[] = {{"b", 1}};
    n = sched_pick(q, 4, running, 1, 4, 1, picked);
    assert_int_equal(n, 2);
    assert_int_equal(picked[0], 0);
    assert_int_equal(picked[1], 3);
    /* No limit: everything that fits, in order. */
    n = sched_pick(q, 4, running, 1, 3, 0, picked);
    assert_int_equal(n, 3);
    assert_int_equal(picked[2], 2);
}

static void test_slots_and_no_backfill(void **state)
{
    (void)state;
    sched_job q[] = {{"a", 2, 0, 0, 1}, {"b", 3, 0, 1, 2}, {"c", 1, 0, 2, 3}};
    size_t picked[3];
    /* 4 slots: a (2) fits, b (3) does not: c must not jump past b. */
    size_t n = sched_pick(q, 3, NULL, 0, 4, 1, picked);
    assert_int_equal(n, 1);
    assert_int_equal(picked[0], 0);
    /* No free slots: nothing. */
    assert_int_equal(sched_pick(q, 3, NULL, 0, 0, 1, picked), 0);
    /* A job skipped for its owner's limit does not block the ones behind it. */
    sched_owner running[] = {{"a", 1}};
    n = sched_pick(q, 3, running, 1, 4, 1, picked);
    assert_int_equal(n, 2);
    assert_int_equal(picked[0], 1);
    assert_int_equal(picked[1], 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_start_tag),
        cmocka_unit_test(test_fair_share_interleaves),
        cmocka_unit_test(test_per_user_limit),
        cmocka_unit_test(test_slots_and_no_backfill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
