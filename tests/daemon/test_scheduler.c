/* test_scheduler.c — the run policy: order (priority, fair-share tag, FIFO),
 * per-user running limit, slot budget, no backfill past a wide job; GPUs as
 * a second resource (fits, waits, never over-allocated, mixed with CPU-only
 * jobs), and the device sets of a single host (gpualloc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpualloc.h"
#include "scheduler.h"

#define SLOTS(n) ((sched_resources){(n), 0})

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
    size_t n = sched_pick(q, 4, NULL, 0, SLOTS(4), 1, picked);
    assert_int_equal(n, 3);
    assert_int_equal(picked[0], 0);
    assert_int_equal(picked[1], 2);
    assert_int_equal(picked[2], 3);
    /* b already runs one: only a and c start. */
    sched_owner running[] = {{"b", 1}};
    n = sched_pick(q, 4, running, 1, SLOTS(4), 1, picked);
    assert_int_equal(n, 2);
    assert_int_equal(picked[0], 0);
    assert_int_equal(picked[1], 3);
    /* No limit: everything that fits, in order. */
    n = sched_pick(q, 4, running, 1, SLOTS(3), 0, picked);
    assert_int_equal(n, 3);
    assert_int_equal(picked[2], 2);
}

static void test_slots_and_no_backfill(void **state)
{
    (void)state;
    sched_job q[] = {{"a", 2, 0, 0, 1}, {"b", 3, 0, 1, 2}, {"c", 1, 0, 2, 3}};
    size_t picked[3];
    /* 4 slots: a (2) fits, b (3) does not: c must not jump past b. */
    size_t n = sched_pick(q, 3, NULL, 0, SLOTS(4), 1, picked);
    assert_int_equal(n, 1);
    assert_int_equal(picked[0], 0);
    /* No free slots: nothing. */
    assert_int_equal(sched_pick(q, 3, NULL, 0, SLOTS(0), 1, picked), 0);
    /* A job skipped for its owner's limit does not block the ones behind it. */
    sched_owner running[] = {{"a", 1}};
    n = sched_pick(q, 3, running, 1, SLOTS(4), 1, picked);
    assert_int_equal(n, 2);
    assert_int_equal(picked[0], 1);
    assert_int_equal(picked[1], 2);
}

/* Sum of what the picked jobs need. */
static sched_resources picked_needs(const sched_job *q, const size_t *picked, size_t n)
{
    sched_resources r = {0, 0};
    for (size_t i = 0; i < n; i++) {
        r.slots += q[picked[i]].ranks;
        r.gpus += q[picked[i]].gpus;
    }
    return r;
}

static void test_gpus_fit(void **state)
{
    (void)state;
    /* {owner, ranks, priority, vstart, seq, gpus} */
    sched_job q[] = {{"a", 2, 0, 0, 1, 2}, {"b", 1, 0, 1, 2, 1}, {"c", 1, 0, 2, 3, 0}};
    size_t picked[3];
    size_t n = sched_pick(q, 3, NULL, 0, (sched_resources){4, 3}, 1, picked);
    assert_int_equal(n, 3);
    sched_resources used = picked_needs(q, picked, n);
    assert_int_equal(used.slots, 4);
    assert_int_equal(used.gpus, 3);
    /* No free GPUs: the GPU jobs wait (keeping 3 slots), the CPU job starts. */
    n = sched_pick(q, 3, NULL, 0, (sched_resources){4, 0}, 1, picked);
    assert_int_equal(n, 1);
    assert_int_equal(picked[0], 2);
}

/* A job short of GPUs waits; nothing behind it takes a GPU first, but jobs
 * that need none use the slots it does not need. */
static void test_gpus_wait_for_free(void **state)
{
    (void)state;
    sched_job q[] = {
        {"a", 1, 0, 0, 1, 2}, /* needs 2 GPUs, 1 is free: waits, reserves 1 slot */
        {"b", 1, 0, 1, 2, 1}, /* would fit the free GPU: must not jump ahead of a */
        {"c", 2, 0, 2, 3, 0}, /* CPU only: 4 free - 1 reserved = 3 slots, fits */
        {"d", 2, 0, 3, 4, 0}, /* 1 slot left: waits */
    };
    size_t picked[4];
    size_t n = sched_pick(q, 4, NULL, 0, (sched_resources){4, 1}, 1, picked);
    assert_int_equal(n, 1);
    assert_int_equal(q[picked[0]].seq, 3);
    /* A GPU freed: a starts first, then b on the third GPU, then c and d. */
    n = sched_pick(q, 4, NULL, 0, (sched_resources){6, 3}, 1, picked);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(picked[i], i);
    /* Short of slots (not GPUs): no backfill at all, as for CPU jobs. */
    sched_job wide[] = {{"a", 4, 0, 0, 1, 1}, {"b", 1, 0, 1, 2, 0}, {"c", 1, 0, 2, 3, 1}};
    assert_int_equal(sched_pick(wide, 3, NULL, 0, (sched_resources){3, 2}, 1, picked), 0);
}

/* A waiting GPU job keeps its slots: a CPU job behind it that would leave it
 * too few slots waits as well. */
static void test_gpus_reservation_keeps_slots(void **state)
{
    (void)state;
    sched_job q[] = {{"a", 2, 0, 0, 1, 1}, {"b", 2, 0, 1, 2, 0}, {"c", 1, 0, 2, 3, 0}};
    size_t picked[3];
    /* 3 free slots, no free GPU: a keeps 2, b would need 2 of the 1 left and
     * waits in turn, keeping the last one from c. */
    assert_int_equal(sched_pick(q, 3, NULL, 0, (sched_resources){3, 0}, 0, picked), 0);
    /* With 4 free slots b fits beside a's reservation, c does not. */
    size_t n = sched_pick(q, 3, NULL, 0, (sched_resources){4, 0}, 0, picked);
    assert_int_equal(n, 1);
    assert_int_equal(picked[0], 1);
    /* When the GPU is free, a gets its 2 slots first (b then waits for 2). */
    n = sched_pick(q, 3, NULL, 0, (sched_resources){3, 1}, 0, picked);
    assert_int_equal(n, 1);
    assert_int_equal(picked[0], 0);
}

/* Mixed CPU and GPU jobs from several users through a simulated cluster:
 * at no point do running jobs hold more slots or GPUs than exist; every job
 * runs eventually; a job waiting for GPUs is never overtaken by a later job
 * that takes a GPU. */
static void test_gpus_never_overallocate(void **state)
{
    (void)state;
    enum { N = 60, SLOTS_TOTAL = 4, GPUS_TOTAL = 3 };
    const char *users[] = {"a", "b", "c"};
    sched_job all[N];
    int remaining[N]; /* ticks left while running; -1 queued, 0 done */
    uint32_t rng = 12345;
    for (int i = 0; i < N; i++) {
        rng = rng * 1103515245u + 12345u;
        int ranks = 1 + (int)((rng >> 16) % SLOTS_TOTAL);
        rng = rng * 1103515245u + 12345u;
        int gpus = (int)((rng >> 16) % (GPUS_TOTAL + 1)); /* 0..3 */
        all[i] = (sched_job){users[i % 3], ranks, 0, (double)i, i + 1, gpus};
        remaining[i] = -1;
    }
    int done = 0;
    for (int tick = 0; tick < 10000 && done < N; tick++) {
        sched_resources avail = {SLOTS_TOTAL, GPUS_TOTAL};
        sched_owner owners[3] = {{"a", 0}, {"b", 0}, {"c", 0}};
        for (int i = 0; i < N; i++) {
            if (remaining[i] > 0 && --remaining[i] == 0) {
                done++;
                continue;
            }
            if (remaining[i] > 0) {
                avail.slots -= all[i].ranks;
                avail.gpus -= all[i].gpus;
                owners[(all[i].seq - 1) % 3].running++;
            }
        }
        assert_true(avail.slots >= 0 && avail.gpus >= 0);
        sched_job q[N];
        int map[N];
        size_t nq = 0;
        for (int i = 0; i < N; i++)
            if (remaining[i] < 0) {
                map[nq] = i;
                q[nq++] = all[i];
            }
        size_t picked[N];
        size_t n = sched_pick(q, nq, owners, 3, avail, 2, picked);
        sched_resources need = picked_needs(q, picked, n);
        assert_true(need.slots <= avail.slots);
        assert_true(need.gpus <= avail.gpus);
        for (size_t k = 0; k < n; k++) {
            /* Nothing that takes a GPU starts past an earlier GPU job that
             * waits, unless that one's owner is at the limit. */
            for (size_t e = 0; e < picked[k]; e++) {
                bool e_started = false;
                for (size_t m = 0; m < n; m++)
                    e_started |= picked[m] == e;
                int running_e = owners[(q[e].seq - 1) % 3].running;
                for (size_t m = 0; m < k; m++)
                    running_e += !strcmp(q[picked[m]].owner, q[e].owner);
                if (!e_started && q[e].gpus > 0 && running_e < 2)
                    assert_int_equal(q[picked[k]].gpus, 0);
            }
            remaining[map[picked[k]]] = 1 + (int)(q[picked[k]].seq % 4);
        }
    }
    assert_int_equal(done, N);
}

static void test_gpualloc_sets(void **state)
{
    (void)state;
    uint64_t set = 0;
    assert_true(gpualloc_take(0, 4, 2, &set));
    assert_true(set == 0x3);
    assert_true(gpualloc_take(0x5, 4, 2, &set)); /* 0 and 2 taken: 1 and 3 */
    assert_true(set == 0xa);
    set = 0x77;
    assert_false(gpualloc_take(0xe, 4, 2, &set)); /* only device 0 free */
    assert_true(set == 0x77);
    assert_true(gpualloc_take(0xf, 4, 0, &set));
    assert_true(set == 0);
    assert_int_equal(gpualloc_count(0xa5), 4);

    char text[256];
    assert_true(gpualloc_format(0xa, text, sizeof text));
    assert_string_equal(text, "1,3");
    assert_true(gpualloc_format(0, text, sizeof text));
    assert_string_equal(text, "");
    assert_false(gpualloc_format(0xa, text, 3));
    uint64_t all = ~UINT64_C(0), back = 0;
    assert_true(gpualloc_format(all, text, sizeof text));
    assert_true(gpualloc_parse(text, &back));
    assert_true(back == all);
    assert_true(gpualloc_parse("", &back));
    assert_true(back == 0);
    assert_true(gpualloc_parse("2,0", &back));
    assert_true(back == 0x5);
    const char *bad[] = {"a", "1,", ",1", "1,,2", "64", "-1", "1 2", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(gpualloc_parse(bad[i], &back));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_start_tag),
        cmocka_unit_test(test_fair_share_interleaves),
        cmocka_unit_test(test_per_user_limit),
        cmocka_unit_test(test_slots_and_no_backfill),
        cmocka_unit_test(test_gpus_fit),
        cmocka_unit_test(test_gpus_wait_for_free),
        cmocka_unit_test(test_gpus_reservation_keeps_slots),
        cmocka_unit_test(test_gpus_never_overallocate),
        cmocka_unit_test(test_gpualloc_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
