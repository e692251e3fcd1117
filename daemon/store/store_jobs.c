/* store_jobs.c — the jobs table: a row as a store_job, submit with group commit
 * (one transaction and one fsync for concurrent submits), single-job reads,
 * every state transition, deletion, retention's picks and resume. */
#include "store/store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <sqlite3.h>

#include "log.h"
#include "timeutil/timeutil.h"

/* ---- rows ------------------------------------------------------------------ */

void store_job_clear(store_job *job)
{
    free(job->error);
    free(job->progress);
    free(job->result);
    free(job->hosts);
    memset(job, 0, sizeof *job);
}

/* Fill *job from a row selected with JOB_COLUMNS. */
void store_row_to_job(sqlite3_stmt *s, store_job *job)
{
    memset(job, 0, sizeof *job);
    job->seq = sqlite3_column_int64(s, 0);
    store_col_copy(s, 1, job->id, sizeof job->id);
    store_col_copy(s, 2, job->owner, sizeof job->owner);
    store_col_copy(s, 3, job->name, sizeof job->name);
    const unsigned char *state = sqlite3_column_text(s, 4);
    if (!state || !job_state_parse((const char *)state, &job->state))
        job->state = JOB_FAILED;
    job->priority = sqlite3_column_int(s, 5);
    job->ranks = sqlite3_column_int(s, 6);
    store_col_copy(s, 7, job->trainer, sizeof job->trainer);
    job->workers = sqlite3_column_int(s, 8);
    job->threads = sqlite3_column_int(s, 9);
    job->time_limit_s = (long)sqlite3_column_int64(s, 10);
    job->vstart = sqlite3_column_double(s, 11);
    job->submitted_at = store_col_time(s, 12);
    job->started_at = store_col_time(s, 13);
    job->finished_at = store_col_time(s, 14);
    job->has_exit_code = sqlite3_column_type(s, 15) != SQLITE_NULL;
    job->exit_code = sqlite3_column_int(s, 15);
    job->error = store_col_strdup(s, 16);
    job->supervisor_pid = (pid_t)sqlite3_column_int64(s, 17);
    job->supervisor_start = sqlite3_column_int64(s, 18);
    job->sid = (pid_t)sqlite3_column_int64(s, 19);
    store_col_copy(s, 20, job->stop_reason, sizeof job->stop_reason);
    job->stop_requested_at = store_col_time(s, 21);
    job->killed = sqlite3_column_int(s, 22) != 0;
    job->progress = store_col_strdup(s, 23);
    job->result = store_col_strdup(s, 24);
    job->gpus = sqlite3_column_int(s, 25);
    store_col_copy(s, 26, job->gpu_devices, sizeof job->gpu_devices);
    job->hosts = store_col_strdup(s, 27);
    job->slurm_id = (long)sqlite3_column_int64(s, 28);
    store_col_copy(s, 29, job->slurm_reason, sizeof job->slurm_reason);
    job->mem_per_rank = sqlite3_column_double(s, 30);
    job->files_removed = sqlite3_column_int(s, 31) != 0;
    job->final_bytes = sqlite3_column_type(s, 32) != SQLITE_NULL &&
                               sqlite3_column_double(s, 33) == job->finished_at
                           ? sqlite3_column_double(s, 32)
                           : -1;
    job->checkpoint_keep =
        sqlite3_column_type(s, 34) != SQLITE_NULL ? sqlite3_column_int(s, 34) : -1;
    store_col_copy(s, 35, job->hparams, sizeof job->hparams);
}

/* ---- submit ---------------------------------------------------------------- */

bool store_random_id(char id[STORE_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[STORE_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n < 0 && errno != EINTR)
            return false;
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        id[2 * i] = hex[raw[i] >> 4];
        id[2 * i + 1] = hex[raw[i] & 15];
    }
    id[STORE_ID_LEN] = '\0';
    return true;
}

static store_status store_submit_txn(store_conn *c, const store_new_job *nj, int max_queued,
                                     double now, char id_out[STORE_ID_LEN + 1])
{
    double queued = 0, vclock = 0, vfinish = 0;
    if (max_queued > 0) {
        if (!store_query_double(c, ST_COUNT_OWNER_QUEUED, nj->owner, &queued))
            return STORE_ERROR;
        if (queued >= max_queued)
            return STORE_LIMIT;
    }
    if (!store_query_double(c, ST_GET_VCLOCK, NULL, &vclock) ||
        !store_query_double(c, ST_GET_OWNER_VFINISH, nj->owner, &vfinish))
        return STORE_ERROR;
    double vstart = vfinish > vclock ? vfinish : vclock;
    if (now <= 0)
        now = timeutil_wall_s(); /* stamped under the write lock: times follow seq */
    sqlite3_stmt *s = store_stmt(c, ST_INSERT_JOB);
    if (!s)
        return STORE_ERROR;
    /* 48 random bits: a collision is rare; retry a few times when it happens. */
    int rc = SQLITE_CONSTRAINT;
    for (int attempt = 0; attempt < 8 && rc == SQLITE_CONSTRAINT; attempt++) {
        if (!store_random_id(id_out)) {
            log_error("store: getrandom failed: %s", strerror(errno));
            return STORE_ERROR;
        }
        store_bind_text(s, 1, id_out);
        store_bind_text(s, 2, nj->owner);
        store_bind_text(s, 3, nj->name);
        sqlite3_bind_int(s, 4, nj->priority);
        sqlite3_bind_int(s, 5, nj->ranks);
        store_bind_text(s, 6, nj->trainer);
        sqlite3_bind_int(s, 7, nj->workers);
        sqlite3_bind_int(s, 8, nj->threads);
        sqlite3_bind_int64(s, 9, nj->time_limit_s);
        sqlite3_bind_double(s, 10, vstart);
        store_bind_text(s, 11, nj->spec);
        sqlite3_bind_double(s, 12, now);
        sqlite3_bind_int(s, 13, nj->gpus);
        sqlite3_bind_double(s, 14, nj->mem_per_rank);
        store_bind_text(s, 15, nj->spec_written);
        if (nj->checkpoint_keep >= 0)
            sqlite3_bind_int(s, 16, nj->checkpoint_keep);
        else
            sqlite3_bind_null(s, 16);
        store_bind_text(s, 17, nj->hparams);
        rc = sqlite3_step(s);
        store_done(s);
    }
    if (!store_log_rc(c, rc, "inserting a job"))
        return STORE_ERROR;
    s = store_stmt(c, ST_UPSERT_OWNER);
    if (!s)
        return STORE_ERROR;
    store_bind_text(s, 1, nj->owner);
    sqlite3_bind_double(s, 2, vstart + nj->ranks);
    rc = sqlite3_step(s);
    store_done(s);
    if (!store_log_rc(c, rc, "updating the owner's fair-share tag"))
        return STORE_ERROR;
    if (!store_event(c, id_out, now, NULL, "queued", NULL))
        return STORE_ERROR;
    return STORE_OK;
}

/* One submit waiting for a group commit. */
typedef struct submit_req {
    const store_new_job *nj;
    int max_queued;
    double now;
    char *id_out;
    store_status rs;
    bool done;
    struct submit_req *next;
} submit_req;

/* Insert a batch of submits in one transaction (one fsync for all); each in
 * its own savepoint, so one refused job does not undo the others. */
static void store_submit_batch(store *st, submit_req *batch)
{
    store_conn *c = store_acquire(st);
    pthread_mutex_lock(&st->write_lock);
    bool ok = store_begin(c);
    for (submit_req *r = batch; r; r = r->next) {
        r->rs = STORE_ERROR;
        if (!ok || !store_exec_sql(c, "SAVEPOINT submit"))
            continue;
        r->rs = store_submit_txn(c, r->nj, r->max_queued, r->now, r->id_out);
        if (r->rs != STORE_OK)
            store_exec_sql(c, "ROLLBACK TO submit");
        store_exec_sql(c, "RELEASE submit");
    }
    if (ok && !store_commit(c)) {
        store_rollback(c);
        for (submit_req *r = batch; r; r = r->next)
            if (r->rs == STORE_OK)
                r->rs = STORE_ERROR;
    }
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
}

store_status store_job_submit(store *st, const store_new_job *nj, int max_queued, double now,
                              char id_out[STORE_ID_LEN + 1])
{
    /* Group commit: the first submitter to find no commit in progress leads,
     * taking every submit queued so far into one transaction; the others
     * wait for it (or lead the next round). Durability per job is unchanged
     * (nobody returns before the commit that holds their job). */
    submit_req me = {nj, max_queued, now, id_out, STORE_ERROR, false, NULL};
    pthread_mutex_lock(&st->batch_lock);
    submit_req **tail = &st->pending;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &me;
    while (!me.done) {
        if (st->leader_active) {
            pthread_cond_wait(&st->batch_done, &st->batch_lock);
            continue;
        }
        st->leader_active = true;
        submit_req *batch = st->pending;
        st->pending = NULL;
        pthread_mutex_unlock(&st->batch_lock);
        store_submit_batch(st, batch);
        pthread_mutex_lock(&st->batch_lock);
        for (submit_req *r = batch, *next; r; r = next) {
            next = r->next;
            r->next = NULL;
            r->done = true;
        }
        st->leader_active = false;
        pthread_cond_broadcast(&st->batch_done);
    }
    pthread_mutex_unlock(&st->batch_lock);
    return me.rs;
}

/* ---- reads ----------------------------------------------------------------- */

/* Run single-row query `id` with `key` bound as ?1: STORE_OK with the row
 * read into out, STORE_NOT_FOUND when there is none. */
static store_status store_read_one(store *st, stmt_id id, const char *key, store_row_fn read,
                                   void *out)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, id);
    if (s) {
        store_bind_text(s, 1, key);
        rs = store_row_one(c, s, read, out, store_stmt_sql[id]);
        store_done(s);
    }
    store_release(st, c);
    return rs;
}

static bool store_read_job(sqlite3_stmt *s, void *out)
{
    store_row_to_job(s, out);
    return true;
}

static bool store_read_text(sqlite3_stmt *s, void *out)
{
    char **text = out;
    *text = store_col_strdup(s, 0);
    return *text != NULL;
}

store_status store_job_get(store *st, const char *id, store_job *job)
{
    return store_read_one(st, ST_GET_JOB, id, store_read_job, job);
}

store_status store_job_latest(store *st, const char *owner, store_job *job)
{
    return store_read_one(st, ST_GET_LATEST, owner, store_read_job, job);
}

store_status store_job_ids_by_prefix(store *st, const char *owner, const char *prefix,
                                     char (*ids)[STORE_ID_LEN + 1], int max, int *n)
{
    *n = 0;
    char upper[STORE_ID_LEN + 2];
    if (strlen(prefix) > STORE_ID_LEN)
        return STORE_OK;
    /* A range on the primary key: "~" sorts after every id character. */
    snprintf(upper, sizeof upper, "%s~", prefix);
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_prepare_once(
        c, "SELECT id FROM jobs WHERE id >= ?1 AND id < ?2 AND (?3 IS NULL OR owner = ?3) "
           "ORDER BY id LIMIT ?4");
    if (s) {
        store_bind_text(s, 1, prefix);
        store_bind_text(s, 2, upper);
        store_bind_text(s, 3, owner);
        sqlite3_bind_int(s, 4, max);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < max)
            store_col_copy(s, 0, ids[(*n)++], STORE_ID_LEN + 1);
        rs = store_log_rc(c, rc, "finding jobs by id prefix") ? STORE_OK : STORE_ERROR;
        sqlite3_finalize(s);
    }
    store_release(st, c);
    return rs;
}

store_status store_job_spec(store *st, const char *id, char **spec)
{
    return store_read_one(st, ST_GET_SPEC, id, store_read_text, spec);
}

store_status store_job_spec_written(store *st, const char *id, char **spec)
{
    return store_read_one(st, ST_GET_SPEC_WRITTEN, id, store_read_text, spec);
}

int store_owner_active(store *st, const char *owner)
{
    store_conn *c = store_acquire(st);
    double n = -1;
    if (!store_query_double(c, ST_COUNT_OWNER_ACTIVE, owner, &n))
        n = -1;
    store_release(st, c);
    return (int)n;
}

/* A job callback and its argument, for store_rows. */
typedef struct job_walk {
    store_job_cb cb;
    void *arg;
} job_walk;

static bool store_job_walk_row(sqlite3_stmt *s, void *walk)
{
    const job_walk *w = walk;
    store_job job;
    store_row_to_job(s, &job);
    bool more = w->cb(&job, w->arg);
    store_job_clear(&job);
    return more;
}

/* Step through a bound statement, one job per row; resets it. */
static store_status store_iterate(store_conn *c, sqlite3_stmt *s, store_job_cb cb, void *arg)
{
    job_walk w = {cb, arg};
    store_status rs = store_rows(c, s, store_job_walk_row, &w, "listing jobs");
    store_done(s);
    return rs;
}

store_status store_stmt_jobs(store *st, stmt_id id, const store_arg *args, int n,
                             store_job_cb cb, void *arg)
{
    job_walk w = {cb, arg};
    return store_stmt_rows(st, id, args, n, store_job_walk_row, &w, "listing jobs");
}

/* ---- transitions ------------------------------------------------------------ */

/* The current state of a job inside a transaction. */
static store_status store_state_of(store_conn *c, const char *id, job_state *state)
{
    sqlite3_stmt *s = store_stmt(c, ST_GET_STATE);
    if (!s)
        return STORE_ERROR;
    store_bind_text(s, 1, id);
    int rc = sqlite3_step(s);
    store_status rs = STORE_ERROR;
    if (rc == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(s, 0);
        rs = name && job_state_parse((const char *)name, state) ? STORE_OK : STORE_ERROR;
    } else if (rc == SQLITE_DONE) {
        rs = STORE_NOT_FOUND;
    } else {
        store_log_rc(c, rc, "reading a job's state");
    }
    store_done(s);
    return rs;
}

/* A bound UPDATE statement to run as a transition; the step function binds
 * its parameters. */
typedef void (*store_binder)(sqlite3_stmt *s, const void *arg);

/* Run UPDATE `id_stmt` for job `id` in a transaction, and record the event
 * from its previous state to `to` (NULL: no state change, no event).
 * STORE_CONFLICT when the UPDATE matched no row. */
static store_status store_transition(store *st, const char *id, stmt_id update,
                                     store_binder bind, const void *arg, const char *to,
                                     const char *detail, double now)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    pthread_mutex_lock(&st->write_lock);
    if (!store_begin(c))
        goto out;
    job_state from;
    rs = store_state_of(c, id, &from);
    if (rs != STORE_OK)
        goto rollback;
    sqlite3_stmt *s = store_stmt(c, update);
    rs = STORE_ERROR;
    if (!s)
        goto rollback;
    store_bind_text(s, 1, id);
    if (bind)
        bind(s, arg);
    int rc = sqlite3_step(s);
    store_done(s);
    if (!store_log_rc(c, rc, store_stmt_sql[update]))
        goto rollback;
    if (sqlite3_changes(c->db) == 0) {
        rs = STORE_CONFLICT;
        goto rollback;
    }
    if (update == ST_SET_STARTING) {
        s = store_stmt(c, ST_BUMP_VCLOCK);
        if (!s)
            goto rollback;
        store_bind_text(s, 1, id);
        rc = sqlite3_step(s);
        store_done(s);
        if (!store_log_rc(c, rc, "advancing the fair-share clock"))
            goto rollback;
    }
    if (to && !store_event(c, id, now, job_state_name(from), to, detail))
        goto rollback;
    if (!store_commit(c))
        goto rollback;
    rs = STORE_OK;
    goto out;
rollback:
    store_rollback(c);
out:
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
}

static void store_bind_now(sqlite3_stmt *s, const void *arg)
{
    sqlite3_bind_double(s, 2, *(const double *)arg);
}

store_status store_job_cancel_queued(store *st, const char *id, double now)
{
    return store_transition(st, id, ST_SET_CANCELLED_QUEUED, store_bind_now, &now, "cancelled",
                            "cancelled while queued", now);
}

typedef struct starting_args {
    double now;
    const char *gpu_devices;
    const char *hosts;
} starting_args;

static void store_bind_starting(sqlite3_stmt *s, const void *arg)
{
    const starting_args *a = arg;
    sqlite3_bind_double(s, 2, a->now);
    store_bind_nonempty(s, 3, a->gpu_devices);
    store_bind_nonempty(s, 4, a->hosts);
}

store_status store_job_mark_starting(store *st, const char *id, const char *gpu_devices,
                                     const char *hosts, double now)
{
    starting_args a = {now, gpu_devices, hosts};
    return store_transition(st, id, ST_SET_STARTING, store_bind_starting, &a, "starting", NULL,
                            now);
}

typedef struct supervisor_args {
    pid_t pid;
    long long start;
} supervisor_args;

static void store_bind_supervisor(sqlite3_stmt *s, const void *arg)
{
    const supervisor_args *a = arg;
    sqlite3_bind_int64(s, 2, a->pid);
    sqlite3_bind_int64(s, 3, a->start);
}

store_status store_job_set_supervisor(store *st, const char *id, pid_t supervisor_pid,
                                      long long supervisor_start)
{
    supervisor_args a = {supervisor_pid, supervisor_start};
    return store_transition(st, id, ST_SET_SUPERVISOR, store_bind_supervisor, &a, NULL, NULL, 0);
}

typedef struct slurm_args {
    long slurm_id;
    const char *reason;
} slurm_args;

static void store_bind_slurm(sqlite3_stmt *s, const void *arg)
{
    const slurm_args *a = arg;
    sqlite3_bind_int64(s, 2, a->slurm_id);
    store_bind_nonempty(s, 3, a->reason);
}

store_status store_job_set_slurm(store *st, const char *id, long slurm_id, const char *reason,
                                 const char *submitted, double now)
{
    slurm_args a = {slurm_id, reason};
    return store_transition(st, id, ST_SET_SLURM, store_bind_slurm, &a,
                            submitted ? "queued" : NULL, submitted, now);
}

static void store_bind_reason(sqlite3_stmt *s, const void *arg)
{
    store_bind_text(s, 2, arg);
}

store_status store_job_requeued(store *st, const char *id, const char *reason, const char *detail,
                                double now)
{
    return store_transition(st, id, ST_SET_REQUEUED, store_bind_reason, reason, "queued", detail,
                            now);
}

store_status store_job_note(store *st, const char *id, job_state state, const char *detail,
                            double now)
{
    const char *name = job_state_name(state);
    return store_transition(st, id, ST_NOTE, store_bind_reason, name, name, detail, now);
}

static void store_bind_sid(sqlite3_stmt *s, const void *arg)
{
    sqlite3_bind_int64(s, 2, *(const pid_t *)arg);
}

store_status store_job_mark_running(store *st, const char *id, pid_t sid, double now)
{
    char detail[64];
    snprintf(detail, sizeof detail, "mpirun session %d", (int)sid);
    return store_transition(st, id, ST_SET_RUNNING, store_bind_sid, &sid, "running",
                            sid > 0 ? detail : NULL, now);
}

typedef struct stop_args {
    const char *reason;
    double now;
} stop_args;

static void store_bind_stop(sqlite3_stmt *s, const void *arg)
{
    const stop_args *a = arg;
    store_bind_text(s, 2, a->reason);
    sqlite3_bind_double(s, 3, a->now);
}

store_status store_job_request_stop(store *st, const char *id, const char *reason, double now)
{
    stop_args a = {reason, now};
    return store_transition(st, id, ST_SET_STOP, store_bind_stop, &a, NULL, NULL, now);
}

store_status store_job_mark_killed(store *st, const char *id)
{
    return store_transition(st, id, ST_SET_KILLED, NULL, NULL, NULL, NULL, 0);
}

typedef struct finish_args {
    job_state state;
    double now;
    const int *exit_code;
    const char *error, *progress, *result;
} finish_args;

static void store_bind_finish(sqlite3_stmt *s, const void *arg)
{
    const finish_args *a = arg;
    store_bind_text(s, 2, job_state_name(a->state));
    sqlite3_bind_double(s, 3, a->now);
    if (a->exit_code)
        sqlite3_bind_int(s, 4, *a->exit_code);
    else
        sqlite3_bind_null(s, 4);
    store_bind_text(s, 5, a->error);
    store_bind_text(s, 6, a->progress);
    store_bind_text(s, 7, a->result);
}

store_status store_job_finish(store *st, const char *id, job_state final_state,
                              const int *exit_code, const char *error, const char *progress,
                              const char *result, double now)
{
    if (!job_state_is_final(final_state))
        return STORE_CONFLICT;
    finish_args a = {final_state, now, exit_code, error, progress, result};
    return store_transition(st, id, ST_SET_FINISHED, store_bind_finish, &a,
                            job_state_name(final_state), error, now);
}

/* Delete job id with statement `which` (which may add conditions) and, when
 * a row went, its events: STORE_NOT_FOUND when none did, whose events stay
 * (a condition may have kept a job that exists). */
static store_status store_delete_job_by(store *st, stmt_id which, const char *id)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    pthread_mutex_lock(&st->write_lock);
    sqlite3_stmt *s;
    if (store_begin(c) && (s = store_stmt(c, which))) {
        store_bind_text(s, 1, id);
        int rc = sqlite3_step(s);
        store_done(s);
        bool found = sqlite3_changes(c->db) > 0;
        if (!found && store_log_rc(c, rc, "deleting a job") && store_commit(c))
            rs = STORE_NOT_FOUND;
        else if (found && store_log_rc(c, rc, "deleting a job") &&
                 (s = store_stmt(c, ST_DELETE_EVENTS))) {
            store_bind_text(s, 1, id);
            rc = sqlite3_step(s);
            store_done(s);
            if (store_log_rc(c, rc, "deleting a job's events") && store_commit(c))
                rs = STORE_OK;
        }
    }
    if (rs == STORE_ERROR)
        store_rollback(c);
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
}

store_status store_job_delete(store *st, const char *id)
{
    return store_delete_job_by(st, ST_DELETE_JOB, id);
}

store_status store_job_delete_finished(store *st, const char *id)
{
    store_status rs = store_delete_job_by(st, ST_DELETE_FINISHED_JOB, id);
    if (rs != STORE_NOT_FOUND)
        return rs;
    job_state state;
    store_conn *c = store_acquire(st);
    rs = store_state_of(c, id, &state);
    store_release(st, c);
    return rs == STORE_OK ? STORE_CONFLICT : rs;
}

/* Delete job id's row (statement `which`, bound ?1 = id) and its events. */
static bool store_delete_with_events(store_conn *c, stmt_id which, const char *id)
{
    sqlite3_stmt *s = store_stmt(c, which);
    if (!s)
        return false;
    store_bind_text(s, 1, id);
    int rc = sqlite3_step(s);
    store_done(s);
    if (!store_log_rc(c, rc, "deleting a job") || !(s = store_stmt(c, ST_DELETE_EVENTS)))
        return false;
    store_bind_text(s, 1, id);
    rc = sqlite3_step(s);
    store_done(s);
    return store_log_rc(c, rc, "deleting a job's events");
}

/* Mark job id's files removed (its row and events stay). */
static bool store_mark_one_removed(store_conn *c, stmt_id which, const char *id)
{
    sqlite3_stmt *s = store_stmt(c, which);
    if (!s)
        return false;
    store_bind_text(s, 1, id);
    int rc = sqlite3_step(s);
    store_done(s);
    return store_log_rc(c, rc, "marking a job's files removed");
}

/* In one transaction: the ids `pick` finds (bound ?1 = before, ?2 = max),
 * then `apply(c, act, id)` on each; nothing and *n = 0 on an error. The
 * two retention passes: forget old jobs, or only their files. */
static store_status store_pick_apply(store *st, stmt_id pick, stmt_id act,
                                     bool (*apply)(store_conn *, stmt_id, const char *),
                                     const char *what, double before, int max,
                                     char (*ids)[STORE_ID_LEN + 1], int *n)
{
    *n = 0;
    if (max < 1)
        return STORE_OK;
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, pick);
    bool ok = s != NULL;
    if (ok) {
        sqlite3_bind_double(s, 1, before);
        sqlite3_bind_int(s, 2, max);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < max)
            store_col_copy(s, 0, ids[(*n)++], STORE_ID_LEN + 1);
        store_done(s);
        ok = store_log_rc(c, rc, what);
    }
    for (int i = 0; ok && i < *n; i++)
        ok = apply(c, act, ids[i]);
    store_status rs = store_write_end(st, c, ok ? STORE_OK : STORE_ERROR);
    if (rs != STORE_OK)
        *n = 0;
    return rs;
}

store_status store_prune_finished(store *st, double before, int max,
                                  char (*ids)[STORE_ID_LEN + 1], int *n)
{
    return store_pick_apply(st, ST_PRUNE_PICK, ST_PRUNE_JOB, store_delete_with_events,
                            "finding finished jobs to forget", before, max, ids, n);
}

store_status store_owner_disk(store *st, const char *owner, double *cached, store_job_cb cb,
                             void *arg)
{
    *cached = 0;
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    /* One read transaction: a job measured meanwhile is counted once. */
    if (store_exec_sql(c, "BEGIN")) {
        sqlite3_stmt *s;
        if (store_query_double(c, ST_OWNER_CACHED_BYTES, owner, cached) &&
            (s = store_stmt(c, ST_OWNER_UNMEASURED)) != NULL) {
            store_bind_text(s, 1, owner);
            rs = store_iterate(c, s, cb, arg);
        }
        if (!store_exec_sql(c, "COMMIT"))
            store_rollback(c);
    }
    store_release(st, c);
    return rs;
}

store_status store_job_set_final_bytes(store *st, const char *id, double finished_at,
                                       double bytes)
{
    store_conn *c = store_acquire(st);
    pthread_mutex_lock(&st->write_lock);
    sqlite3_stmt *s = store_stmt(c, ST_SET_FINAL_BYTES);
    bool ok = s != NULL;
    if (ok) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_double(s, 2, bytes);
        sqlite3_bind_double(s, 3, finished_at);
        int rc = sqlite3_step(s);
        store_done(s);
        ok = store_log_rc(c, rc, "recording a finished job's disk use");
    }
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return ok ? STORE_OK : STORE_ERROR;
}

store_status store_mark_files_removed(store *st, double before, int max,
                                      char (*ids)[STORE_ID_LEN + 1], int *n)
{
    return store_pick_apply(st, ST_FILES_PICK, ST_FILES_MARK, store_mark_one_removed,
                            "finding finished jobs whose files to remove", before, max, ids, n);
}

/* ---- resume (POST /api/v1/jobs/{id}/resume) --------------------------------- */

long long store_owner_queued_of(store_conn *c, const char *job_id)
{
    return store_int_once(c, "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND "
                             "owner = (SELECT owner FROM jobs WHERE id = ?1)",
                          job_id, NULL, "counting queued jobs");
}

/* Whether job id may be resumed: STORE_CONFLICT unless it failed, was
 * cancelled or timed out; STORE_LIMIT when its owner has max_queued jobs
 * queued (0: no limit). Its state into *from. */
static store_status store_may_resume(store_conn *c, const char *id, int max_queued,
                                     job_state *from)
{
    store_status rs = store_state_of(c, id, from);
    if (rs != STORE_OK)
        return rs;
    if (*from != JOB_FAILED && *from != JOB_CANCELLED && *from != JOB_TIMEOUT)
        return STORE_CONFLICT;
    if (max_queued <= 0)
        return STORE_OK;
    long long queued = store_owner_queued_of(c, id);
    if (queued < 0)
        return STORE_ERROR;
    return queued >= max_queued ? STORE_LIMIT : STORE_OK;
}

store_status store_job_resume(store *st, const char *id, int max_queued, const char *detail,
                              double now)
{
    store_conn *c = store_write_begin(st);
    if (!c)
        return STORE_ERROR;
    job_state from;
    store_status rs = store_may_resume(c, id, max_queued, &from);
    if (rs != STORE_OK)
        return store_write_end(st, c, rs);
    /* Back to a queued job as submit makes one, with its start tag at the
     * scheduler's clock (its old tag would put it ahead of every job queued
     * since); migration 0008's trigger counts it as queued again. */
    sqlite3_stmt *s = store_prepare_once(
        c, "UPDATE jobs SET state = 'queued', vstart = (SELECT value FROM meta WHERE key = "
           "'vclock'), started_at = NULL, finished_at = NULL, exit_code = NULL, error = NULL, "
           "supervisor_pid = NULL, supervisor_start = NULL, sid = NULL, stop_reason = NULL, "
           "stop_requested_at = NULL, killed = 0, progress = NULL, result = NULL, "
           "gpu_devices = NULL, hosts = NULL, slurm_id = NULL, slurm_reason = NULL "
           "WHERE id = ?1 AND state IN ('failed', 'cancelled', 'timeout')");
    if (!s)
        return store_write_end(st, c, STORE_ERROR);
    store_bind_text(s, 1, id);
    bool ok = store_step_once(c, s, "resuming a job") &&
              store_event(c, id, now, job_state_name(from), "queued", detail);
    return store_write_end(st, c, ok ? STORE_OK : STORE_ERROR);
}
