/* test_stall.c — the stall rule (stall.h): silent for longer than
 * max(grace, factor x slowest gap) is stalled, not before; a slow job's
 * own pace raises the limit; a grace of 0 never fires. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sched/stall.h"

static void test_grace_floor(void **state)
{
    (void)state;
    stall_watch w;
    stall_watch_start(&w, 1000);
    stall_watch_report(&w, 1001); /* 1 s steps */
    stall_watch_report(&w, 1002);
    assert_true(stall_limit(&w, 60, 10) == 60);
    assert_false(stall_is_stalled(&w, 1062, 60, 10));
    assert_true(stall_is_stalled(&w, 1062.5, 60, 10));
}

static void test_slow_steps_raise_it(void **state)
{
    (void)state;
    stall_watch w;
    stall_watch_start(&w, 0);
    stall_watch_report(&w, 5);
    stall_watch_report(&w, 35); /* an evaluation or checkpoint: 30 s */
    stall_watch_report(&w, 40);
    assert_true(stall_limit(&w, 60, 10) == 300);
    assert_false(stall_is_stalled(&w, 40 + 299, 60, 10));
    assert_true(stall_is_stalled(&w, 40 + 301, 60, 10));
    /* A report starts the count again. */
    stall_watch_report(&w, 330);
    assert_false(stall_is_stalled(&w, 341, 60, 10));
}

static void test_off(void **state)
{
    (void)state;
    stall_watch w;
    stall_watch_start(&w, 0);
    assert_true(stall_limit(&w, 0, 10) == 0);
    assert_false(stall_is_stalled(&w, 1e9, 0, 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grace_floor),
        cmocka_unit_test(test_slow_steps_raise_it),
        cmocka_unit_test(test_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
