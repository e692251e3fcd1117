/* threadpool.h — the CPU backend's workers: a fixed set of threads that
 * run one parallel-for at a time with a static partition, so the result of
 * every partitioned op depends only on the thread count, never on timing.
 * Which thread runs a chunk is decided at run time (whoever is free claims
 * the next one), so a descheduled worker does not stall the op.
 *
 * The pool owns the cores: OpenBLAS runs single-threaded inside each
 * chunk, so the engine never has more runnable threads than `threads`. */
#ifndef PUNCH_THREADPOOL_H
#define PUNCH_THREADPOOL_H

/* Runs [begin, end), chunk `tid` of a parallel-for. Chunk t always covers
 * the same range and never runs twice at once, so tid indexes per-chunk
 * scratch; it may run on any of the pool's threads. */
typedef void (*pool_fn)(void *ctx, long begin, long end, int tid);

typedef struct thread_pool thread_pool;

/* `threads` >= 1 threads in all (threads - 1 are spawned). NULL on failure. */
thread_pool *pool_create(int threads);
void pool_free(thread_pool *p);
int pool_threads(const thread_pool *p);

/* Splits [0, n) into pool_threads() contiguous chunks (chunk t is
 * [n*t/T, n*(t+1)/T)) and runs them in parallel; returns when all have
 * finished. Chunks may be empty. Not re-entrant: fn must not call pool_run. */
void pool_run(thread_pool *p, long n, pool_fn fn, void *ctx);

/* As pool_run with `chunks` chunks instead of one per thread (chunk c is
 * [n*c/chunks, n*(c+1)/chunks), with tid c): whichever thread is free
 * claims the next, so a thread that starts late (a worker still waking
 * up, or descheduled on a busy machine) takes fewer of them instead of
 * holding up the op with a whole thread's share. On one thread, or with
 * chunks <= 1, fn(ctx, 0, n, 0) runs on the caller. At most 65,535 chunks
 * (more are capped to that). */
void pool_run_chunks(thread_pool *p, long n, int chunks, pool_fn fn, void *ctx);

/* As pool_run, but runs everything on the caller when n < min_parallel:
 * small ops are cheaper than waking a worker. */
void pool_run_min(thread_pool *p, long n, long min_parallel, pool_fn fn, void *ctx);

/* Chunk t of [0, n) split T ways. */
static inline long pool_chunk_begin(long n, int t, int threads)
{
    return n * t / threads;
}

#endif
