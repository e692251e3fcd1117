/* dist_sync_progress.c — a thread that drives the allreduce buckets'
 * non-blocking reductions while backward computes.
 *
 * Open MPI's TCP transport and its non-blocking collectives (libnbc)
 * advance only inside MPI calls: a bucket started early in backward would
 * otherwise move one socket buffer's worth at the MPI_Test between layers
 * (a conv layer's backward can take milliseconds) and the rest in the
 * final wait. While requests are in flight this thread calls MPI_Testall
 * every DIST_PROGRESS_POLL_US and sleeps in between, so it takes a few
 * microseconds of CPU per poll, not a core.
 *
 * MPI is initialised at MPI_THREAD_SERIALIZED (dist_run.c): any thread may
 * call MPI, one at a time. The mutex here is that "one at a time": the
 * trainer takes it (dist_progress_lock) around each MPI call it makes while
 * the thread is watching, and the thread polls only between
 * dist_progress_watch and dist_progress_idle. Where MPI gives less than
 * SERIALIZED (a program that initialised MPI itself), there is no thread
 * and the caller tests between layers as before. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <mpi.h>

#include "distributed/dist_sync_progress.h"
#include "distributed/dist_error.h"

/* Short enough that a 10 Gbit/s link drains at most ~125 KB per poll (a
 * socket buffer holds more), long enough to cost little CPU. */
#define DIST_PROGRESS_POLL_US 100

struct dist_progress {
    pthread_t thread;
    pthread_mutex_t mu;     /* serialises MPI calls between the two threads */
    pthread_cond_t wake;
    MPI_Request *req;       /* the trainer's array; the first n are watched */
    int n;
    bool quit;
};

static void *dist_progress_main(void *arg)
{
    dist_progress *p = arg;
    const struct timespec poll = {0, DIST_PROGRESS_POLL_US * 1000L};
    pthread_mutex_lock(&p->mu);
    while (!p->quit) {
        if (p->n == 0) {
            pthread_cond_wait(&p->wake, &p->mu);
            continue;
        }
        int flag;
        DIST_MPI(MPI_Testall(p->n, p->req, &flag, MPI_STATUSES_IGNORE));
        pthread_mutex_unlock(&p->mu);
        nanosleep(&poll, NULL);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

dist_progress *dist_progress_start(void)
{
    int level = MPI_THREAD_SINGLE;
    if (MPI_Query_thread(&level) != MPI_SUCCESS || level < MPI_THREAD_SERIALIZED)
        return NULL;
    dist_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    if (pthread_create(&p->thread, NULL, dist_progress_main, p) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void dist_progress_stop(dist_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void dist_progress_lock(dist_progress *p)
{
    pthread_mutex_lock(&p->mu);
}

void dist_progress_unlock(dist_progress *p)
{
    pthread_mutex_unlock(&p->mu);
}

void dist_progress_watch(dist_progress *p, MPI_Request *req, int n)
{
    p->req = req;
    p->n = n;
    pthread_cond_signal(&p->wake);
}

void dist_progress_idle(dist_progress *p)
{
    p->n = 0;
}
