/* test_scheduler.c — the run policy as production runs it: jobs go into a
 * real store (store.c's SQL keeps the fair-share tags and orders the queue),
 * and each scheduling pass is sched_pass(), the function monitor.c's tick
 * calls: the queue from the store, picked with sched_pick(). Covered:
 * order (priority, fair share between owners, FIFO), the fair-share clock
 * (no credit for idle time, wide jobs count for their width), the per-user
 * running limit (a skipped job reserves nothing), the slot budget with no
 * backfill past a wide job, and GPUs as a second resource (fits, waits,
 * reservations, never over-allocated in a long mixed simulation).
 * Owners are one letter, so a pass's picks read as a string ("abc"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/joblist.h"
#include "sched/placement.h"
#include "sched/scheduler.h"
#include "scratch.h"
#include "store/store.h"

enum { MAX_ROWS = 128 };

typedef struct fixture {
    char dir[SCRATCH_DIR_LEN];
    store *st;
    double now;        /* submission and transition times, one tick apart */
    job_list active;   /* as the last pass saw them */
    sched_plan plan;   /* the last pass: its queue and picks */
    job_list queue;    /* the queue, for the tests that call sched_pick alone */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (!scratch_create(f->dir, "sched"))
        return -1;
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/q.db", f->dir);
    f->st = store_open(path, 1, err, sizeof err);
    if (!f->st)
        return -1;
    f->now = 1000.0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    joblist_free(&f->active);
    joblist_free(&f->queue);
    sched_plan_free(&f->plan);
    store_close(f->st);
    bool removed = scratch_remove(f->dir);
    free(f);
    return removed ? 0 : -1;
}

/* Queue a job; returns its id, valid until the next submit. */
static const char *submit(fixture *f, const char *owner, int priority, int ranks, int gpus)
{
    static char id[STORE_ID_LEN + 1];
    store_new_job nj = {.owner = owner, .name = "j", .trainer = "single", .spec = "{}",
                        .priority = priority, .ranks = ranks, .workers = ranks, .threads = 1,
                        .gpus = gpus};
    assert_int_equal(store_job_submit(f->st, &nj, 0, f->now++, id), STORE_OK);
    return id;
}

/* One job to queue: its owner, priority, ranks and GPUs. */
typedef struct queued {
    const char *owner;
    int priority, ranks, gpus;
} queued;

/* Queue the jobs of a list, in its order. */
static void submit_all(fixture *f, const queued *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        submit(f, jobs[i].owner, jobs[i].priority, jobs[i].ranks, jobs[i].gpus);
}

#define SUBMIT(f, ...)                                                                            \
    submit_all((f), (const queued[]){__VA_ARGS__},                                                \
               sizeof((const queued[]){__VA_ARGS__}) / sizeof(queued))

/* The active jobs, fresh from the store. */
static void load_active(fixture *f)
{
    joblist_free(&f->active);
    f->active = (job_list){0};
    assert_int_equal(store_active_jobs(f->st, joblist_collect, &f->active), STORE_OK);
}

/* The whole queue in run order, for sched_pick alone. */
static void load_queue(fixture *f)
{
    load_active(f);
    joblist_free(&f->queue);
    f->queue = (job_list){0};
    assert_int_equal(store_queue_scan(f->st, MAX_ROWS, joblist_collect, &f->queue), STORE_OK);
}

/* Free slots and GPUs in all: the sums over a cluster's hosts. */
typedef struct totals {
    int slots, gpus;
} totals;

/* The free share of a one-host cluster of `slots` and `gpus` once the
 * active jobs hold theirs. */
static placement_cluster free_of(const fixture *f, int slots, int gpus)
{
    placement_cluster c = {.n_hosts = 1, .slots = {slots}, .gpus = {gpus}};
    for (size_t i = 0; i < f->active.n; i++) {
        c.slots[0] -= f->active.v[i].ranks;
        c.gpus[0] -= f->active.v[i].gpus;
    }
    return c;
}

static placement allocs[MAX_ROWS];

/* A pass that only looks: which rows of f->plan.queue would start (their
 * indices in f->plan.picked). */
static size_t plan(fixture *f, int slots, int gpus, int max_running)
{
    load_active(f);
    sched_plan_free(&f->plan);
    placement_cluster avail = free_of(f, slots, gpus);
    bool oom = true;
    assert_int_equal(sched_pass(f->st, &f->active, &avail, max_running, NULL, NULL, &f->plan,
                                &oom),
                     STORE_OK);
    assert_false(oom);
    return f->plan.n_picked;
}

/* The one-letter owners of the picked rows of queue, in start order ("" if
 * none). */
static const char *owners_of(const job_list *queue, const size_t *picked, size_t n)
{
    static char text[MAX_ROWS + 1];
    for (size_t i = 0; i < n; i++)
        text[i] = queue->v[picked[i]].owner[0];
    text[n] = '\0';
    return text;
}

/* A pass that only looks: it would start the jobs of `want`'s owners. */
static void assert_plan(fixture *f, int slots, int gpus, int max_running, const char *want)
{
    size_t n = plan(f, slots, gpus, max_running);
    assert_string_equal(owners_of(&f->plan.queue, f->plan.picked, n), want);
}

/* A pass that starts what it picks (queued -> starting, which advances the
 * fair-share clock): the jobs of `want`'s owners, in that order. */
static void assert_pass(fixture *f, int slots, int gpus, int max_running, const char *want)
{
    size_t n = plan(f, slots, gpus, max_running);
    assert_string_equal(owners_of(&f->plan.queue, f->plan.picked, n), want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(store_job_mark_starting(f->st, f->plan.queue.v[f->plan.picked[i]].id,
                                                 NULL, NULL, f->now++),
                         STORE_OK);
}

static void finish(fixture *f, const char *id)
{
    assert_int_equal(store_job_finish(f->st, id, JOB_SUCCEEDED, NULL, NULL, "{}", NULL, f->now++),
                     STORE_OK);
}

static void finish_active(fixture *f)
{
    load_active(f);
    for (size_t i = 0; i < f->active.n; i++)
        finish(f, f->active.v[i].id);
}

/* Priority first; among equals, user b's burst interleaves with a's longer
 * one instead of waiting behind it; FIFO breaks ties; priority -1 last. */
static void test_order(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < 6; i++)
        submit(f, "a", 0, 1, 0);
    SUBMIT(f, {"b", 0, 1, 0}, {"b", 0, 1, 0}, {"c", 5, 1, 0}, {"d", -1, 1, 0});
    assert_pass(f, 100, 0, 0, "cababaaaad");
}

/* The clock: jobs that start advance it, so a user back from a pause starts
 * level with the others (not ahead on credit from the idle time). A wide job
 * counts for its width. */
static void test_fair_share_clock(void **state)
{
    fixture *f = *state;
    submit(f, "b", 0, 1, 0);
    assert_pass(f, 1, 0, 0, "b");
    finish_active(f);
    for (int i = 0; i < 6; i++)
        submit(f, "a", 0, 1, 0);
    assert_pass(f, 4, 0, 0, "aaaa");
    finish_active(f);
    /* b comes back after a's four started: level with a's fifth, not first
     * twice over as its old finish tag alone would make it. */
    submit(f, "b", 0, 1, 0);
    submit(f, "b", 0, 1, 0);
    assert_pass(f, 100, 0, 0, "baba");
    finish_active(f);
    /* c's 4-rank job weighs four of d's 1-rank jobs. */
    submit(f, "c", 0, 4, 0);
    submit(f, "c", 0, 1, 0);
    for (int i = 0; i < 3; i++)
        submit(f, "d", 0, 1, 0);
    assert_pass(f, 100, 0, 0, "cdddc");
}

/* At most max_running active jobs per user, counting the ones already
 * running (from the store) and the ones this pass starts. */
static void test_per_user_limit(void **state)
{
    fixture *f = *state;
    char first[STORE_ID_LEN + 1];
    snprintf(first, sizeof first, "%s", submit(f, "a", 0, 1, 0));
    SUBMIT(f, {"a", 0, 1, 0}, {"b", 0, 1, 0}, {"c", 0, 1, 0});
    /* Four free slots, limit one each: a's second job waits. */
    assert_pass(f, 4, 0, 1, "abc");
    /* A slot is free, but a already runs one; without the limit it starts. */
    assert_plan(f, 4, 0, 1, "");
    assert_plan(f, 4, 0, 0, "a");
    /* With the limit, once a's first job has ended. */
    finish(f, first);
    assert_pass(f, 4, 0, 1, "a");
}

/* A job short of slots stops the walk: nothing narrower jumps past it. */
static void test_slots_and_no_backfill(void **state)
{
    fixture *f = *state;
    SUBMIT(f, {"a", 0, 2, 0}, {"b", 0, 3, 0}, {"c", 0, 1, 0});
    /* 4 slots: a (2) fits, b (3) does not, and c must not pass it. */
    assert_plan(f, 4, 0, 1, "a");
    assert_plan(f, 0, 0, 1, "");
}

/* A job skipped for its owner's running limit reserves nothing: the job
 * behind it uses the slots it would have taken. */
static void test_limit_skip_reserves_nothing(void **state)
{
    fixture *f = *state;
    submit(f, "b", 0, 1, 0);
    assert_pass(f, 1, 0, 1, "b");
    submit(f, "b", 1, 3, 0);
    submit(f, "e", 0, 1, 0);
    assert_plan(f, 4, 0, 1, "e");
    /* Without the limit b's wide job comes first and takes the 3 free slots. */
    assert_plan(f, 4, 0, 0, "b");
}

static void test_gpus_fit(void **state)
{
    fixture *f = *state;
    SUBMIT(f, {"a", 0, 2, 2}, {"b", 0, 1, 1}, {"c", 0, 1, 0});
    assert_plan(f, 4, 3, 1, "abc");
    /* No GPUs at all: the GPU jobs wait (keeping 3 slots), the CPU job runs. */
    assert_plan(f, 4, 0, 1, "c");
}

/* A job short of GPUs waits; nothing behind it takes a GPU first, but jobs
 * that need none use the slots it does not need. */
static void test_gpus_wait_for_free(void **state)
{
    fixture *f = *state;
    SUBMIT(f,
           {"a", 0, 1, 2}, /* needs 2 GPUs, 1 is free: waits, reserves 1 slot */
           {"b", 0, 1, 1}, /* must not jump ahead of a to the free GPU: reserves 1 */
           {"c", 0, 2, 0}, /* CPU only: 4 - 2 reserved = 2 slots, fits */
           {"d", 0, 2, 0}); /* no slot left: waits */
    assert_plan(f, 4, 1, 1, "c");
    /* More GPUs and slots: all four, in queue order. */
    assert_plan(f, 6, 3, 1, "abcd");
}

/* Short of slots (not GPUs): no backfill at all, as for CPU jobs. */
static void test_gpus_short_of_slots(void **state)
{
    fixture *f = *state;
    SUBMIT(f, {"a", 0, 4, 1}, {"b", 0, 1, 0}, {"c", 0, 1, 1});
    assert_plan(f, 3, 2, 1, "");
}

/* A waiting GPU job keeps its slots: a CPU job behind it that would leave it
 * too few slots waits as well. */
static void test_gpus_reservation_keeps_slots(void **state)
{
    fixture *f = *state;
    SUBMIT(f, {"a", 0, 2, 1}, {"b", 0, 2, 0}, {"c", 0, 1, 0});
    /* 3 free slots, no GPU: a keeps 2, b would need 2 of the 1 left and
     * waits in turn, keeping the last one from c. */
    assert_plan(f, 3, 0, 0, "");
    /* With 4 free slots b fits beside a's reservation, c does not. */
    assert_plan(f, 4, 0, 0, "b");
    /* When the GPU is free, a gets its 2 slots first (b then waits for 2). */
    assert_plan(f, 3, 1, 0, "a");
}

/* Mixed CPU and GPU jobs from three users through a simulated cluster run
 * on the store: running jobs never hold more slots or GPUs than exist; every
 * job runs eventually; a waiting GPU job is never overtaken by a later job
 * that takes a GPU unless its owner is at the limit. */
static void test_gpus_never_overallocate(void **state)
{
    fixture *f = *state;
    enum { N = 60, SLOTS = 4, GPUS = 3, LIMIT = 2 };
    const char *users[] = {"a", "b", "c"};
    uint32_t rng = 12345;
    for (int i = 0; i < N; i++) {
        rng = rng * 1103515245u + 12345u;
        int ranks = 1 + (int)((rng >> 16) % SLOTS);
        rng = rng * 1103515245u + 12345u;
        int gpus = (int)((rng >> 16) % (GPUS + 1));
        submit(f, users[i % 3], 0, ranks, gpus);
    }
    char ends[N][STORE_ID_LEN + 1]; /* started jobs and the tick they end */
    int end_tick[N], n_started = 0, done = 0;
    for (int tick = 0; tick < 10000 && done < N; tick++) {
        for (int i = 0; i < n_started; i++)
            if (end_tick[i] == tick) {
                finish(f, ends[i]);
                done++;
            }
        size_t n = plan(f, SLOTS, GPUS, LIMIT);
        const size_t *picked = f->plan.picked;
        const job_list *queue = &f->plan.queue;
        placement_cluster c = free_of(f, SLOTS, GPUS);
        totals avail = {c.slots[0], c.gpus[0]}, need = {0, 0};
        assert_true(avail.slots >= 0 && avail.gpus >= 0);
        for (size_t k = 0; k < n; k++) {
            const store_job *j = &queue->v[picked[k]];
            need.slots += j->ranks;
            need.gpus += j->gpus;
            for (size_t e = 0; e < picked[k]; e++) {
                const store_job *w = &queue->v[e];
                bool started = false;
                int running = 0;
                for (size_t m = 0; m < n; m++)
                    started |= picked[m] == e;
                for (size_t m = 0; m < f->active.n; m++)
                    running += strcmp(f->active.v[m].owner, w->owner) == 0;
                for (size_t m = 0; m < k; m++)
                    running += strcmp(queue->v[picked[m]].owner, w->owner) == 0;
                if (!started && w->gpus > 0 && running < LIMIT)
                    assert_int_equal(j->gpus, 0);
            }
            assert_int_equal(store_job_mark_starting(f->st, j->id, NULL, NULL, f->now++), STORE_OK);
            snprintf(ends[n_started], sizeof ends[0], "%s", j->id);
            end_tick[n_started++] = tick + 1 + (int)(j->seq % 4);
        }
        assert_true(need.slots <= avail.slots);
        assert_true(need.gpus <= avail.gpus);
    }
    assert_int_equal(done, N);
}

/* Several hosts: concurrent jobs get disjoint slots, a job that fits one
 * host stays on it, a wider one spills in host order, a job that does not
 * fit now waits (and, short of slots, stops the walk), and a down host gets
 * nothing. */
static void test_hosts_disjoint(void **state)
{
    fixture *f = *state;
    SUBMIT(f, {"a", 0, 2, 0}, {"b", 0, 1, 0}, {"c", 0, 3, 0}, {"d", 0, 1, 0});
    load_queue(f);
    placement_cluster c = {.n_hosts = 3, .slots = {2, 2, 1}};
    size_t picked[MAX_ROWS];
    size_t n = sched_pick(f->queue.v, f->queue.n, f->active.v, f->active.n, &c, 0, picked,
                          allocs);
    /* a fills h0; b goes to h1; c (3) fits nowhere whole and 2 slots are
     * left (h1:1, h2:1): it waits and d may not pass it. */
    assert_string_equal(owners_of(&f->queue, picked, n), "ab");
    assert_int_equal(allocs[0].n, 1);
    assert_int_equal(allocs[0].part[0].host, 0);
    assert_int_equal(allocs[0].part[0].ranks, 2);
    assert_int_equal(allocs[1].n, 1);
    assert_int_equal(allocs[1].part[0].host, 1);
    assert_int_equal(c.slots[1] + c.slots[2], 2); /* short of slots, c reserves nothing */
    /* With h0 free again and h1 down, c spills over h0 and h2. */
    placement_cluster later = {.n_hosts = 3, .slots = {2, 2, 1}, .down = {false, true, false}};
    n = sched_pick(&f->queue.v[2], 2, NULL, 0, &later, 0, picked, allocs);
    assert_int_equal(n, 1);
    assert_int_equal(allocs[0].n, 2);
    assert_int_equal(allocs[0].part[0].host, 0);
    assert_int_equal(allocs[0].part[0].ranks, 2);
    assert_int_equal(allocs[0].part[1].host, 2);
    assert_int_equal(allocs[0].part[1].ranks, 1);
    assert_int_equal(later.slots[1], 2); /* the down host kept its slots */
}

/* GPUs per host: a worker's GPUs are on its own host, so two 1-worker jobs
 * of 2 GPUs go to two hosts of 2 GPUs, and a third waits for a host with 2
 * free, reserving the GPUs (a later GPU job waits too, a CPU job runs). */
static void test_hosts_gpus(void **state)
{
    fixture *f = *state;
    SUBMIT(f, {"a", 0, 1, 2}, {"b", 0, 1, 2}, {"c", 0, 1, 2}, {"d", 0, 1, 1}, {"e", 0, 1, 0});
    load_queue(f);
    placement_cluster c = {.n_hosts = 2, .slots = {4, 4}, .gpus = {3, 2}};
    size_t picked[MAX_ROWS];
    size_t n = sched_pick(f->queue.v, f->queue.n, NULL, 0, &c, 0, picked, allocs);
    assert_string_equal(owners_of(&f->queue, picked, n), "abe");
    assert_int_equal(allocs[0].part[0].host, 0);
    assert_int_equal(allocs[1].part[0].host, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_share_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_user_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots_and_no_backfill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_skip_reserves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_wait_for_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_short_of_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_reservation_keeps_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_never_overallocate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hosts_disjoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hosts_gpus, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
