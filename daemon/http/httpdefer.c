/* httpdefer.c — a FIFO of tasks and the threads that run them
 * (httpdefer.h). */
#include "http/httpdefer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct httpdefer_task {
    httpdefer_fn fn;
    void *arg;
    struct httpdefer_task *next;
} httpdefer_task;

struct httpdefer {
    pthread_mutex_t lock;
    pthread_cond_t work;
    httpdefer_task *head, *tail;
    bool stopping;
    int n;
    pthread_t threads[];
};

static void *httpdefer_main(void *arg)
{
    httpdefer *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->work, &p->lock);
        httpdefer_task *t = p->head;
        if (!t)
            break; /* stopping, and nothing left */
        p->head = t->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        t->fn(t->arg);
        free(t);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

httpdefer *httpdefer_start(int n, char *err, size_t errlen)
{
    httpdefer *p = calloc(1, sizeof *p + (size_t)n * sizeof(pthread_t));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    for (; p->n < n; p->n++) {
        int rc = pthread_create(&p->threads[p->n], NULL, httpdefer_main, p);
        if (rc != 0) {
            snprintf(err, errlen, "cannot start the HTTP write threads: %s", strerror(rc));
            httpdefer_stop(p);
            httpdefer_free(p);
            return NULL;
        }
    }
    return p;
}

void httpdefer_run(httpdefer *p, httpdefer_fn fn, void *arg)
{
    httpdefer_task *t = malloc(sizeof *t);
    pthread_mutex_lock(&p->lock);
    if (!t || p->stopping) {
        pthread_mutex_unlock(&p->lock);
        free(t);
        fn(arg);
        return;
    }
    *t = (httpdefer_task){fn, arg, NULL};
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

void httpdefer_stop(httpdefer *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    p->n = 0;
}

void httpdefer_free(httpdefer *p)
{
    if (!p)
        return;
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
