/* test_threadpool.c — the engine's fork-join pool: every chunk of every run
 * runs exactly once, with that run's function, context and range, also
 * when consecutive runs change the chunk count (a late worker holding the
 * previous run's exhausted claim must not run a chunk of a run that is
 * over: that race once crashed the fused training step). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/threadpool.h"

enum { MAX_CHUNKS = 16, RUNS = 200000 };

typedef struct run_ctx {
    long run;                    /* which run this context belongs to */
    long n;
    int chunks;
    int hits[MAX_CHUNKS];        /* times each chunk ran */
    long covered;                /* elements covered, summed over chunks */
} run_ctx;

static long current_run;

static void chunk_a(void *arg, long begin, long end, int tid)
{
    run_ctx *c = arg;
    /* Only the run in progress may execute: the caller has not returned. */
    assert_int_equal(c->run, __atomic_load_n(&current_run, __ATOMIC_SEQ_CST));
    assert_true(tid >= 0 && tid < c->chunks);
    assert_int_equal(begin, pool_chunk_begin(c->n, tid, c->chunks));
    assert_int_equal(end, pool_chunk_begin(c->n, tid + 1, c->chunks));
    __atomic_fetch_add(&c->hits[tid], 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&c->covered, end - begin, __ATOMIC_SEQ_CST);
}

/* A second function, so a run executed with the wrong fn shows as well. */
static void chunk_b(void *arg, long begin, long end, int tid)
{
    chunk_a(arg, begin, end, tid);
}

static void test_chunk_counts_alternate(void **state)
{
    (void)state;
    thread_pool *p = pool_create(2);
    assert_non_null(p);
    static const int counts[] = {2, 8, 3, 16, 2, 5};
    for (long r = 0; r < RUNS; r++) {
        run_ctx c = {.run = r, .n = 1000 + r % 7, .chunks = counts[r % 6]};
        __atomic_store_n(&current_run, r, __ATOMIC_SEQ_CST);
        pool_run_chunks(p, c.n, c.chunks, (r & 1) ? chunk_b : chunk_a, &c);
        __atomic_store_n(&current_run, -1, __ATOMIC_SEQ_CST);
        for (int t = 0; t < c.chunks; t++)
            assert_int_equal(c.hits[t], 1);
        assert_int_equal(c.covered, c.n);
    }
    pool_free(p);
}

static void test_pool_run_one_chunk_per_thread(void **state)
{
    (void)state;
    thread_pool *p = pool_create(3);
    assert_non_null(p);
    for (long r = 0; r < 2000; r++) {
        run_ctx c = {.run = r, .n = 10 + r % 5, .chunks = pool_threads(p)};
        __atomic_store_n(&current_run, r, __ATOMIC_SEQ_CST);
        pool_run(p, c.n, chunk_a, &c);
        for (int t = 0; t < c.chunks; t++)
            assert_int_equal(c.hits[t], 1);
        assert_int_equal(c.covered, c.n);
    }
    pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_counts_alternate),
        cmocka_unit_test(test_pool_run_one_chunk_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
