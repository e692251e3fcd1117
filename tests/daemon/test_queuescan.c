/* test_queuescan.c — the window a scheduling pass reads from the queue.
 * A pass reads the head of the queue in run order (monitor.c: 1000 rows)
 * and skips the jobs of users at their running limit. Read as it is, a
 * head made only of such jobs hid every job behind it: with enough users
 * at their limit, a job that could start now never did, slots free.
 * store_queue_scan_startable() leaves those users' jobs out of the window;
 * here the window is 10 rows, five users at their limit have 15 jobs ahead
 * of a newcomer's, and the newcomer's job is read and started, by the same
 * sched_pick() monitor.c runs; order is otherwise unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/joblist.h"
#include "sched/scheduler.h"
#include "scratch.h"

typedef struct fixture {
    char dir[SCRATCH_DIR_LEN];
    store *st;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !scratch_create(f->dir, "queuescan"))
        return -1;
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/q.db", f->dir);
    if (!(f->st = store_open(path, 2, err, sizeof err)))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_fault_sim(NULL, NULL);
    store_close(f->st);
    bool removed = scratch_remove(f->dir);
    free(f);
    return removed ? 0 : -1;
}

static void submit(fixture *f, const char *owner, int priority, char id[STORE_ID_LEN + 1])
{
    store_new_job nj = {.owner = owner, .name = "j", .trainer = "single", .spec = "{}",
                        .priority = priority, .ranks = 1, .workers = 1, .threads = 1};
    assert_int_equal(store_job_submit(f->st, &nj, 0, 1000, id), STORE_OK);
}

static bool has_owner(const job_list *l, const char *owner)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].owner, owner) == 0)
            return true;
    return false;
}

static bool fail_all(void *arg, const char *sql)
{
    (void)arg, (void)sql;
    return true;
}

static void test_window_skips_users_at_their_limit(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], owner[16];
    /* Five users, one job running each (the limit is 1) and three more
     * queued at a higher priority than the newcomer's. */
    for (int u = 0; u < 5; u++) {
        snprintf(owner, sizeof owner, "u%d", u);
        submit(f, owner, 1, id);
        assert_int_equal(store_job_mark_starting(f->st, id, NULL, NULL, 1001), STORE_OK);
        for (int k = 0; k < 3; k++)
            submit(f, owner, 1, id);
    }
    char newcomer[STORE_ID_LEN + 1];
    submit(f, "newcomer", 0, newcomer);

    /* The head as it is: ten jobs of users at their limit, nothing else. */
    job_list head = {0}, window = {0}, active = {0};
    assert_int_equal(store_queue_scan(f->st, 10, joblist_collect, &head), STORE_OK);
    assert_int_equal(head.n, 10);
    assert_false(has_owner(&head, "newcomer"));

    /* The window without them: the newcomer's job, and it starts. */
    assert_int_equal(store_queue_scan_startable(f->st, 10, 1, joblist_collect, &window),
                     STORE_OK);
    assert_int_equal(window.n, 1);
    assert_string_equal(window.v[0].id, newcomer);
    assert_int_equal(store_active_jobs(f->st, joblist_collect, &active), STORE_OK);
    assert_int_equal(active.n, 5);
    placement_cluster avail = {.n_hosts = 1, .slots = {8}};
    size_t picked[1];
    placement allocs[1];
    assert_int_equal(sched_pick(window.v, window.n, active.v, active.n, &avail, 1, picked, allocs),
                     1);

    /* A limit of 2: every user may start one more; run order as before. */
    job_list two = {0};
    assert_int_equal(store_queue_scan_startable(f->st, 10, 2, joblist_collect, &two), STORE_OK);
    assert_int_equal(two.n, head.n);
    for (size_t i = 0; i < two.n; i++)
        assert_string_equal(two.v[i].id, head.v[i].id);
    /* No limit: the plain head. */
    job_list none = {0};
    assert_int_equal(store_queue_scan_startable(f->st, 10, 0, joblist_collect, &none), STORE_OK);
    assert_int_equal(none.n, head.n);

    store_fault_sim(fail_all, NULL);
    job_list failed = {0};
    assert_int_equal(store_queue_scan_startable(f->st, 10, 1, joblist_collect, &failed),
                     STORE_ERROR);
    store_fault_sim(NULL, NULL);
    joblist_free(&failed);
    joblist_free(&none);
    joblist_free(&two);
    joblist_free(&active);
    joblist_free(&window);
    joblist_free(&head);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_window_skips_users_at_their_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
