/* test_enginepool.c — the engine pool's bounds (queue, per-caller cap),
 * its fair pick and its stop: tasks held on a gate, so every assertion is
 * about order and counts, never about time. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "run/enginepool.h"

typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool open[16];     /* task i may end */
    bool started[16];
    bool dropped[16];
    bool saw_stop[16]; /* task i (a stop waiter) saw the stop descriptor */
    bool wait_stop[16];
    int order[16], n_order;
    enginepool *p;
} gate;

static gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void gate_reset(void)
{
    pthread_mutex_lock(&g.m);
    memset(g.open, 0, sizeof g.open);
    memset(g.started, 0, sizeof g.started);
    memset(g.dropped, 0, sizeof g.dropped);
    memset(g.saw_stop, 0, sizeof g.saw_stop);
    memset(g.wait_stop, 0, sizeof g.wait_stop);
    g.n_order = 0;
    pthread_mutex_unlock(&g.m);
}

/* A task: records that it started, then waits for its gate (or, as a
 * stop waiter, for the pool's stop descriptor). */
static void task(void *arg, bool dropped)
{
    int i = (int)(intptr_t)arg;
    pthread_mutex_lock(&g.m);
    if (dropped) {
        g.dropped[i] = true;
        pthread_mutex_unlock(&g.m);
        return;
    }
    g.started[i] = true;
    g.order[g.n_order++] = i;
    pthread_cond_broadcast(&g.c);
    bool stop_waiter = g.wait_stop[i];
    while (!g.open[i] && !stop_waiter)
        pthread_cond_wait(&g.c, &g.m);
    pthread_mutex_unlock(&g.m);
    if (stop_waiter) {
        struct pollfd pf = {enginepool_stop_fd(g.p), POLLIN, 0};
        int ready = poll(&pf, 1, 30000);
        pthread_mutex_lock(&g.m);
        g.saw_stop[i] = ready == 1;
        pthread_mutex_unlock(&g.m);
    }
}

static void wait_started(int i)
{
    pthread_mutex_lock(&g.m);
    while (!g.started[i])
        pthread_cond_wait(&g.c, &g.m);
    pthread_mutex_unlock(&g.m);
}

static void release(int i)
{
    pthread_mutex_lock(&g.m);
    g.open[i] = true;
    pthread_cond_broadcast(&g.c);
    pthread_mutex_unlock(&g.m);
}

static enginepool_result submit(enginepool *p, const char *user, int i)
{
    return enginepool_submit(p, user, task, (void *)(intptr_t)i);
}

static enginepool *start(int threads, int queue, int per_user)
{
    char err[128];
    gate_reset();
    enginepool *p = enginepool_start(threads, queue, per_user, err, sizeof err);
    assert_non_null(p);
    g.p = p;
    return p;
}

/* Tasks 0 and 1 of user0 and user1 running on the pool's two threads. */
static void run_two(enginepool *p, const char *user0, const char *user1)
{
    assert_int_equal(submit(p, user0, 0), ENGINEPOOL_QUEUED);
    assert_int_equal(submit(p, user1, 1), ENGINEPOOL_QUEUED);
    wait_started(0);
    wait_started(1);
}

static void finish(enginepool *p, int n)
{
    for (int i = 0; i < n; i++)
        release(i);
    enginepool_stop(p);
    enginepool_free(p);
}

/* One thread, one waiting place: the third request is refused while the
 * first runs, whoever sends it. */
static void test_queue_full(void **state)
{
    (void)state;
    enginepool *p = start(1, 1, 4);
    assert_int_equal(submit(p, "alice", 0), ENGINEPOOL_QUEUED);
    wait_started(0);
    assert_int_equal(submit(p, "bob", 1), ENGINEPOOL_QUEUED);
    assert_int_equal(submit(p, "carol", 2), ENGINEPOOL_FULL);
    int running, waiting;
    enginepool_counts(p, &running, &waiting);
    assert_int_equal(running, 1);
    assert_int_equal(waiting, 1);
    assert_true(enginepool_retry_after(p) >= 1);
    release(0);
    wait_started(1);
    /* A place is free again. */
    assert_int_equal(submit(p, "carol", 2), ENGINEPOOL_QUEUED);
    finish(p, 3);
}

/* A caller's running and waiting requests count against its cap; another
 * caller is not affected. */
static void test_per_user_cap(void **state)
{
    (void)state;
    enginepool *p = start(2, 8, 2);
    run_two(p, "alice", "alice");
    assert_int_equal(submit(p, "alice", 2), ENGINEPOOL_USER_FULL);
    assert_int_equal(submit(p, "bob", 3), ENGINEPOOL_QUEUED);
    release(0);
    wait_started(3);
    finish(p, 4);
}

/* A freed thread takes the waiting request of the caller with the fewest
 * running, not the oldest: bob's request overtakes alice's backlog. */
static void test_fair_pick(void **state)
{
    (void)state;
    enginepool *p = start(2, 8, 8);
    run_two(p, "alice", "carol");
    assert_int_equal(submit(p, "alice", 2), ENGINEPOOL_QUEUED);
    assert_int_equal(submit(p, "alice", 3), ENGINEPOOL_QUEUED);
    assert_int_equal(submit(p, "bob", 4), ENGINEPOOL_QUEUED);
    release(1); /* carol's ends: alice runs 1, bob 0 */
    wait_started(4);
    pthread_mutex_lock(&g.m);
    assert_int_equal(g.n_order, 3);
    assert_int_equal(g.order[2], 4);
    pthread_mutex_unlock(&g.m);
    release(4);
    wait_started(2); /* then alice's, oldest first */
    release(2);
    wait_started(3);
    finish(p, 5);
}

/* Stop: waiting requests are dropped (answered by their owner), a running
 * one sees the stop descriptor, later submits are refused. */
static void test_stop(void **state)
{
    (void)state;
    enginepool *p = start(1, 4, 4);
    g.wait_stop[0] = true;
    assert_int_equal(submit(p, "alice", 0), ENGINEPOOL_QUEUED);
    wait_started(0);
    assert_int_equal(submit(p, "bob", 1), ENGINEPOOL_QUEUED);
    assert_int_equal(submit(p, "carol", 2), ENGINEPOOL_QUEUED);
    enginepool_stop(p);
    assert_true(g.saw_stop[0]);
    assert_true(g.dropped[1] && g.dropped[2]);
    assert_false(g.started[1] || g.started[2]);
    assert_true(enginepool_stopping(p));
    assert_int_equal(submit(p, "dave", 3), ENGINEPOOL_STOPPING);
    enginepool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_per_user_cap),
        cmocka_unit_test(test_fair_pick),
        cmocka_unit_test(test_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
