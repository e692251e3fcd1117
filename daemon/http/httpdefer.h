/* httpdefer.h — the threads that run requests which write to the store, so
 * that libmicrohttpd's threads, each serving many connections, never wait
 * for a commit's fsync or the store's write lock (issue 31 #9: readers
 * stalled behind submits). The connection of a deferred request is
 * suspended meanwhile (http.c). */
#ifndef PUNCH_HTTPDEFER_H
#define PUNCH_HTTPDEFER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct httpdefer httpdefer;

typedef void (*httpdefer_fn)(void *arg);

/* n threads waiting for work; NULL with err filled when they cannot start. */
httpdefer *httpdefer_start(int n, char *err, size_t errlen);

/* Run fn(arg) on one of the threads, in the order given. After
 * httpdefer_stop began, or when out of memory, fn runs here and now. */
void httpdefer_run(httpdefer *p, httpdefer_fn fn, void *arg);

/* Run what is queued and end the threads; what comes after runs in its
 * caller's thread. Then httpdefer_free, once nobody calls httpdefer_run. */
void httpdefer_stop(httpdefer *p);
void httpdefer_free(httpdefer *p);

#endif
