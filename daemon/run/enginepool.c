/* enginepool.c — a bounded pool of threads for requests' engine work, with
 * a per-caller cap and fair picking (enginepool.h).
 *
 * Sizes are small (tens of threads, hundreds waiting), so a caller's count
 * is a walk over the waiting list and the running slots rather than a
 * table to keep in step. */
#include "run/enginepool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timeutil/timeutil.h"

typedef struct enginepool_task {
    enginepool_fn run;
    void *arg;
    char *user;
    struct enginepool_task *next;
} enginepool_task;

struct enginepool {
    pthread_mutex_t lock;
    pthread_cond_t work;
    enginepool_task *head, *tail; /* waiting, oldest first */
    int waiting;
    int queue_max, per_user;
    bool stopping;
    double mean_s;     /* recent runs' mean time (moving average), 0: none yet */
    int stop_pipe[2];  /* written once by enginepool_stop, never read */
    int n;             /* threads started */
    char **running;    /* per thread: the user of its task, or NULL */
    pthread_t *threads;
};

typedef struct enginepool_worker {
    enginepool *p;
    int slot;
} enginepool_worker;

/* Tasks of user waiting or running; under the lock. */
static int enginepool_user_count(const enginepool *p, const char *user, bool waiting_too)
{
    int n = 0;
    for (int i = 0; i < p->n; i++)
        n += p->running[i] && strcmp(p->running[i], user) == 0;
    for (const enginepool_task *t = p->head; t && waiting_too; t = t->next)
        n += strcmp(t->user, user) == 0;
    return n;
}

/* Threads running a task; under the lock. */
static int enginepool_busy(const enginepool *p)
{
    int busy = 0;
    for (int i = 0; i < p->n; i++)
        busy += p->running[i] != NULL;
    return busy;
}

/* Unlink and return the oldest waiting task of a user with the fewest
 * running tasks; under the lock, with at least one waiting. */
static enginepool_task *enginepool_pick(enginepool *p)
{
    enginepool_task *best = NULL, *best_prev = NULL, *prev = NULL;
    int best_running = 0;
    for (enginepool_task *t = p->head; t; prev = t, t = t->next) {
        int running = enginepool_user_count(p, t->user, false);
        if (!best || running < best_running) {
            best = t, best_prev = prev, best_running = running;
            if (running == 0)
                break;
        }
    }
    if (best_prev)
        best_prev->next = best->next;
    else
        p->head = best->next;
    if (p->tail == best)
        p->tail = best_prev;
    p->waiting--;
    return best;
}

static void *enginepool_main(void *arg)
{
    enginepool_worker *w = arg;
    enginepool *p = w->p;
    int slot = w->slot;
    free(w);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->stopping)
            break; /* enginepool_stop drops what waits */
        enginepool_task *t = enginepool_pick(p);
        p->running[slot] = t->user;
        pthread_mutex_unlock(&p->lock);
        double t0 = timeutil_mono_s();
        t->run(t->arg, false);
        double took = timeutil_mono_s() - t0;
        pthread_mutex_lock(&p->lock);
        p->mean_s = p->mean_s > 0 ? 0.75 * p->mean_s + 0.25 * took : took;
        p->running[slot] = NULL;
        free(t->user);
        free(t);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

enginepool *enginepool_start(int threads, int queue_max, int per_user, char *err,
                             size_t errlen)
{
    enginepool *p = calloc(1, sizeof *p);
    if (!p || !(p->running = calloc((size_t)threads, sizeof *p->running)) ||
        !(p->threads = calloc((size_t)threads, sizeof *p->threads))) {
        snprintf(err, errlen, "out of memory for the engine pool");
        if (p)
            free(p->running);
        free(p);
        return NULL;
    }
    p->queue_max = queue_max;
    p->per_user = per_user;
    if (pipe2(p->stop_pipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "engine pool: pipe: %s", strerror(errno));
        free(p->threads);
        free(p->running);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    for (; p->n < threads; p->n++) {
        enginepool_worker *w = malloc(sizeof *w);
        int rc = w ? 0 : ENOMEM;
        if (w) {
            *w = (enginepool_worker){p, p->n};
            rc = pthread_create(&p->threads[p->n], NULL, enginepool_main, w);
        }
        if (rc != 0) {
            free(w);
            snprintf(err, errlen, "cannot start the predict threads (predict_threads): %s",
                     strerror(rc));
            enginepool_stop(p);
            enginepool_free(p);
            return NULL;
        }
    }
    return p;
}

enginepool_result enginepool_submit(enginepool *p, const char *user, enginepool_fn run,
                                    void *arg)
{
    enginepool_task *t = malloc(sizeof *t);
    char *u = strdup(user);
    if (!t || !u) {
        free(t);
        free(u);
        return ENGINEPOOL_NO_MEMORY;
    }
    *t = (enginepool_task){run, arg, u, NULL};
    enginepool_result res = ENGINEPOOL_QUEUED;
    pthread_mutex_lock(&p->lock);
    if (p->stopping)
        res = ENGINEPOOL_STOPPING;
    else if (enginepool_user_count(p, user, true) >= p->per_user)
        res = ENGINEPOOL_USER_FULL;
    else if (enginepool_busy(p) + p->waiting >= p->n + p->queue_max)
        res = ENGINEPOOL_FULL;
    if (res == ENGINEPOOL_QUEUED) {
        if (p->tail)
            p->tail->next = t;
        else
            p->head = t;
        p->tail = t;
        p->waiting++;
        pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->lock);
    if (res != ENGINEPOOL_QUEUED) {
        free(u);
        free(t);
    }
    return res;
}

int enginepool_retry_after(enginepool *p)
{
    pthread_mutex_lock(&p->lock);
    double rounds = 1.0 + (double)p->waiting / (p->n > 0 ? p->n : 1);
    double s = (p->mean_s > 0 ? p->mean_s : 1.0) * rounds;
    pthread_mutex_unlock(&p->lock);
    return s < 1 ? 1 : s > 300 ? 300 : (int)(s + 0.999);
}

int enginepool_stop_fd(const enginepool *p)
{
    return p->stop_pipe[0];
}

bool enginepool_stopping(enginepool *p)
{
    pthread_mutex_lock(&p->lock);
    bool stopping = p->stopping;
    pthread_mutex_unlock(&p->lock);
    return stopping;
}

void enginepool_counts(enginepool *p, int *running, int *waiting)
{
    pthread_mutex_lock(&p->lock);
    *running = enginepool_busy(p);
    *waiting = p->waiting;
    pthread_mutex_unlock(&p->lock);
}

void enginepool_stop(enginepool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    bool first = !p->stopping;
    p->stopping = true;
    enginepool_task *dropped = p->head;
    p->head = p->tail = NULL;
    p->waiting = 0;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    /* One byte makes the read end readable for good: every running
     * engine_run_until sees it, however many. */
    if (first && write(p->stop_pipe[1], "", 1) != 1) {
        /* Cannot fail on this fresh pipe; if it did, running engines
         * would end at their time limit instead. */
    }
    while (dropped) {
        enginepool_task *next = dropped->next;
        dropped->run(dropped->arg, true);
        free(dropped->user);
        free(dropped);
        dropped = next;
    }
    for (int i = 0; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    p->n = 0;
}

void enginepool_free(enginepool *p)
{
    if (!p)
        return;
    close(p->stop_pipe[0]);
    close(p->stop_pipe[1]);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->running);
    free(p->threads);
    free(p);
}
