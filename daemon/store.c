/* store.c — SQLite job store: schema migrations, a connection pool, prepared
 * statements and one transaction per state change.
 *
 * Durability: WAL with synchronous=FULL. In WAL mode NORMAL would already
 * survive a crash of punchcardd (the WAL sits in the page cache), but not a
 * power loss or kernel crash after the 201 went out; FULL fsyncs the WAL on
 * every commit, which measured ~0.3 ms here, so durable submits still run in
 * the thousands per second. */
#include "store.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <sqlite3.h>

#include "log.h"
#include "store_schema.h" /* generated: store_migrations[] from schema/ */
#include "timeutil/timeutil.h"

#define JOB_COLUMNS                                                                        \
    "seq, id, owner, name, state, priority, ranks, trainer, workers, threads, "           \
    "time_limit_s, vstart, submitted_at, started_at, finished_at, exit_code, error, "     \
    "supervisor_pid, supervisor_start, sid, stop_reason, stop_requested_at, killed, "     \
    "progress, result, gpus, gpu_devices, hosts, slurm_id, slurm_reason, mem_per_rank, "  \
    "files_removed, final_bytes, final_bytes_at"

/* Run order of the queue: priority, fair-share start tag, FIFO. */
#define QUEUE_ORDER "priority DESC, vstart, seq"

/* The rows of a page (store_job_page) after its filters: ?3 the cursor,
 * ?4 the first seq the `since` time admits, ?5 that time, ?6 the limit. */
#define PAGE_RANGE "seq < ?3 AND seq >= ?4 AND submitted_at >= ?5 ORDER BY seq DESC LIMIT ?6"

typedef enum stmt_id {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_COUNT_OWNER_QUEUED,
    ST_COUNT_OWNER_ACTIVE,
    ST_GET_VCLOCK,
    ST_GET_OWNER_VFINISH,
    ST_INSERT_JOB,
    ST_UPSERT_OWNER,
    ST_INSERT_EVENT,
    ST_GET_JOB,
    ST_GET_LATEST,
    ST_GET_SPEC,
    ST_QUEUE_AHEAD,
    ST_QUEUE_BEHIND,
    ST_QUEUED_TOTAL,
    ST_PAGE_ALL,
    ST_PAGE_STATE,
    ST_PAGE_OWNER,
    ST_PAGE_OWNER_STATE,
    ST_SEQ_SINCE,
    ST_QUEUE_GEN,
    ST_QUEUE_WALK,
    ST_ACTIVE_BY_OWNER,
    ST_QUEUE_SCAN,
    ST_QUEUE_SCAN_STARTABLE,
    ST_ACTIVE,
    ST_COUNTS,
    ST_GET_STATE,
    ST_SET_CANCELLED_QUEUED,
    ST_SET_STARTING,
    ST_SET_SUPERVISOR,
    ST_SET_SLURM,
    ST_SET_REQUEUED,
    ST_BUMP_VCLOCK,
    ST_SET_RUNNING,
    ST_SET_STOP,
    ST_SET_KILLED,
    ST_SET_FINISHED,
    ST_PRUNE_PICK,
    ST_PRUNE_JOB,
    ST_FILES_PICK,
    ST_FILES_MARK,
    ST_SET_FINAL_BYTES,
    ST_DELETE_JOB,
    ST_DELETE_EVENTS,
    ST_EVENTS,
    ST_EVENTS_SINCE,
    ST_EVENTS_LAST,
    ST_COUNT_
} stmt_id;

static const char *const stmt_sql[ST_COUNT_] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_COUNT_OWNER_QUEUED] = "SELECT COUNT(*) FROM jobs WHERE owner = ?1 AND state = 'queued'",
    [ST_COUNT_OWNER_ACTIVE] = "SELECT COUNT(*) FROM jobs WHERE owner = ?1 "
                              "AND state IN ('starting', 'running')",
    [ST_GET_VCLOCK] = "SELECT value FROM meta WHERE key = 'vclock'",
    [ST_GET_OWNER_VFINISH] = "SELECT vfinish FROM owners WHERE owner = ?1",
    [ST_INSERT_JOB] =
        "INSERT INTO jobs (id, owner, name, state, priority, ranks, trainer, workers, threads, "
        "time_limit_s, vstart, spec, submitted_at, gpus, mem_per_rank) "
        "VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [ST_UPSERT_OWNER] = "INSERT INTO owners (owner, vfinish) VALUES (?1, ?2) "
                        "ON CONFLICT (owner) DO UPDATE SET vfinish = excluded.vfinish",
    [ST_INSERT_EVENT] = "INSERT INTO events (job_id, at, from_state, to_state, detail) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_GET_JOB] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1",
    [ST_GET_LATEST] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE owner = ?1 ORDER BY seq DESC LIMIT 1",
    [ST_GET_SPEC] = "SELECT spec FROM jobs WHERE id = ?1",
    /* Jobs ahead of (?1, ?2, ?3) in run order, and jobs behind it, counting
     * at most ?4: each term a range of the covering index jobs_run_order. */
    [ST_QUEUE_AHEAD] =
        "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE state = 'queued' AND priority > ?1 "
        "UNION ALL SELECT 1 FROM jobs WHERE state = 'queued' AND priority = ?1 AND vstart < ?2 "
        "UNION ALL SELECT 1 FROM jobs WHERE state = 'queued' AND priority = ?1 AND vstart = ?2 "
        "AND seq < ?3 LIMIT ?4)",
    [ST_QUEUE_BEHIND] =
        "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE state = 'queued' AND priority < ?1 "
        "UNION ALL SELECT 1 FROM jobs WHERE state = 'queued' AND priority = ?1 AND vstart > ?2 "
        "UNION ALL SELECT 1 FROM jobs WHERE state = 'queued' AND priority = ?1 AND vstart = ?2 "
        "AND seq > ?3 LIMIT ?4)",
    [ST_QUEUED_TOTAL] = "SELECT value FROM meta WHERE key = 'queued'",
    /* A page: a range of seq below the cursor (?3) and above the first job
     * submitted since the asked time (?4), newest first; each filter an
     * index whose entries are in seq order (jobs_state, jobs_owner_seq,
     * jobs_owner), so the page reads only the rows it returns. */
    [ST_PAGE_ALL] = "SELECT " JOB_COLUMNS " FROM jobs WHERE " PAGE_RANGE,
    [ST_PAGE_STATE] = "SELECT " JOB_COLUMNS " FROM jobs WHERE state = ?2 AND " PAGE_RANGE,
    [ST_PAGE_OWNER] = "SELECT " JOB_COLUMNS " FROM jobs WHERE owner = ?1 AND " PAGE_RANGE,
    [ST_PAGE_OWNER_STATE] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE owner = ?1 AND state = ?2 AND " PAGE_RANGE,
    /* Submission times follow seq (stamped in the submit transaction), so
     * the first job submitted at or after a time starts the seq range. */
    [ST_SEQ_SINCE] = "SELECT seq FROM jobs WHERE submitted_at >= ?1 "
                     "ORDER BY submitted_at, seq LIMIT 1",
    [ST_QUEUE_GEN] = "SELECT value FROM meta WHERE key = 'queue_gen'",
    [ST_QUEUE_WALK] = "SELECT seq FROM jobs WHERE state = 'queued' ORDER BY " QUEUE_ORDER,
    [ST_ACTIVE_BY_OWNER] = "SELECT owner, COUNT(*) FROM jobs "
                           "WHERE state IN ('starting', 'running') GROUP BY owner",
    [ST_QUEUE_SCAN] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE state = 'queued' ORDER BY " QUEUE_ORDER
        " LIMIT ?1",
    /* The queue without the jobs of owners at the running limit (?2): they
     * could not start this pass whatever their place. */
    [ST_QUEUE_SCAN_STARTABLE] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE state = 'queued' AND owner NOT IN "
        "(SELECT owner FROM jobs WHERE state IN ('starting', 'running') GROUP BY owner "
        "HAVING COUNT(*) >= ?2) ORDER BY " QUEUE_ORDER " LIMIT ?1",
    [ST_ACTIVE] = "SELECT " JOB_COLUMNS " FROM jobs WHERE state IN ('starting', 'running') "
                  "ORDER BY seq",
    [ST_COUNTS] = "SELECT state, COUNT(*) FROM jobs GROUP BY state",
    [ST_GET_STATE] = "SELECT state FROM jobs WHERE id = ?1",
    [ST_SET_CANCELLED_QUEUED] =
        "UPDATE jobs SET state = 'cancelled', finished_at = ?2, stop_reason = 'cancel', "
        "stop_requested_at = ?2 WHERE id = ?1 AND state = 'queued'",
    [ST_SET_STARTING] =
        "UPDATE jobs SET state = 'starting', started_at = ?2, gpu_devices = ?3, hosts = ?4 "
        "WHERE id = ?1 AND state = 'queued'",
    [ST_SET_SUPERVISOR] = "UPDATE jobs SET supervisor_pid = ?2, supervisor_start = ?3 "
                          "WHERE id = ?1 AND state IN ('starting', 'running')",
    [ST_SET_SLURM] = "UPDATE jobs SET slurm_id = ?2, slurm_reason = ?3 "
                     "WHERE id = ?1 AND state IN ('queued', 'starting', 'running')",
    [ST_SET_REQUEUED] = "UPDATE jobs SET state = 'queued', slurm_reason = ?2, sid = NULL "
                        "WHERE id = ?1 AND state IN ('starting', 'running') AND stop_reason IS NULL",
    [ST_BUMP_VCLOCK] = "UPDATE meta SET value = max(value, (SELECT vstart FROM jobs WHERE id = ?1)) "
                       "WHERE key = 'vclock'",
    [ST_SET_RUNNING] = "UPDATE jobs SET state = 'running', sid = ?2 "
                       "WHERE id = ?1 AND state = 'starting'",
    [ST_SET_STOP] = "UPDATE jobs SET stop_reason = coalesce(stop_reason, ?2), "
                    "stop_requested_at = coalesce(stop_requested_at, ?3) "
                    "WHERE id = ?1 AND state IN ('starting', 'running')",
    [ST_SET_KILLED] = "UPDATE jobs SET killed = 1 WHERE id = ?1",
    [ST_SET_FINISHED] =
        "UPDATE jobs SET state = ?2, finished_at = ?3, exit_code = ?4, error = ?5, "
        "progress = ?6, result = ?7 WHERE id = ?1 AND state IN ('queued', 'starting', 'running')",
    /* Retention: the index jobs_finished holds only ended jobs, in the
     * order wanted (left to itself, the planner prefers jobs_state and
     * sorts every finished job). */
    [ST_PRUNE_PICK] = "SELECT id FROM jobs INDEXED BY jobs_finished WHERE finished_at < ?1 AND "
                      "state IN ('succeeded', 'failed', 'cancelled', 'timeout') "
                      "ORDER BY finished_at LIMIT ?2",
    [ST_PRUNE_JOB] = "DELETE FROM jobs WHERE id = ?1 AND "
                     "state IN ('succeeded', 'failed', 'cancelled', 'timeout')",
    /* retention_keep_records: the same jobs, those whose files are still
     * there, marked instead of deleted. */
    [ST_FILES_PICK] = "SELECT id FROM jobs INDEXED BY jobs_finished_files WHERE finished_at < ?1 "
                      "AND files_removed = 0 AND "
                      "state IN ('succeeded', 'failed', 'cancelled', 'timeout') "
                      "ORDER BY finished_at LIMIT ?2",
    [ST_FILES_MARK] = "UPDATE jobs SET files_removed = 1 WHERE id = ?1 AND "
                      "state IN ('succeeded', 'failed', 'cancelled', 'timeout')",
    [ST_SET_FINAL_BYTES] = "UPDATE jobs SET final_bytes = ?2, final_bytes_at = ?3 WHERE id = ?1 "
                           "AND finished_at = ?3 AND "
                           "state IN ('succeeded', 'failed', 'cancelled', 'timeout')",
    [ST_DELETE_JOB] = "DELETE FROM jobs WHERE id = ?1",
    [ST_DELETE_EVENTS] = "DELETE FROM events WHERE job_id = ?1",
    [ST_EVENTS] = "SELECT at, from_state, to_state, detail FROM events WHERE job_id = ?1 "
                  "ORDER BY id",
    /* Every job's events after ?1 (the events' primary key), with the
     * owner; a deleted job's events are gone with it. */
    [ST_EVENTS_SINCE] = "SELECT e.id, e.job_id, j.owner, e.at, e.from_state, e.to_state, e.detail "
                        "FROM events e JOIN jobs j ON j.id = e.job_id WHERE e.id > ?1 "
                        "ORDER BY e.id LIMIT ?2",
    [ST_EVENTS_LAST] = "SELECT coalesce(max(id), 0) FROM events",
};

typedef struct store_conn {
    sqlite3 *db;
    sqlite3_stmt *stmt[ST_COUNT_];
    struct store_conn *next_free;
    _Atomic uint64_t *writes; /* the store's count of committed writes */
} store_conn;

/* Every queued job's place in run order, as of one value of the queue's
 * generation ('queue_gen' in meta, bumped by triggers on any change to the
 * run order): pages look places up here instead of counting per job. */
typedef struct store_place {
    int64_t seq;
    int place; /* 1-based */
} store_place;

typedef struct store_places {
    int64_t gen;     /* -1: nothing computed yet */
    store_place *v;  /* by seq, ascending */
    size_t n;
} store_places;

struct store {
    store_conn *conns;
    int n_conns;
    store_conn *free_list;
    pthread_mutex_t lock;
    /* One writer at a time, queued here rather than in SQLite's busy
     * handler, which sleeps in steps of milliseconds under contention. */
    pthread_mutex_t write_lock;
    /* Group commit of submits (store_job_submit). */
    pthread_mutex_t batch_lock;
    pthread_cond_t batch_done;
    struct submit_req *pending;
    bool leader_active;
    pthread_cond_t available;
    _Atomic uint64_t statements;
    _Atomic uint64_t writes;
    pthread_mutex_t places_lock;
    store_places places;
    char path[512];
};

/* ---- connections ---------------------------------------------------------- */

static store_conn *store_acquire(store *st)
{
    pthread_mutex_lock(&st->lock);
    while (!st->free_list)
        pthread_cond_wait(&st->available, &st->lock);
    store_conn *c = st->free_list;
    st->free_list = c->next_free;
    pthread_mutex_unlock(&st->lock);
    return c;
}

static void store_release(store *st, store_conn *c)
{
    pthread_mutex_lock(&st->lock);
    c->next_free = st->free_list;
    st->free_list = c;
    pthread_cond_signal(&st->available);
    pthread_mutex_unlock(&st->lock);
}

/* The test hook of store_fault_sim(); NULL in production. Atomic because
 * every connection's thread reads it. */
static _Atomic(store_fault_fn) store_fault_hook;
static void *_Atomic store_fault_arg;

void store_fault_sim(store_fault_fn fn, void *arg)
{
    store_fault_arg = arg;
    store_fault_hook = fn;
}

/* The prepared statement `id` of c, reset and unbound, ready to bind; NULL
 * (logged) if it cannot be prepared or a simulated fault hits it. */
static sqlite3_stmt *store_stmt(store_conn *c, stmt_id id)
{
    store_fault_fn fault = store_fault_hook;
    if (fault && fault(store_fault_arg, stmt_sql[id])) {
        log_error("store: simulated fault before \"%.60s\"", stmt_sql[id]);
        return NULL;
    }
    if (!c->stmt[id]) {
        int rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &c->stmt[id], NULL);
        if (rc != SQLITE_OK) {
            log_error("store: preparing statement %d: %s", (int)id, sqlite3_errmsg(c->db));
            return NULL;
        }
    }
    return c->stmt[id];
}

static void store_done(sqlite3_stmt *s)
{
    if (s) {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
    }
}

static bool store_log_rc(store_conn *c, int rc, const char *what)
{
    if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW)
        return true;
    log_error("store: %s: %s", what, sqlite3_errmsg(c->db));
    return false;
}

/* Run a statement that returns no rows. */
static bool store_exec_stmt(store_conn *c, stmt_id id)
{
    sqlite3_stmt *s = store_stmt(c, id);
    if (!s)
        return false;
    int rc = sqlite3_step(s);
    store_done(s);
    return store_log_rc(c, rc, stmt_sql[id]);
}

static bool store_begin(store_conn *c) { return store_exec_stmt(c, ST_BEGIN); }
/* Commit a write transaction, and count it (store_writes). */
static bool store_commit(store_conn *c)
{
    if (!store_exec_stmt(c, ST_COMMIT))
        return false;
    atomic_fetch_add(c->writes, 1);
    return true;
}
static void store_rollback(store_conn *c)
{
    if (!sqlite3_get_autocommit(c->db))
        store_exec_stmt(c, ST_ROLLBACK);
}

static void store_bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

/* SQLite's trace hook: one count per statement (or trigger program) run. */
static int store_trace(unsigned type, void *ctx, void *p, void *x)
{
    (void)type, (void)p, (void)x;
    atomic_fetch_add_explicit((_Atomic uint64_t *)ctx, 1, memory_order_relaxed);
    return 0;
}

static bool store_conn_open(store_conn *c, const char *path, _Atomic uint64_t *statements,
                            char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(path, &c->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        return false;
    }
    sqlite3_busy_timeout(c->db, 10000);
    sqlite3_trace_v2(c->db, SQLITE_TRACE_STMT, store_trace, statements);
    char *msg = NULL;
    rc = sqlite3_exec(c->db,
                      "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; "
                      "PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; "
                      /* Readers map the file instead of copying pages: every
                       * commit invalidates the other connections' caches. */
                      "PRAGMA mmap_size = 268435456;",
                      NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return false;
    }
    return true;
}

static void store_conn_close(store_conn *c)
{
    for (int i = 0; i < ST_COUNT_; i++)
        sqlite3_finalize(c->stmt[i]);
    sqlite3_close(c->db);
}

/* Apply the embedded migrations the database lacks, each in a transaction
 * with its PRAGMA user_version bump, so a crash leaves a consistent version. */
static bool store_migrate(sqlite3 *db, char *err, size_t errlen)
{
    int n = (int)(sizeof store_migrations / sizeof store_migrations[0]);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "reading schema version: %s", sqlite3_errmsg(db));
        return false;
    }
    int version = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    if (version > n) {
        snprintf(err, errlen, "database schema version %d is newer than this punchcardd (%d)",
                 version, n);
        return false;
    }
    for (int v = version; v < n; v++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d;", v + 1);
        char *msg = NULL;
        int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, store_migrations[v], NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, bump, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "applying schema migration %d: %s", v + 1,
                     msg ? msg : sqlite3_errstr(rc));
            sqlite3_free(msg);
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return false;
        }
        log_info("store: schema migrated to version %d", v + 1);
    }
    return true;
}

store *store_open(const char *path, int connections, char *err, size_t errlen)
{
    if (connections < 1)
        connections = 1;
    store *st = calloc(1, sizeof *st);
    if (!st || !(st->conns = calloc((size_t)connections, sizeof *st->conns))) {
        free(st);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(st->path, sizeof st->path, "%s", path);
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->write_lock, NULL);
    pthread_mutex_init(&st->batch_lock, NULL);
    pthread_cond_init(&st->batch_done, NULL);
    pthread_cond_init(&st->available, NULL);
    pthread_mutex_init(&st->places_lock, NULL);
    st->places.gen = -1;
    for (int i = 0; i < connections; i++) {
        if (!store_conn_open(&st->conns[i], path, &st->statements, err, errlen)) {
            st->n_conns = i + 1;
            store_close(st);
            return NULL;
        }
        st->n_conns = i + 1;
        st->conns[i].writes = &st->writes;
        if (i == 0 && !store_migrate(st->conns[0].db, err, errlen)) {
            store_close(st);
            return NULL;
        }
        st->conns[i].next_free = st->free_list;
        st->free_list = &st->conns[i];
    }
    return st;
}

void store_close(store *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->n_conns; i++)
        store_conn_close(&st->conns[i]);
    pthread_mutex_destroy(&st->lock);
    pthread_mutex_destroy(&st->write_lock);
    pthread_mutex_destroy(&st->batch_lock);
    pthread_cond_destroy(&st->batch_done);
    pthread_cond_destroy(&st->available);
    pthread_mutex_destroy(&st->places_lock);
    free(st->places.v);
    free(st->conns);
    free(st);
}

int store_schema_version(store *st)
{
    store_conn *c = store_acquire(st);
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK) {
        if (sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int(s, 0);
        sqlite3_finalize(s);
    }
    store_release(st, c);
    return v;
}

/* ---- rows ------------------------------------------------------------------ */

void store_job_clear(store_job *job)
{
    free(job->error);
    free(job->progress);
    free(job->result);
    free(job->hosts);
    memset(job, 0, sizeof *job);
}

static double store_col_time(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static char *store_col_strdup(sqlite3_stmt *s, int i)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    return v ? strdup((const char *)v) : NULL;
}

static void store_col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    snprintf(dst, cap, "%s", v ? (const char *)v : "");
}

/* Fill *job from a row selected with JOB_COLUMNS. */
static void store_row_to_job(sqlite3_stmt *s, store_job *job)
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
}

static bool store_event(store_conn *c, const char *id, double now, const char *from,
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

/* ---- submit ---------------------------------------------------------------- */

static void store_random_id(char id[STORE_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[STORE_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n < 0 && errno != EINTR)
            break;
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        id[2 * i] = hex[raw[i] >> 4];
        id[2 * i + 1] = hex[raw[i] & 15];
    }
    id[STORE_ID_LEN] = '\0';
}

static bool store_query_double(store_conn *c, stmt_id id, const char *arg, double *out)
{
    sqlite3_stmt *s = store_stmt(c, id);
    if (!s)
        return false;
    if (arg)
        store_bind_text(s, 1, arg);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_double(s, 0);
    store_done(s);
    return store_log_rc(c, rc, stmt_sql[id]);
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
        store_random_id(id_out);
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

static bool store_exec_sql(store_conn *c, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        log_error("store: %s: %s", sql, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc == SQLITE_OK;
}

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

/* Reads the row a single-row query found into out; false if it cannot
 * (out of memory). */
typedef bool (*store_row_reader)(sqlite3_stmt *s, void *out);

/* Run single-row query `id` with `key` bound as ?1: STORE_OK with the row
 * read into out, STORE_NOT_FOUND when there is none. */
static store_status store_read_one(store *st, stmt_id id, const char *key, store_row_reader read,
                                   void *out)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, id);
    if (s) {
        store_bind_text(s, 1, key);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
            rs = read(s, out) ? STORE_OK : STORE_ERROR;
        else if (rc == SQLITE_DONE)
            rs = STORE_NOT_FOUND;
        else
            store_log_rc(c, rc, stmt_sql[id]);
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

store_status store_job_spec(store *st, const char *id, char **spec)
{
    return store_read_one(st, ST_GET_SPEC, id, store_read_text, spec);
}

/* Count with a (priority, vstart, seq) key bound as ?1..?3. */
static long store_count_rel(store_conn *c, stmt_id id, const store_job *job, long limit)
{
    sqlite3_stmt *s = store_stmt(c, id);
    long n = -1;
    if (!s)
        return -1;
    sqlite3_bind_int(s, 1, job->priority);
    sqlite3_bind_double(s, 2, job->vstart);
    sqlite3_bind_int64(s, 3, job->seq);
    if (limit > 0)
        sqlite3_bind_int64(s, 4, limit);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        n = (long)sqlite3_column_int64(s, 0);
    else
        store_log_rc(c, rc, "counting the queue");
    store_done(s);
    return n;
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

/* Step through a bound statement, one callback per row. */
static store_status store_iterate(store_conn *c, sqlite3_stmt *s, store_job_cb cb, void *arg)
{
    store_status rs = STORE_OK;
    for (;;) {
        int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            store_log_rc(c, rc, "listing jobs");
            rs = STORE_ERROR;
            break;
        }
        store_job job;
        store_row_to_job(s, &job);
        bool more = cb(&job, arg);
        store_job_clear(&job);
        if (!more)
            break;
    }
    store_done(s);
    return rs;
}

/* ---- pages ------------------------------------------------------------------ */

static int store_place_cmp(const void *a, const void *b)
{
    int64_t x = ((const store_place *)a)->seq, y = ((const store_place *)b)->seq;
    return (x > y) - (x < y);
}

/* Every queued job's place, from one walk of the run-order index, into *out
 * (inside c's read transaction); false (logged) on a store error or when
 * memory runs out. */
static bool store_places_walk(store_conn *c, store_places *out)
{
    sqlite3_stmt *s = store_stmt(c, ST_QUEUE_WALK);
    if (!s)
        return false;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            store_place *grown = realloc(out->v, cap * sizeof *grown);
            if (!grown) {
                log_error("store: out of memory walking a queue of %zu jobs", out->n);
                rc = SQLITE_NOMEM;
                break;
            }
            out->v = grown;
        }
        out->v[out->n] = (store_place){sqlite3_column_int64(s, 0), (int)out->n + 1};
        out->n++;
    }
    store_done(s);
    if (rc != SQLITE_DONE) {
        if (rc != SQLITE_NOMEM)
            store_log_rc(c, rc, "walking the queue");
        free(out->v);
        *out = (store_places){0};
        return false;
    }
    qsort(out->v, out->n, sizeof *out->v, store_place_cmp);
    return true;
}

/* Bring st->places to generation gen, walking the queue in c's read
 * transaction when it moved; places_lock held. The lock is held across the
 * walk, so concurrent readers wait for one walk instead of each doing
 * their own. */
static bool store_places_current(store *st, store_conn *c, int64_t gen)
{
    if (st->places.gen == gen)
        return true;
    store_places fresh = {0};
    if (!store_places_walk(c, &fresh))
        return false;
    free(st->places.v);
    st->places = fresh;
    st->places.gen = gen;
    return true;
}

/* The place of the queued job `seq`; 0 when it is not in the queue. */
static int store_places_find(const store_places *p, int64_t seq)
{
    store_place key = {seq, 0};
    const store_place *hit = bsearch(&key, p->v, p->n, sizeof key, store_place_cmp);
    return hit ? hit->place : 0;
}

/* Fill the places of the page's queued jobs from st->places (read in c's
 * transaction, walked again if the queue's generation moved). */
static bool store_page_places(store *st, store_conn *c, store_page *page)
{
    double gen = -1;
    if (!store_query_double(c, ST_QUEUE_GEN, NULL, &gen))
        return false;
    pthread_mutex_lock(&st->places_lock);
    bool ok = store_places_current(st, c, (int64_t)gen);
    for (size_t i = 0; ok && i < page->n; i++)
        if (page->jobs[i].state == JOB_QUEUED)
            page->queue_position[i] = store_places_find(&st->places, page->jobs[i].seq);
    pthread_mutex_unlock(&st->places_lock);
    return ok;
}

/* A queued job's place while st->places is stale (c in a read transaction
 * at queue generation gen): counted from the nearer end, each count bounded
 * (COUNT walks every row it counts), as a new job is usually near the back
 * and a starting one near the front; in the middle of a long queue, one
 * walk of it, which later reads share until the queue changes. -1 on a
 * store error. */
static long store_position_counted(store *st, store_conn *c, const store_job *job, int64_t gen)
{
    enum { NEAR_END = 256 };
    long ahead = store_count_rel(c, ST_QUEUE_AHEAD, job, NEAR_END);
    if (ahead < 0)
        return -1;
    if (ahead < NEAR_END)
        return ahead + 1;
    long behind = store_count_rel(c, ST_QUEUE_BEHIND, job, NEAR_END);
    if (behind < 0)
        return -1;
    if (behind < NEAR_END) {
        double total = 0;
        if (!store_query_double(c, ST_QUEUED_TOTAL, NULL, &total))
            return -1;
        return (long)total - behind > 0 ? (long)total - behind : 0;
    }
    pthread_mutex_lock(&st->places_lock);
    long pos = store_places_current(st, c, gen) ? store_places_find(&st->places, job->seq) : -1;
    pthread_mutex_unlock(&st->places_lock);
    return pos;
}

int store_queue_position(store *st, const store_job *job)
{
    if (job->state != JOB_QUEUED)
        return 0;
    /* One read transaction keeps the figures consistent. */
    store_conn *c = store_acquire(st);
    long pos = -1;
    double gen = -1;
    if (store_exec_sql(c, "BEGIN")) {
        if (store_query_double(c, ST_QUEUE_GEN, NULL, &gen)) {
            pthread_mutex_lock(&st->places_lock);
            bool current = st->places.gen == (int64_t)gen;
            if (current)
                pos = store_places_find(&st->places, job->seq);
            pthread_mutex_unlock(&st->places_lock);
            if (!current)
                pos = store_position_counted(st, c, job, (int64_t)gen);
        }
        if (!store_exec_sql(c, "COMMIT"))
            store_rollback(c);
    }
    store_release(st, c);
    return (int)pos;
}

static bool store_page_active(store_conn *c, store_page *page)
{
    sqlite3_stmt *s = store_stmt(c, ST_ACTIVE_BY_OWNER);
    if (!s)
        return false;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (page->n_active == cap) {
            cap = cap ? 2 * cap : 16;
            store_owner_count *grown = realloc(page->active, cap * sizeof *grown);
            if (!grown) {
                log_error("store: out of memory counting active jobs");
                rc = SQLITE_NOMEM;
                break;
            }
            page->active = grown;
        }
        store_owner_count *oc = &page->active[page->n_active++];
        store_col_copy(s, 0, oc->owner, sizeof oc->owner);
        oc->count = sqlite3_column_int(s, 1);
    }
    store_done(s);
    if (rc == SQLITE_NOMEM)
        return false;
    return store_log_rc(c, rc, "counting active jobs per owner");
}

/* The page's rows, inside c's read transaction. */
static bool store_page_rows(store_conn *c, const store_page_query *q, store_page *page)
{
    int64_t first = 0;
    if (!isnan(q->since)) {
        sqlite3_stmt *s = store_stmt(c, ST_SEQ_SINCE);
        if (!s)
            return false;
        sqlite3_bind_double(s, 1, q->since);
        int rc = sqlite3_step(s);
        first = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : INT64_MAX;
        store_done(s);
        if (!store_log_rc(c, rc, "finding the first job since a time"))
            return false;
    }
    stmt_id id = q->owner ? (q->state >= 0 ? ST_PAGE_OWNER_STATE : ST_PAGE_OWNER)
                          : (q->state >= 0 ? ST_PAGE_STATE : ST_PAGE_ALL);
    sqlite3_stmt *s = store_stmt(c, id);
    if (!s)
        return false;
    if (q->owner)
        store_bind_text(s, 1, q->owner);
    if (q->state >= 0)
        store_bind_text(s, 2, job_state_name((job_state)q->state));
    sqlite3_bind_int64(s, 3, q->before > 0 ? q->before : INT64_MAX);
    sqlite3_bind_int64(s, 4, first);
    sqlite3_bind_double(s, 5, isnan(q->since) ? -INFINITY : q->since);
    sqlite3_bind_int(s, 6, q->limit + 1); /* one more says whether more follow */
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (page->n == (size_t)q->limit) {
            page->more = true;
            rc = SQLITE_DONE;
            break;
        }
        store_row_to_job(s, &page->jobs[page->n++]);
    }
    store_done(s);
    return store_log_rc(c, rc, "listing jobs");
}

store_status store_job_page(store *st, const store_page_query *q, store_page *page)
{
    memset(page, 0, sizeof *page);
    if (q->limit < 1)
        return STORE_ERROR;
    page->jobs = calloc((size_t)q->limit, sizeof *page->jobs);
    page->queue_position = calloc((size_t)q->limit, sizeof *page->queue_position);
    if (!page->jobs || !page->queue_position) {
        log_error("store: out of memory for a page of %d jobs", q->limit);
        store_page_clear(page);
        return STORE_ERROR;
    }
    store_conn *c = store_acquire(st);
    bool ok = store_exec_sql(c, "BEGIN") && store_page_rows(c, q, page);
    bool queued = false;
    for (size_t i = 0; ok && i < page->n; i++)
        queued = queued || page->jobs[i].state == JOB_QUEUED;
    if (ok && queued)
        ok = store_page_places(st, c, page) && (!q->owner_active || store_page_active(c, page));
    if (!(ok && store_exec_sql(c, "COMMIT"))) {
        store_rollback(c);
        ok = false;
    }
    store_release(st, c);
    if (!ok) {
        store_page_clear(page);
        return STORE_ERROR;
    }
    return STORE_OK;
}

void store_page_clear(store_page *page)
{
    for (size_t i = 0; page->jobs && i < page->n; i++)
        store_job_clear(&page->jobs[i]);
    free(page->jobs);
    free(page->queue_position);
    free(page->active);
    memset(page, 0, sizeof *page);
}

int store_page_owner_active(const store_page *page, const char *owner)
{
    for (size_t i = 0; i < page->n_active; i++)
        if (strcmp(page->active[i].owner, owner) == 0)
            return page->active[i].count;
    return 0;
}

uint64_t store_writes(store *st)
{
    return atomic_load(&st->writes);
}

uint64_t store_statements(store *st)
{
    return atomic_load_explicit(&st->statements, memory_order_relaxed);
}

store_status store_queue_scan(store *st, int limit, store_job_cb cb, void *arg)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_QUEUE_SCAN);
    if (s) {
        sqlite3_bind_int(s, 1, limit);
        rs = store_iterate(c, s, cb, arg);
    }
    store_release(st, c);
    return rs;
}

store_status store_queue_scan_startable(store *st, int limit, int max_running,
                                       store_job_cb cb, void *arg)
{
    if (max_running <= 0)
        return store_queue_scan(st, limit, cb, arg);
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_QUEUE_SCAN_STARTABLE);
    if (s) {
        sqlite3_bind_int(s, 1, limit);
        sqlite3_bind_int(s, 2, max_running);
        rs = store_iterate(c, s, cb, arg);
    }
    store_release(st, c);
    return rs;
}

store_status store_active_jobs(store *st, store_job_cb cb, void *arg)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_ACTIVE);
    if (s)
        rs = store_iterate(c, s, cb, arg);
    store_release(st, c);
    return rs;
}

store_status store_counts(store *st, long counts[JOB_STATE_COUNT])
{
    memset(counts, 0, sizeof(long) * JOB_STATE_COUNT);
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_COUNTS);
    if (s) {
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            job_state js;
            const unsigned char *name = sqlite3_column_text(s, 0);
            if (name && job_state_parse((const char *)name, &js))
                counts[js] = (long)sqlite3_column_int64(s, 1);
        }
        rs = store_log_rc(c, rc, "counting jobs") ? STORE_OK : STORE_ERROR;
        store_done(s);
    }
    store_release(st, c);
    return rs;
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
    if (!store_log_rc(c, rc, stmt_sql[update]))
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
    if (a->gpu_devices && a->gpu_devices[0])
        store_bind_text(s, 3, a->gpu_devices);
    else
        sqlite3_bind_null(s, 3);
    if (a->hosts && a->hosts[0])
        store_bind_text(s, 4, a->hosts);
    else
        sqlite3_bind_null(s, 4);
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
    if (a->reason && a->reason[0])
        store_bind_text(s, 3, a->reason);
    else
        sqlite3_bind_null(s, 3);
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

store_status store_job_delete(store *st, const char *id)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    pthread_mutex_lock(&st->write_lock);
    sqlite3_stmt *s;
    if (store_begin(c) && (s = store_stmt(c, ST_DELETE_JOB))) {
        store_bind_text(s, 1, id);
        int rc = sqlite3_step(s);
        store_done(s);
        bool found = sqlite3_changes(c->db) > 0;
        if (store_log_rc(c, rc, "deleting a job") && (s = store_stmt(c, ST_DELETE_EVENTS))) {
            store_bind_text(s, 1, id);
            rc = sqlite3_step(s);
            store_done(s);
            if (store_log_rc(c, rc, "deleting a job's events") && store_commit(c))
                rs = found ? STORE_OK : STORE_NOT_FOUND;
        }
    }
    if (rs == STORE_ERROR)
        store_rollback(c);
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
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
    store_conn *c = store_acquire(st);
    pthread_mutex_lock(&st->write_lock);
    bool ok = store_begin(c);
    sqlite3_stmt *s = ok ? store_stmt(c, pick) : NULL;
    ok = s != NULL;
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
    if (ok)
        ok = store_commit(c);
    if (!ok) {
        store_rollback(c);
        *n = 0;
    }
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return ok ? STORE_OK : STORE_ERROR;
}

store_status store_prune_finished(store *st, double before, int max,
                                  char (*ids)[STORE_ID_LEN + 1], int *n)
{
    return store_pick_apply(st, ST_PRUNE_PICK, ST_PRUNE_JOB, store_delete_with_events,
                            "finding finished jobs to forget", before, max, ids, n);
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

/* ---- uploaded datasets (migration 0007) ------------------------------------
 * Rare, small statements (one per upload, listing or delete): prepared per
 * call rather than kept in every connection's table. */

static sqlite3_stmt *store_prepare_once(store_conn *c, const char *sql)
{
    store_fault_fn fault = store_fault_hook;
    if (fault && fault(store_fault_arg, sql)) {
        log_error("store: simulated fault before \"%.60s\"", sql);
        return NULL;
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK) {
        log_error("store: preparing \"%.60s\": %s", sql, sqlite3_errmsg(c->db));
        sqlite3_finalize(s);
        return NULL;
    }
    return s;
}

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

/* ---- resume (POST /api/v1/jobs/{id}/resume) --------------------------------- */

store_status store_job_resume(store *st, const char *id, int max_queued, const char *detail,
                              double now)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    pthread_mutex_lock(&st->write_lock);
    job_state from;
    sqlite3_stmt *s = NULL;
    if (!store_begin(c))
        goto out;
    rs = store_state_of(c, id, &from);
    if (rs != STORE_OK)
        goto out;
    rs = STORE_ERROR;
    if (from != JOB_FAILED && from != JOB_CANCELLED && from != JOB_TIMEOUT) {
        rs = STORE_CONFLICT;
        goto out;
    }
    if (max_queued > 0) {
        s = store_prepare_once(c, "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND "
                                  "owner = (SELECT owner FROM jobs WHERE id = ?1)");
        if (!s)
            goto out;
        store_bind_text(s, 1, id);
        int rc = sqlite3_step(s);
        long long queued = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
        sqlite3_finalize(s);
        if (queued < 0) {
            store_log_rc(c, rc, "counting queued jobs");
            goto out;
        }
        if (queued >= max_queued) {
            rs = STORE_LIMIT;
            goto out;
        }
    }
    /* Back to a queued job as submit makes one, with its start tag at the
     * scheduler's clock (its old tag would put it ahead of every job queued
     * since); migration 0008's trigger counts it as queued again. */
    s = store_prepare_once(
        c, "UPDATE jobs SET state = 'queued', vstart = (SELECT value FROM meta WHERE key = "
           "'vclock'), started_at = NULL, finished_at = NULL, exit_code = NULL, error = NULL, "
           "supervisor_pid = NULL, supervisor_start = NULL, sid = NULL, stop_reason = NULL, "
           "stop_requested_at = NULL, killed = 0, progress = NULL, result = NULL, "
           "gpu_devices = NULL, hosts = NULL, slurm_id = NULL, slurm_reason = NULL "
           "WHERE id = ?1 AND state IN ('failed', 'cancelled', 'timeout')");
    if (!s)
        goto out;
    store_bind_text(s, 1, id);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (store_log_rc(c, rc, "resuming a job") &&
        store_event(c, id, now, job_state_name(from), "queued", detail) && store_commit(c))
        rs = STORE_OK;
out:
    if (rs != STORE_OK)
        store_rollback(c);
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
}
