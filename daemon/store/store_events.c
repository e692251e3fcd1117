/* store_events.c — the events table: a job's transitions recorded inside the
 * transaction that makes them, read back per job and as the feed that the
 * server-sent event hub follows. */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "log.h"

bool store_event(store_conn *c, const char *id, double now, const char *from,
                 const char *to, const char *detail)
{
    sqlite3_stmt *s = store_stmt(c, ST_INSERT_EVENT);
    if (!s)
        return false;
    store_bind_text(s, 1, id);
    sqlite3_bind_double(s, 2, now);
    store_bind_text(s, 3, from);
    store_bind_text(s, 4, to);
    store_bind_text(s, 5, detail);
    int rc = sqlite3_step(s);
    store_done(s);
    return store_log_rc(c, rc, "recording an event");
}

typedef struct event_walk {
    store_event_cb cb;
    void *arg;
} event_walk;

static bool store_job_event_row(sqlite3_stmt *s, void *walk)
{
    const event_walk *w = walk;
    return w->cb(sqlite3_column_double(s, 0), (const char *)sqlite3_column_text(s, 1),
                 (const char *)sqlite3_column_text(s, 2),
                 (const char *)sqlite3_column_text(s, 3), w->arg);
}

store_status store_job_events(store *st, const char *id, store_event_cb cb, void *arg)
{
    event_walk w = {cb, arg};
    const store_arg a[] = {STORE_TEXT(id)};
    return store_stmt_rows(st, ST_EVENTS, a, 1, store_job_event_row, &w, "listing events");
}

typedef struct feed_walk {
    store_feed_cb cb;
    void *arg;
} feed_walk;

static bool store_feed_row(sqlite3_stmt *s, void *walk)
{
    const feed_walk *w = walk;
    store_feed_event e = {
        .id = sqlite3_column_int64(s, 0),
        .job_id = (const char *)sqlite3_column_text(s, 1),
        .owner = (const char *)sqlite3_column_text(s, 2),
        .at = sqlite3_column_double(s, 3),
        .from = (const char *)sqlite3_column_text(s, 4),
        .to = (const char *)sqlite3_column_text(s, 5),
        .detail = (const char *)sqlite3_column_text(s, 6),
    };
    return w->cb(&e, w->arg);
}

store_status store_events_since(store *st, int64_t after, int limit, store_feed_cb cb, void *arg)
{
    feed_walk w = {cb, arg};
    const store_arg a[] = {STORE_INT(after), STORE_INT(limit)};
    return store_stmt_rows(st, ST_EVENTS_SINCE, a, 2, store_feed_row, &w,
                           "reading the event feed");
}

store_status store_events_last(store *st, int64_t *id)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_EVENTS_LAST);
    if (s) {
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
            *id = sqlite3_column_int64(s, 0);
        rs = store_log_rc(c, rc, "reading the last event id") ? STORE_OK : STORE_ERROR;
        store_done(s);
    }
    store_release(st, c);
    return rs;
}
