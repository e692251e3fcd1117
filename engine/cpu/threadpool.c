/* threadpool.c — a minimal fork-join pool: workers spin briefly on a
 * generation counter (a training step issues thousands of small ops, and a
 * condition-variable wake-up costs more than many of them), then sleep on
 * a condition variable so an idle engine uses no CPU.
 *
 * The partition is static (chunk t is always the same range, with the
 * same tid for its scratch), but which thread runs a chunk is not: every
 * thread, the caller included, claims chunks from a shared counter until
 * none are left. On a shared machine a worker the kernel has descheduled
 * would otherwise hold up every op for a whole time slice; here the caller
 * runs its chunk too and moves on. The results are the same bits either
 * way, since each chunk's work does not depend on who runs it. */
#include "cpu/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define POOL_RELAX() _mm_pause()
#else
#define POOL_RELAX() ((void)0)
#endif

/* How long a waiting thread spins before it sleeps, adapted to the
 * machine. On cores the job has to itself, a long spin (~100 us) keeps
 * the other threads awake across the serial stretches between ops instead
 * of a futex wake-up per op: 20% more mlp and 27% more simplecnn training
 * on a quiet 2-core machine (engine/bench/FINDINGS.md). On a shared
 * machine the same spin takes the core that the thread it waits for needs
 * (3-15x slower dispatches were measured), so there it is a few
 * microseconds. Every POOL_SPIN_CHECK runs each thread of the pool asks
 * the kernel whether it was preempted since its last check (involuntary
 * context switches, which a spinner suffers when another runnable thread
 * wants its core); while any thread was, all spin short. */
#define POOL_SPIN_SHORT 256
#define POOL_SPIN_LONG 4096
#define POOL_SPIN_CHECK 32
/* Calm periods a thread needs, after being preempted, before it counts as
 * uncontended again: a short spin itself makes preemption rarer, and
 * without this hysteresis the spin would flip back and forth. */
#define POOL_SPIN_CALM 4

/* One thread's preemption watch. */
typedef struct pool_watch {
    long nivcsw;        /* involuntary switches at the last check */
    unsigned long runs; /* runs seen since the last check */
    int calm_left;      /* calm periods still needed; > 0: contended */
} pool_watch;

typedef struct pool_worker {
    thread_pool *pool;
    int tid;
    pool_watch watch;
} pool_worker;

struct thread_pool {
    int threads;
    pthread_t *tids;
    pool_worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t cv_start;
    pthread_cond_t cv_done;
    atomic_ulong generation;
    /* (generation & 0xffffffff) << 32 | chunks << 16 | next unclaimed
     * chunk. The chunk count travels in the same word as the tag: a late
     * worker holding an exhausted claim of the previous run must not
     * compare its index against the next run's (larger) count, or its CAS
     * could succeed before the new tag is stored and run a chunk of a run
     * that is over. */
    atomic_ullong claim;
    atomic_int pending;     /* chunks not finished */
    atomic_bool stop;
    atomic_int contended;   /* threads preempted in their last period */
    pool_watch caller_watch;
    pool_fn fn;
    void *ctx;
    long n;
};

#define POOL_MAX_CHUNKS 0xffff

static int pool_spin(thread_pool *p)
{
    return atomic_load_explicit(&p->contended, memory_order_relaxed) > 0 ? POOL_SPIN_SHORT
                                                                          : POOL_SPIN_LONG;
}

/* Every POOL_SPIN_CHECK calls: was the calling thread preempted since the
 * last check? Updates the pool's count of contended threads. */
static void pool_watch_tick(thread_pool *p, pool_watch *w)
{
    if (++w->runs < POOL_SPIN_CHECK)
        return;
    w->runs = 0;
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return;
    bool was = w->calm_left > 0;
    if (ru.ru_nivcsw != w->nivcsw)
        w->calm_left = POOL_SPIN_CALM;
    else if (w->calm_left > 0)
        w->calm_left--;
    w->nivcsw = ru.ru_nivcsw;
    bool is = w->calm_left > 0;
    if (is != was)
        atomic_fetch_add_explicit(&p->contended, is ? 1 : -1, memory_order_relaxed);
}

static void pool_run_chunk(thread_pool *p, int tid, int chunks)
{
    long b = pool_chunk_begin(p->n, tid, chunks);
    long e = pool_chunk_begin(p->n, tid + 1, chunks);
    if (e > b)
        p->fn(p->ctx, b, e, tid);
}

/* Claims and runs chunks of generation `gen` until none are left (or the
 * pool has moved on to a later generation: a late worker's stale view). A
 * chunk's fn and ctx are read only after its claim succeeded, and the
 * caller cannot start the next run before that chunk reports done. */
static void pool_claim_chunks(thread_pool *p, unsigned long gen)
{
    unsigned long long tag = (unsigned long long)(gen & 0xffffffffUL) << 32;
    for (;;) {
        unsigned long long w = atomic_load(&p->claim);
        int chunks = (int)((w >> 16) & POOL_MAX_CHUNKS), next = (int)(w & POOL_MAX_CHUNKS);
        if ((w & ~0xffffffffULL) != tag || next >= chunks)
            return;
        if (!atomic_compare_exchange_weak(&p->claim, &w, w + 1))
            continue;
        pool_run_chunk(p, next, chunks);
        if (atomic_fetch_sub(&p->pending, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *pool_worker_main(void *arg)
{
    pool_worker *w = arg;
    thread_pool *p = w->pool;
    unsigned long seen = 0;
    for (;;) {
        pool_watch_tick(p, &w->watch);
        int spin = pool_spin(p);
        for (int i = 0; i < spin && atomic_load(&p->generation) == seen
                        && !atomic_load(&p->stop); i++)
            POOL_RELAX();
        if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv_start, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = atomic_load(&p->generation);
        pool_claim_chunks(p, seen);
    }
}

thread_pool *pool_create(int threads)
{
    if (threads < 1)
        threads = 1;
    thread_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->contended, 0);
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->cv_start, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    p->tids = calloc((size_t)threads, sizeof *p->tids);
    p->workers = calloc((size_t)threads, sizeof *p->workers);
    if (!p->tids || !p->workers) {
        p->threads = 1;
        pool_free(p);
        return NULL;
    }
    for (int t = 1; t < threads; t++) {
        p->workers[t].pool = p;
        p->workers[t].tid = t;
        if (pthread_create(&p->tids[t], NULL, pool_worker_main, &p->workers[t]) != 0) {
            p->threads = t; /* join only those started */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

void pool_free(thread_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    for (int t = 1; t < p->threads; t++)
        pthread_join(p->tids[t], NULL);
    pthread_cond_destroy(&p->cv_start);
    pthread_cond_destroy(&p->cv_done);
    pthread_mutex_destroy(&p->mu);
    free(p->tids);
    free(p->workers);
    free(p);
}

int pool_threads(const thread_pool *p)
{
    return p->threads;
}

void pool_run(thread_pool *p, long n, pool_fn fn, void *ctx)
{
    pool_run_chunks(p, n, p->threads, fn, ctx);
}

void pool_run_chunks(thread_pool *p, long n, int chunks, pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (p->threads == 1 || chunks <= 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    if (chunks > POOL_MAX_CHUNKS)
        chunks = POOL_MAX_CHUNKS;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store(&p->pending, chunks);
    unsigned long gen = atomic_load(&p->generation) + 1;
    atomic_store(&p->claim, (unsigned long long)(gen & 0xffffffffUL) << 32 |
                                (unsigned long long)chunks << 16);
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->generation, gen);
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);

    pool_claim_chunks(p, gen);

    pool_watch_tick(p, &p->caller_watch);
    int spin = pool_spin(p);
    for (int i = 0; i < spin && atomic_load(&p->pending) > 0; i++)
        POOL_RELAX();
    if (atomic_load(&p->pending) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0)
            pthread_cond_wait(&p->cv_done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

void pool_run_min(thread_pool *p, long n, long min_parallel, pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (n < min_parallel) {
        fn(ctx, 0, n, 0);
        return;
    }
    pool_run(p, n, fn, ctx);
}
