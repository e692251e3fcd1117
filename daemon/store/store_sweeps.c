/* store_sweeps.c — the sweeps and sweep_trials tables (migration 0013).
 * Sweeps are rare next to jobs, so their statements are prepared per call
 * (store_prepare_once) rather than kept in every connection. */
#include "store/store_sweeps.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

void store_sweep_clear(store_sweep *sw)
{
    free(sw->doc);
    sw->doc = NULL;
}

static store_status store_sweep_insert(store_conn *c, const char *owner, const char *name,
                                       const char *doc, double now,
                                       char id_out[STORE_ID_LEN + 1])
{
    /* 48 random bits: retry the rare collision a few times. */
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!store_random_id(id_out))
            return STORE_ERROR;
        sqlite3_stmt *s = store_prepare_once(
            c, "INSERT INTO sweeps (id, owner, name, state, created_at, doc) "
               "VALUES (?1, ?2, ?3, 'running', ?4, ?5)");
        if (!s)
            return STORE_ERROR;
        store_bind_text(s, 1, id_out);
        store_bind_text(s, 2, owner);
        store_bind_text(s, 3, name);
        sqlite3_bind_double(s, 4, now);
        store_bind_text(s, 5, doc);
        int rc = sqlite3_step(s);
        sqlite3_finalize(s);
        if (rc == SQLITE_DONE)
            return STORE_OK;
        if (rc != SQLITE_CONSTRAINT) {
            store_log_rc(c, rc, "inserting a sweep");
            return STORE_ERROR;
        }
    }
    return STORE_ERROR;
}

store_status store_sweep_create(store *st, const char *owner, const char *name, const char *doc,
                                const char *const *params, size_t n, double now,
                                char id_out[STORE_ID_LEN + 1])
{
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    store_status rs = store_sweep_insert(c, owner, name, doc, now, id_out);
    for (size_t i = 0; i < n && rs == STORE_OK; i++) {
        sqlite3_stmt *s = store_prepare_once(
            c, "INSERT INTO sweep_trials (sweep_id, idx, params) VALUES (?1, ?2, ?3)");
        if (!s) {
            rs = STORE_ERROR;
            break;
        }
        store_bind_text(s, 1, id_out);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
        store_bind_text(s, 3, params[i]);
        if (!store_step_once(c, s, "inserting a sweep's trial"))
            rs = STORE_ERROR;
    }
    return store_write_end(st, c, rs);
}

#define STORE_SWEEP_COLUMNS "seq, id, owner, name, state, created_at, finished_at, doc"

static void store_sweep_row(sqlite3_stmt *s, store_sweep *sw)
{
    memset(sw, 0, sizeof *sw);
    sw->seq = sqlite3_column_int64(s, 0);
    store_col_copy(s, 1, sw->id, sizeof sw->id);
    store_col_copy(s, 2, sw->owner, sizeof sw->owner);
    store_col_copy(s, 3, sw->name, sizeof sw->name);
    store_col_copy(s, 4, sw->state, sizeof sw->state);
    sw->created_at = store_col_time(s, 5);
    sw->finished_at = store_col_time(s, 6);
    sw->doc = store_col_strdup(s, 7);
}

static bool store_sweep_get_row(sqlite3_stmt *s, void *out)
{
    store_sweep *sw = out;
    store_sweep_row(s, sw);
    if (sw->doc)
        return true;
    store_sweep_clear(sw);
    return false;
}

store_status store_sweep_get(store *st, const char *id, store_sweep *out)
{
    store_query q = {
        .sql = "SELECT " STORE_SWEEP_COLUMNS " FROM sweeps WHERE id = ?1",
        .arg = {id},
        .row = store_sweep_get_row,
        .ctx = out,
        .what = "reading a sweep",
    };
    return store_select(st, &q, true);
}

typedef struct sweep_walk {
    store_sweep_cb cb;
    void *arg;
} sweep_walk;

static bool store_sweep_list_row(sqlite3_stmt *s, void *walk)
{
    const sweep_walk *w = walk;
    store_sweep sw;
    store_sweep_row(s, &sw);
    bool go = w->cb(&sw, w->arg);
    store_sweep_clear(&sw);
    return go;
}

store_status store_sweep_list(store *st, const char *owner, store_sweep_cb cb, void *arg)
{
    sweep_walk w = {cb, arg};
    store_query q = {
        .sql = owner ? "SELECT " STORE_SWEEP_COLUMNS
                       " FROM sweeps WHERE owner = ?1 ORDER BY seq DESC"
                     : "SELECT " STORE_SWEEP_COLUMNS " FROM sweeps ORDER BY seq DESC",
        .arg = {owner},
        .row = store_sweep_list_row,
        .ctx = &w,
        .what = "listing sweeps",
    };
    return store_select(st, &q, false);
}

typedef struct trial_walk {
    store_trial_cb cb;
    void *arg;
} trial_walk;

static bool store_sweep_trial_row(sqlite3_stmt *s, void *walk)
{
    const trial_walk *w = walk;
    const char *state = (const char *)sqlite3_column_text(s, 5);
    job_state js = JOB_QUEUED;
    bool has_job = state && job_state_parse(state, &js);
    store_trial t = {
        .idx = sqlite3_column_int(s, 0),
        .params = (const char *)sqlite3_column_text(s, 1),
        .job_id = (const char *)sqlite3_column_text(s, 2),
        .budget = sqlite3_column_int(s, 3),
        .rungs = (const char *)sqlite3_column_text(s, 4),
        .has_job = has_job,
        .job_state = js,
        .job_finished_at = store_col_time(s, 6),
    };
    return w->cb(&t, w->arg);
}

store_status store_sweep_trials(store *st, const char *id, store_trial_cb cb, void *arg)
{
    trial_walk w = {cb, arg};
    store_query q = {
        .sql = "SELECT t.idx, t.params, t.job_id, t.budget, t.rungs, j.state, j.finished_at "
               "FROM sweep_trials t LEFT JOIN jobs j ON j.id = t.job_id "
               "WHERE t.sweep_id = ?1 ORDER BY t.idx",
        .arg = {id},
        .row = store_sweep_trial_row,
        .ctx = &w,
        .what = "listing a sweep's trials",
    };
    return store_select(st, &q, false);
}

/* Binds an UPDATE's parameters after ?1. */
typedef void (*store_sweep_binder)(sqlite3_stmt *s, const void *arg);

/* Run `sql`, an UPDATE of one row keyed by id as ?1 (bind binds the rest), in
 * a write of its own: STORE_OK when it changed the row, `none` when it
 * matched none. */
static store_status store_sweep_update(store *st, const char *sql, const char *id,
                                       store_sweep_binder bind, const void *arg,
                                       store_status none, const char *what)
{
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_prepare_once(c, sql);
    if (s) {
        store_bind_text(s, 1, id);
        bind(s, arg);
        if (store_step_once(c, s, what))
            rs = sqlite3_changes(c->db) == 1 ? STORE_OK : none;
    }
    return store_write_end(st, c, rs);
}

typedef struct trial_set_args {
    int idx;
    const char *job_id;
    int budget;
    const char *rungs;
} trial_set_args;

static void store_bind_trial_set(sqlite3_stmt *s, const void *arg)
{
    const trial_set_args *a = arg;
    sqlite3_bind_int(s, 2, a->idx);
    store_bind_text(s, 3, a->job_id);
    sqlite3_bind_int(s, 4, a->budget);
    store_bind_text(s, 5, a->rungs);
}

store_status store_sweep_trial_set(store *st, const char *id, int idx, const char *job_id,
                                   int budget, const char *rungs)
{
    trial_set_args a = {idx, job_id, budget, rungs};
    return store_sweep_update(
        st,
        "UPDATE sweep_trials SET job_id = coalesce(?3, job_id), budget = ?4, rungs = ?5 "
        "WHERE sweep_id = ?1 AND idx = ?2",
        id, store_bind_trial_set, &a, STORE_NOT_FOUND, "updating a sweep's trial");
}

typedef struct finish_args {
    const char *state;
    double now;
} finish_args;

static void store_bind_finish(sqlite3_stmt *s, const void *arg)
{
    const finish_args *a = arg;
    store_bind_text(s, 2, a->state);
    sqlite3_bind_double(s, 3, a->now);
}

store_status store_sweep_finish(store *st, const char *id, const char *state, double now)
{
    finish_args a = {state, now};
    return store_sweep_update(
        st, "UPDATE sweeps SET state = ?2, finished_at = ?3 WHERE id = ?1 AND state = 'running'",
        id, store_bind_finish, &a, STORE_CONFLICT, "ending a sweep");
}

typedef struct sweep_of_job {
    char *sweep_id;
    char **params;
} sweep_of_job;

static bool store_sweep_of_job_row(sqlite3_stmt *s, void *out)
{
    const sweep_of_job *o = out;
    store_col_copy(s, 0, o->sweep_id, STORE_ID_LEN + 1);
    return !o->params || (*o->params = store_col_strdup(s, 1));
}

store_status store_sweep_of_job(store *st, const char *job_id, char sweep_id[STORE_ID_LEN + 1],
                                char **params)
{
    sweep_of_job o = {sweep_id, params};
    store_query q = {
        .sql = "SELECT sweep_id, params FROM sweep_trials WHERE job_id = ?1",
        .arg = {job_id},
        .row = store_sweep_of_job_row,
        .ctx = &o,
        .what = "finding a job's sweep",
    };
    return store_select(st, &q, true);
}

store_status store_sweep_requeue(store *st, const char *job_id, const char *spec,
                                 const char *written, int max_queued, const char *detail,
                                 double now)
{
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    store_status rs = STORE_ERROR;
    long long queued = max_queued > 0 ? store_owner_queued_of(c, job_id) : 0;
    if (queued < 0)
        return store_write_end(st, c, STORE_ERROR);
    if (max_queued > 0 && queued >= max_queued)
        return store_write_end(st, c, STORE_LIMIT);
    /* As store_job_resume does for a failed job: a queued job as submit
     * makes one, its start tag at the scheduler's clock so it never jumps
     * ahead of jobs queued since it first ran. */
    sqlite3_stmt *s = store_prepare_once(
        c, "UPDATE jobs SET state = 'queued', spec = ?2, spec_written = ?3, vstart = (SELECT "
           "value FROM meta WHERE key = 'vclock'), started_at = NULL, finished_at = NULL, "
           "exit_code = NULL, error = NULL, supervisor_pid = NULL, supervisor_start = NULL, "
           "sid = NULL, stop_reason = NULL, stop_requested_at = NULL, killed = 0, progress = "
           "NULL, result = NULL, gpu_devices = NULL, hosts = NULL, slurm_id = NULL, "
           "slurm_reason = NULL WHERE id = ?1 AND state = 'succeeded'");
    if (s) {
        store_bind_text(s, 1, job_id);
        store_bind_text(s, 2, spec);
        store_bind_text(s, 3, written);
        if (store_step_once(c, s, "requeueing a promoted trial")) {
            rs = sqlite3_changes(c->db) == 1 ? STORE_OK : STORE_CONFLICT;
            if (rs == STORE_OK && !store_event(c, job_id, now, "succeeded", "queued", detail))
                rs = STORE_ERROR;
        }
    }
    return store_write_end(st, c, rs);
}

/* ---- PBT's params and job lists (issue 33, second part) ------------------- */

typedef struct trial_params_args {
    int idx;
    const char *params;
} trial_params_args;

static void store_bind_trial_params(sqlite3_stmt *s, const void *arg)
{
    const trial_params_args *a = arg;
    sqlite3_bind_int(s, 2, a->idx);
    store_bind_text(s, 3, a->params);
}

store_status store_sweep_trial_params(store *st, const char *id, int idx, const char *params)
{
    trial_params_args a = {idx, params};
    return store_sweep_update(
        st, "UPDATE sweep_trials SET params = ?3 WHERE sweep_id = ?1 AND idx = ?2", id,
        store_bind_trial_params, &a, STORE_NOT_FOUND, "updating a sweep trial's params");
}

typedef struct job_trial_walk {
    store_job_trial_cb cb;
    void *arg;
} job_trial_walk;

static bool store_sweep_job_trial_row(sqlite3_stmt *s, void *walk)
{
    const job_trial_walk *w = walk;
    return w->cb((const char *)sqlite3_column_text(s, 0),
                 (const char *)sqlite3_column_text(s, 1),
                 (const char *)sqlite3_column_text(s, 2), w->arg);
}

store_status store_sweep_of_jobs(store *st, const char *job_ids, store_job_trial_cb cb,
                                 void *arg)
{
    job_trial_walk w = {cb, arg};
    /* One statement for the whole page, whatever its size: each id is
     * found through the sweep_trials_job index. */
    store_query q = {
        .sql = "SELECT job_id, sweep_id, params FROM sweep_trials "
               "WHERE job_id IN (SELECT value FROM json_each(?1))",
        .arg = {job_ids},
        .row = store_sweep_job_trial_row,
        .ctx = &w,
        .what = "finding a page's sweeps",
    };
    return store_select(st, &q, false);
}
