/* test_preempt.c — the choice of jobs to preempt (preempt.h): only jobs of
 * strictly lower priority that are eligible; the lowest priority first and
 * among equals the most recently started; the fewest that make room, with
 * those not needed after all dropped; none when the waiting job fits
 * already or nothing makes room; GPUs and hosts count as for placement;
 * and who is eligible (resources.preemptible, checkpoint, opting out). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/preempt.h"

/* A running job of `ranks` ranks on one host. */
static preempt_running on_host(int host, int ranks, int priority, double started, bool eligible)
{
    preempt_running r;
    memset(&r, 0, sizeof r);
    r.priority = priority;
    r.started_at = started;
    r.eligible = eligible;
    r.need = (placement_need){ranks, ranks, 0, 0};
    r.alloc.n = 1;
    r.alloc.part[0] = (placement_part){host, ranks};
    return r;
}

static void test_lowest_then_newest(void **state)
{
    (void)state;
    /* One host, 2 slots, both taken by two 1-rank jobs. */
    placement_cluster free_cap = {.n_hosts = 1, .slots = {0}};
    preempt_running run[] = {
        on_host(0, 1, 0, 100, true),
        on_host(0, 1, 0, 200, true), /* started later: loses less */
    };
    size_t chosen[2];
    assert_int_equal(preempt_choose(&free_cap, (placement_need){1, 1, 0, 0}, 5, run, 2, chosen),
                     1);
    assert_int_equal(chosen[0], 1);
    /* The lower priority goes first, however old. */
    run[0].priority = -3;
    assert_int_equal(preempt_choose(&free_cap, (placement_need){1, 1, 0, 0}, 5, run, 2, chosen),
                     1);
    assert_int_equal(chosen[0], 0);
    /* A job two slots wide needs both. */
    assert_int_equal(preempt_choose(&free_cap, (placement_need){2, 2, 0, 0}, 5, run, 2, chosen),
                     2);
}

static void test_only_lower_and_eligible(void **state)
{
    (void)state;
    placement_cluster free_cap = {.n_hosts = 1, .slots = {0}};
    preempt_running run[] = {on_host(0, 2, 5, 100, true)};
    size_t chosen[1];
    placement_need one = {1, 1, 0, 0};
    /* Equal priority: never. */
    assert_int_equal(preempt_choose(&free_cap, one, 5, run, 1, chosen), 0);
    assert_int_equal(preempt_choose(&free_cap, one, 6, run, 1, chosen), 1);
    run[0].eligible = false;
    assert_int_equal(preempt_choose(&free_cap, one, 6, run, 1, chosen), 0);
}

static void test_fits_already_or_never(void **state)
{
    (void)state;
    placement_cluster free_cap = {.n_hosts = 1, .slots = {1}};
    preempt_running run[] = {on_host(0, 1, 0, 100, true)};
    size_t chosen[1];
    /* One slot is free: nothing to preempt. */
    assert_int_equal(preempt_choose(&free_cap, (placement_need){1, 1, 0, 0}, 5, run, 1, chosen),
                     0);
    /* Three ranks never fit two slots, whatever is preempted. */
    assert_int_equal(preempt_choose(&free_cap, (placement_need){3, 3, 0, 0}, 5, run, 1, chosen),
                     0);
}

static void test_fewest(void **state)
{
    (void)state;
    /* h0 holds a 1-rank job of priority -5 and h1 a 2-rank job of -1. A
     * 2-rank job: taking the -5 job first frees one slot, not enough; the
     * -1 job frees two on its own, so the -5 job is dropped again. */
    placement_cluster free_cap = {.n_hosts = 2, .slots = {0, 0}};
    preempt_running run[] = {
        on_host(0, 1, -5, 100, true),
        on_host(1, 2, -1, 100, true),
    };
    size_t chosen[2];
    assert_int_equal(preempt_choose(&free_cap, (placement_need){2, 2, 0, 0}, 0, run, 2, chosen),
                     1);
    assert_int_equal(chosen[0], 1);
}

static void test_gpus(void **state)
{
    (void)state;
    /* Slots are free, the GPU is not: only the job holding it helps. */
    placement_cluster free_cap = {.n_hosts = 1, .slots = {2}, .gpus = {0}};
    preempt_running run[] = {
        on_host(0, 1, 0, 300, true),
        on_host(0, 1, 0, 100, true),
    };
    run[1].need.gpus = 1;
    size_t chosen[2];
    assert_int_equal(preempt_choose(&free_cap, (placement_need){1, 1, 1, 0}, 1, run, 2, chosen),
                     1);
    assert_int_equal(chosen[0], 1);
    placement_cluster back = free_cap;
    preempt_release(&back, run[1].need, &run[1].alloc);
    assert_int_equal(back.slots[0], 3);
    assert_int_equal(back.gpus[0], 1);
}

static void test_eligible(void **state)
{
    (void)state;
    assert_true(preempt_eligible(SPEC_PREEMPTIBLE_UNSET, true, true));
    assert_false(preempt_eligible(SPEC_PREEMPTIBLE_UNSET, false, true));
    assert_true(preempt_eligible(SPEC_PREEMPTIBLE_YES, false, true));
    assert_false(preempt_eligible(SPEC_PREEMPTIBLE_NO, true, true));
    /* Opting out not allowed: false counts as unset. */
    assert_true(preempt_eligible(SPEC_PREEMPTIBLE_NO, true, false));
    assert_false(preempt_eligible(SPEC_PREEMPTIBLE_NO, false, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lowest_then_newest),
        cmocka_unit_test(test_only_lower_and_eligible),
        cmocka_unit_test(test_fits_already_or_never),
        cmocka_unit_test(test_fewest),
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_eligible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
