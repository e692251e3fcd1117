/* enginepool.h — the threads that run punch-train for requests
 * (predictions, generations), apart from the HTTP and writer threads, so
 * that slow model work never holds the threads that answer submits, state
 * and cancels (issue 31). Bounded three ways: `threads` run at once, at
 * most `queue_max` wait, and one caller has at most `per_user` running or
 * waiting. A free thread takes the oldest waiting task of the caller with
 * the fewest running, so one caller's backlog does not delay the others'.
 * Pure pthreads: the HTTP side (suspend, reply, resume) is api_engine.c's. */
#ifndef PUNCH_ENGINEPOOL_H
#define PUNCH_ENGINEPOOL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct enginepool enginepool;

/* A task: run(arg, false) on a pool thread; or, when the pool stops
 * before a thread took it, run(arg, true) on the stopping thread (it must
 * answer and free without running anything). */
typedef void (*enginepool_fn)(void *arg, bool dropped);

typedef enum enginepool_result {
    ENGINEPOOL_QUEUED,    /* taken: run will be called exactly once */
    ENGINEPOOL_FULL,      /* queue_max tasks wait already */
    ENGINEPOOL_USER_FULL, /* the caller has per_user tasks in the pool */
    ENGINEPOOL_STOPPING,  /* enginepool_stop has begun */
    ENGINEPOOL_NO_MEMORY,
} enginepool_result;

/* NULL with err filled when a thread or the stop pipe cannot be made. */
enginepool *enginepool_start(int threads, int queue_max, int per_user, char *err,
                             size_t errlen);

/* Hand run(arg) to the pool for user (copied). Anything but
 * ENGINEPOOL_QUEUED: run is never called, the caller answers. */
enginepool_result enginepool_submit(enginepool *p, const char *user, enginepool_fn run,
                                    void *arg);

/* Seconds a refused caller should wait before trying again: the mean
 * time of recent runs times the rounds of waiting tasks ahead, 1 to 300. */
int enginepool_retry_after(enginepool *p);

/* A descriptor that turns readable when the pool stops (for poll, never
 * read): a running task's engine is ended on it (engine_run_until). */
int enginepool_stop_fd(const enginepool *p);
bool enginepool_stopping(enginepool *p);

/* Tasks running and waiting now. */
void enginepool_counts(enginepool *p, int *running, int *waiting);

/* Refuse new tasks, drop the waiting ones (run(arg, true)), make the stop
 * descriptor readable so running engines end, and join the threads. Then
 * enginepool_free, once nobody calls enginepool_submit. NULL is allowed. */
void enginepool_stop(enginepool *p);
void enginepool_free(enginepool *p);

#endif
