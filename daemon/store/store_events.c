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

store_status store_job_events(store *st, const char *id, store_event_cb cb, void *arg)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_EVENTS);
    if (s) {
        store_bind_text(s, 1, id);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            if (!cb(sqlite3_column_double(s, 0), (const char *)sqlite3_column_text(s, 1),
                    (const char *)sqlite3_column_text(s, 2),
                    (const char *)sqlite3_column_text(s, 3), arg)) {
                rc = SQLITE_DONE;
                break;
            }
        }
        rs = store_log_rc(c, rc, "listing events") ? STORE_OK : STORE_ERROR;
        store_done(s);
    }
    store_release(st, c);
    return rs;
}

store_status store_events_since(store *st, int64_t after, int limit, store_feed_cb cb, void *arg)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_EVENTS_SINCE);
    if (s) {
        sqlite3_bind_int64(s, 1, after);
        sqlite3_bind_int(s, 2, limit);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            store_feed_event e = {
                .id = sqlite3_column_int64(s, 0),
                .job_id = (const char *)sqlite3_column_text(s, 1),
                .owner = (const char *)sqlite3_column_text(s, 2),
                .at = sqlite3_column_double(s, 3),
                .from = (const char *)sqlite3_column_text(s, 4),
                .to = (const char *)sqlite3_column_text(s, 5),
                .detail = (const char *)sqlite3_column_text(s, 6),
            };
            if (!cb(&e, arg)) {
                rc = SQLITE_DONE;
                break;
            }
        }
        rs = store_log_rc(c, rc, "reading the event feed") ? STORE_OK : STORE_ERROR;
        store_done(s);
    }
    store_release(st, c);
    return rs;
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
