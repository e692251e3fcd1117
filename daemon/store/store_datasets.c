/* store_datasets.c — the datasets table (migration 0007): uploads' metadata put,
 * read, listed and deleted, refused (409) while a queued or running job's spec
 * names the upload. */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "log.h"

void store_dataset_clear(store_dataset *ds)
{
    free(ds->shapes);
    ds->shapes = NULL;
}

#define DATASET_COLUMNS "owner, name, format, bytes, sha256, records, shapes, created_at"

static bool store_dataset_row(sqlite3_stmt *s, store_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    const char *t;
    snprintf(ds->owner, sizeof ds->owner, "%s", (t = (const char *)sqlite3_column_text(s, 0)) ? t : "");
    snprintf(ds->name, sizeof ds->name, "%s", (t = (const char *)sqlite3_column_text(s, 1)) ? t : "");
    snprintf(ds->format, sizeof ds->format, "%s", (t = (const char *)sqlite3_column_text(s, 2)) ? t : "");
    ds->bytes = sqlite3_column_int64(s, 3);
    snprintf(ds->sha256, sizeof ds->sha256, "%s", (t = (const char *)sqlite3_column_text(s, 4)) ? t : "");
    ds->records = sqlite3_column_type(s, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 5);
    t = (const char *)sqlite3_column_text(s, 6);
    ds->shapes = strdup(t ? t : "{}");
    ds->created_at = sqlite3_column_double(s, 7);
    return ds->shapes != NULL;
}

/* Active jobs of owner whose spec holds ref; -1 on error. */
static long long store_dataset_users(store_conn *c, const char *owner, const char *ref)
{
    sqlite3_stmt *s = store_prepare_once(
        c, "SELECT COUNT(*) FROM jobs WHERE owner = ?1 AND state IN ('queued', 'starting', "
           "'running') AND instr(spec, ?2) > 0");
    if (!s)
        return -1;
    store_bind_text(s, 1, owner);
    store_bind_text(s, 2, ref);
    int rc = sqlite3_step(s);
    long long n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    if (rc != SQLITE_ROW)
        store_log_rc(c, rc, "counting a dataset's jobs");
    sqlite3_finalize(s);
    return n;
}

static long long store_dataset_bytes(store_conn *c, const char *owner, const char *except)
{
    sqlite3_stmt *s = store_prepare_once(
        c, "SELECT coalesce(sum(bytes), 0) FROM datasets WHERE owner = ?1 AND name IS NOT ?2");
    if (!s)
        return -1;
    store_bind_text(s, 1, owner);
    store_bind_text(s, 2, except);
    int rc = sqlite3_step(s);
    long long n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    if (rc != SQLITE_ROW)
        store_log_rc(c, rc, "summing uploads");
    sqlite3_finalize(s);
    return n;
}

store_status store_dataset_user(store *st, const char *owner, const char *ref,
                                char id[STORE_ID_LEN + 1])
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_prepare_once(
        c, "SELECT id FROM jobs WHERE owner = ?1 AND state IN ('queued', 'starting', "
           "'running') AND instr(spec, ?2) > 0 ORDER BY seq LIMIT 1");
    if (s) {
        store_bind_text(s, 1, owner);
        store_bind_text(s, 2, ref);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            store_col_copy(s, 0, id, STORE_ID_LEN + 1);
            rs = STORE_OK;
        } else if (rc == SQLITE_DONE) {
            rs = STORE_NOT_FOUND;
        } else {
            store_log_rc(c, rc, "finding a dataset's job");
        }
        sqlite3_finalize(s);
    }
    store_release(st, c);
    return rs;
}

long long store_dataset_usage(store *st, const char *owner)
{
    store_conn *c = store_acquire(st);
    long long n = store_dataset_bytes(c, owner, NULL);
    store_release(st, c);
    return n;
}

static bool store_dataset_exists(store_conn *c, const char *owner, const char *name,
                                 bool *exists)
{
    sqlite3_stmt *s =
        store_prepare_once(c, "SELECT 1 FROM datasets WHERE owner = ?1 AND name = ?2");
    if (!s)
        return false;
    store_bind_text(s, 1, owner);
    store_bind_text(s, 2, name);
    int rc = sqlite3_step(s);
    *exists = rc == SQLITE_ROW;
    sqlite3_finalize(s);
    return store_log_rc(c, rc, "looking up a dataset");
}

store_status store_dataset_put(store *st, const store_dataset *ds, const char *ref,
                               long long quota, bool (*place)(void *arg), void *arg,
                               bool *replaced)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    pthread_mutex_lock(&st->write_lock);
    if (!store_begin(c))
        goto out;
    long long users = store_dataset_users(c, ds->owner, ref);
    long long others = store_dataset_bytes(c, ds->owner, ds->name);
    if (users < 0 || others < 0 || !store_dataset_exists(c, ds->owner, ds->name, replaced))
        goto out;
    if (users > 0) {
        rs = STORE_CONFLICT;
        goto out;
    }
    if (others + ds->bytes > quota) {
        rs = STORE_LIMIT;
        goto out;
    }
    sqlite3_stmt *s = store_prepare_once(
        c, "INSERT OR REPLACE INTO datasets (" DATASET_COLUMNS ") "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!s)
        goto out;
    store_bind_text(s, 1, ds->owner);
    store_bind_text(s, 2, ds->name);
    store_bind_text(s, 3, ds->format);
    sqlite3_bind_int64(s, 4, ds->bytes);
    store_bind_text(s, 5, ds->sha256);
    if (ds->records >= 0)
        sqlite3_bind_int64(s, 6, ds->records);
    else
        sqlite3_bind_null(s, 6);
    store_bind_text(s, 7, ds->shapes ? ds->shapes : "{}");
    sqlite3_bind_double(s, 8, ds->created_at);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (store_log_rc(c, rc, "recording a dataset") && place(arg) && store_commit(c))
        rs = STORE_OK;
out:
    if (rs != STORE_OK)
        store_rollback(c);
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
}

store_status store_dataset_get(store *st, const char *owner, const char *name,
                               store_dataset *out)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_prepare_once(
        c, "SELECT " DATASET_COLUMNS " FROM datasets WHERE owner = ?1 AND name = ?2");
    if (s) {
        store_bind_text(s, 1, owner);
        store_bind_text(s, 2, name);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
            rs = store_dataset_row(s, out) ? STORE_OK : STORE_ERROR;
        else if (store_log_rc(c, rc, "reading a dataset"))
            rs = STORE_NOT_FOUND;
        sqlite3_finalize(s);
    }
    store_release(st, c);
    return rs;
}

store_status store_dataset_list(store *st, const char *owner, store_dataset_cb cb, void *arg)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_prepare_once(
        c, owner ? "SELECT " DATASET_COLUMNS " FROM datasets WHERE owner = ?1 ORDER BY name"
                 : "SELECT " DATASET_COLUMNS " FROM datasets ORDER BY owner, name");
    if (s) {
        if (owner)
            store_bind_text(s, 1, owner);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            store_dataset ds;
            bool ok = store_dataset_row(s, &ds) && cb(&ds, arg);
            store_dataset_clear(&ds);
            if (!ok) {
                rc = SQLITE_DONE;
                break;
            }
        }
        rs = store_log_rc(c, rc, "listing datasets") ? STORE_OK : STORE_ERROR;
        sqlite3_finalize(s);
    }
    store_release(st, c);
    return rs;
}

store_status store_dataset_delete(store *st, const char *owner, const char *name,
                                  const char *ref)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    pthread_mutex_lock(&st->write_lock);
    bool exists = false;
    long long users;
    if (!store_begin(c) || !store_dataset_exists(c, owner, name, &exists))
        goto out;
    if (!exists) {
        rs = STORE_NOT_FOUND;
        goto out;
    }
    if ((users = store_dataset_users(c, owner, ref)) != 0) {
        rs = users > 0 ? STORE_CONFLICT : STORE_ERROR;
        goto out;
    }
    sqlite3_stmt *s =
        store_prepare_once(c, "DELETE FROM datasets WHERE owner = ?1 AND name = ?2");
    if (!s)
        goto out;
    store_bind_text(s, 1, owner);
    store_bind_text(s, 2, name);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (store_log_rc(c, rc, "deleting a dataset") && store_commit(c))
        rs = STORE_OK;
out:
    if (rs != STORE_OK)
        store_rollback(c);
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
}
