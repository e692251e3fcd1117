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
    store_col_copy(s, 0, ds->owner, sizeof ds->owner);
    store_col_copy(s, 1, ds->name, sizeof ds->name);
    store_col_copy(s, 2, ds->format, sizeof ds->format);
    ds->bytes = sqlite3_column_int64(s, 3);
    store_col_copy(s, 4, ds->sha256, sizeof ds->sha256);
    ds->records = sqlite3_column_type(s, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 5);
    const char *t = (const char *)sqlite3_column_text(s, 6);
    ds->shapes = strdup(t ? t : "{}");
    ds->created_at = sqlite3_column_double(s, 7);
    return ds->shapes != NULL;
}

/* Active jobs of owner whose spec holds ref; -1 on error. */
static long long store_dataset_users(store_conn *c, const char *owner, const char *ref)
{
    return store_int_once(
        c, "SELECT COUNT(*) FROM jobs WHERE owner = ?1 AND state IN ('queued', 'starting', "
           "'running') AND instr(spec, ?2) > 0",
        owner, ref, "counting a dataset's jobs");
}

static long long store_dataset_bytes(store_conn *c, const char *owner, const char *except)
{
    return store_int_once(
        c, "SELECT coalesce(sum(bytes), 0) FROM datasets WHERE owner = ?1 AND name IS NOT ?2",
        owner, except, "summing uploads");
}

static bool store_dataset_user_row(sqlite3_stmt *s, void *id)
{
    store_col_copy(s, 0, id, STORE_ID_LEN + 1);
    return true;
}

store_status store_dataset_user(store *st, const char *owner, const char *ref,
                                char id[STORE_ID_LEN + 1])
{
    store_query q = {
        .sql = "SELECT id FROM jobs WHERE owner = ?1 AND state IN ('queued', 'starting', "
               "'running') AND instr(spec, ?2) > 0 ORDER BY seq LIMIT 1",
        .arg = {owner, ref},
        .row = store_dataset_user_row,
        .ctx = id,
        .what = "finding a dataset's job",
    };
    return store_select(st, &q, true);
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

/* Whether ds may be put: STORE_CONFLICT while a job uses its ref, STORE_LIMIT
 * past the owner's quota; *replaced says whether one of its name exists. */
static store_status store_dataset_may_put(store_conn *c, const store_dataset *ds,
                                          const char *ref, long long quota, bool *replaced)
{
    long long users = store_dataset_users(c, ds->owner, ref);
    long long others = store_dataset_bytes(c, ds->owner, ds->name);
    if (users < 0 || others < 0 || !store_dataset_exists(c, ds->owner, ds->name, replaced))
        return STORE_ERROR;
    if (users > 0)
        return STORE_CONFLICT;
    return others + ds->bytes > quota ? STORE_LIMIT : STORE_OK;
}

static bool store_dataset_insert(store_conn *c, const store_dataset *ds)
{
    sqlite3_stmt *s = store_prepare_once(
        c, "INSERT OR REPLACE INTO datasets (" DATASET_COLUMNS ") "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!s)
        return false;
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
    return store_step_once(c, s, "recording a dataset");
}

store_status store_dataset_put(store *st, const store_dataset *ds, const char *ref,
                               long long quota, bool (*place)(void *arg), void *arg,
                               bool *replaced)
{
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    store_status rs = store_dataset_may_put(c, ds, ref, quota, replaced);
    if (rs == STORE_OK && !(store_dataset_insert(c, ds) && place(arg)))
        rs = STORE_ERROR;
    return store_write_end(st, c, rs);
}

static bool store_dataset_get_row(sqlite3_stmt *s, void *out)
{
    return store_dataset_row(s, out);
}

store_status store_dataset_get(store *st, const char *owner, const char *name,
                               store_dataset *out)
{
    store_query q = {
        .sql = "SELECT " DATASET_COLUMNS " FROM datasets WHERE owner = ?1 AND name = ?2",
        .arg = {owner, name},
        .row = store_dataset_get_row,
        .ctx = out,
        .what = "reading a dataset",
    };
    return store_select(st, &q, true);
}

typedef struct dataset_walk {
    store_dataset_cb cb;
    void *arg;
} dataset_walk;

static bool store_dataset_list_row(sqlite3_stmt *s, void *walk)
{
    const dataset_walk *w = walk;
    store_dataset ds;
    bool ok = store_dataset_row(s, &ds) && w->cb(&ds, w->arg);
    store_dataset_clear(&ds);
    return ok;
}

store_status store_dataset_list(store *st, const char *owner, store_dataset_cb cb, void *arg)
{
    dataset_walk w = {cb, arg};
    store_query q = {
        .sql = owner ? "SELECT " DATASET_COLUMNS " FROM datasets WHERE owner = ?1 ORDER BY name"
                     : "SELECT " DATASET_COLUMNS " FROM datasets ORDER BY owner, name",
        .arg = {owner},
        .row = store_dataset_list_row,
        .ctx = &w,
        .what = "listing datasets",
    };
    return store_select(st, &q, false);
}

/* Whether owner's name may be deleted: STORE_NOT_FOUND, STORE_CONFLICT while a
 * job uses its ref. */
static store_status store_dataset_may_delete(store_conn *c, const char *owner,
                                             const char *name, const char *ref)
{
    bool exists = false;
    if (!store_dataset_exists(c, owner, name, &exists))
        return STORE_ERROR;
    if (!exists)
        return STORE_NOT_FOUND;
    long long users = store_dataset_users(c, owner, ref);
    if (users != 0)
        return users > 0 ? STORE_CONFLICT : STORE_ERROR;
    return STORE_OK;
}

store_status store_dataset_delete(store *st, const char *owner, const char *name,
                                  const char *ref)
{
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    store_status rs = store_dataset_may_delete(c, owner, name, ref);
    if (rs != STORE_OK)
        return store_write_end(st, c, rs);
    sqlite3_stmt *s =
        store_prepare_once(c, "DELETE FROM datasets WHERE owner = ?1 AND name = ?2");
    if (!s)
        return store_write_end(st, c, STORE_ERROR);
    store_bind_text(s, 1, owner);
    store_bind_text(s, 2, name);
    rs = store_step_once(c, s, "deleting a dataset") ? STORE_OK : STORE_ERROR;
    return store_write_end(st, c, rs);
}
