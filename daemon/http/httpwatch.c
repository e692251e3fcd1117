/* httpwatch.c — total header and body deadlines on HTTP connections
 * (httpwatch.h says why libmicrohttpd's idle timeout is not enough). */
#include "http/httpwatch.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "timeutil/timeutil.h"

/* How often deadlines are checked: a late client gets at most this much
 * more than its deadline. */
#define HTTPWATCH_PERIOD_S 0.2

struct httpwatch_conn {
    int fd;
    double deadline;   /* timeutil_mono_s(); 0: none */
    const char *phase;
    struct httpwatch_conn *prev, *next;
};

struct httpwatch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    httpwatch_conn *head;
    pthread_t thread;
};

/* Shut down every connection past its deadline. The fd stays libmicrohttpd's
 * (it closes it, after httpwatch_close under the same lock), so the socket
 * shut down is the watched connection's and never a reused descriptor. */
static void httpwatch_sweep(httpwatch *w, double now)
{
    for (httpwatch_conn *c = w->head; c; c = c->next) {
        if (c->deadline <= 0 || now < c->deadline)
            continue;
        log_warn("http: connection closed: its %s took longer than allowed (too slow a client?)",
                 c->phase);
        c->deadline = 0;
        if (shutdown(c->fd, SHUT_RDWR) != 0 && errno != ENOTCONN)
            log_warn("http: shutdown of a late connection: %s", strerror(errno));
    }
}

static void *httpwatch_main(void *arg)
{
    httpwatch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)(HTTPWATCH_PERIOD_S * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        httpwatch_sweep(w, timeutil_mono_s());
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

httpwatch *httpwatch_start(char *err, size_t errlen)
{
    httpwatch *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc == 0)
        rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc == 0 && (rc = pthread_mutex_init(&w->mu, NULL)) != 0)
        pthread_cond_destroy(&w->cv);
    if (rc == 0 && (rc = pthread_create(&w->thread, NULL, httpwatch_main, w)) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
    }
    if (rc != 0) {
        snprintf(err, errlen, "http: connection deadline thread: %s", strerror(rc));
        free(w);
        return NULL;
    }
    return w;
}

void httpwatch_stop(httpwatch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

httpwatch_conn *httpwatch_open(httpwatch *w, int fd, double seconds, const char *phase)
{
    httpwatch_conn *c = calloc(1, sizeof *c);
    if (!c) {
        log_error("http: out of memory: a connection goes without deadlines");
        return NULL;
    }
    c->fd = fd;
    c->deadline = seconds > 0 ? timeutil_mono_s() + seconds : 0;
    c->phase = phase;
    pthread_mutex_lock(&w->mu);
    c->next = w->head;
    if (w->head)
        w->head->prev = c;
    w->head = c;
    pthread_mutex_unlock(&w->mu);
    return c;
}

void httpwatch_set(httpwatch *w, httpwatch_conn *c, double seconds, const char *phase)
{
    if (!c)
        return;
    double deadline = seconds > 0 ? timeutil_mono_s() + seconds : 0;
    pthread_mutex_lock(&w->mu);
    c->deadline = deadline;
    c->phase = phase;
    pthread_mutex_unlock(&w->mu);
}

void httpwatch_close(httpwatch *w, httpwatch_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&w->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&w->mu);
    free(c);
}
