/* store.c — SQLite job store: schema migrations, the connection pool, prepared
 * statements and the helpers every table's file uses (store_jobs.c,
 * store_queue.c, store_events.c, store_datasets.c); one transaction per state change.
 *
 * Durability: WAL with synchronous=FULL. In WAL mode NORMAL would already
 * survive a crash of punchcardd (the WAL sits in the page cache), but not a
 * power loss or kernel crash after the 201 went out; FULL fsyncs the WAL on
 * every commit, which measured ~0.3 ms here, so durable submits still run in
 * the thousands per second. */
#include "store/store_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "log.h"
#include "store_schema.h" /* generated: store_migrations[] from schema/ */

#define JOB_COLUMNS                                                                        \
    "seq, id, owner, name, state, priority, ranks, trainer, workers, threads, "           \
    "time_limit_s, vstart, submitted_at, started_at, finished_at, exit_code, error, "     \
    "supervisor_pid, supervisor_start, sid, stop_reason, stop_requested_at, killed, "     \
    "progress, result, gpus, gpu_devices, hosts, slurm_id, slurm_reason, mem_per_rank, "  \
    "files_removed, final_bytes, final_bytes_at, checkpoint_keep, hparams"

/* Run order of the queue: priority, fair-share start tag, FIFO. */
#define QUEUE_ORDER "priority DESC, vstart, seq"

/* The rows of a page (store_job_page) after its filters: ?3 the cursor,
 * ?4 the first seq the `since` time admits, ?5 that time, ?6 the limit,
 * ?7 a GLOB of the name (NULL: any; checked on the rows the range reads). */
#define PAGE_WHERE                                                                    \
    "seq < ?3 AND seq >= ?4 AND submitted_at >= ?5 AND (?7 IS NULL OR name GLOB ?7)"
#define PAGE_RANGE PAGE_WHERE " ORDER BY seq DESC LIMIT ?6"
/* Several states (?8 to ?14, NULL for the unused): one arm per state, each
 * a range of an index in seq order, merged newest first, so the page still
 * reads only the rows it returns (SQLite merges ordered compound arms). */
#define PAGE_ARM(cond, n) "SELECT " JOB_COLUMNS " FROM jobs WHERE " cond "state = ?" n " AND " PAGE_WHERE
#define PAGE_STATES(cond)                                                             \
    PAGE_ARM(cond, "8") " UNION ALL " PAGE_ARM(cond, "9") " UNION ALL "               \
    PAGE_ARM(cond, "10") " UNION ALL " PAGE_ARM(cond, "11") " UNION ALL "             \
    PAGE_ARM(cond, "12") " UNION ALL " PAGE_ARM(cond, "13") " UNION ALL "             \
    PAGE_ARM(cond, "14") " ORDER BY seq DESC LIMIT ?6"

const char *const store_stmt_sql[ST_COUNT_] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    /* Kept by triggers (0015): counting the owner's queue grew with it. */
    [ST_COUNT_OWNER_QUEUED] = "SELECT queued FROM owners WHERE owner = ?1",
    [ST_COUNT_OWNER_ACTIVE] = "SELECT COUNT(*) FROM jobs WHERE owner = ?1 "
                              "AND state IN ('starting', 'running')",
    [ST_GET_VCLOCK] = "SELECT value FROM meta WHERE key = 'vclock'",
    [ST_GET_OWNER_VFINISH] = "SELECT vfinish FROM owners WHERE owner = ?1",
    [ST_INSERT_JOB] =
        "INSERT INTO jobs (id, owner, name, state, priority, ranks, trainer, workers, threads, "
        "time_limit_s, vstart, spec, submitted_at, gpus, mem_per_rank, spec_written, "
        "checkpoint_keep, hparams) "
        "VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
        "?16, ?17)",
    [ST_UPSERT_OWNER] = "INSERT INTO owners (owner, vfinish) VALUES (?1, ?2) "
                        "ON CONFLICT (owner) DO UPDATE SET vfinish = excluded.vfinish",
    [ST_INSERT_EVENT] = "INSERT INTO events (job_id, at, from_state, to_state, detail) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_GET_JOB] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1",
    [ST_GET_LATEST] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE owner = ?1 ORDER BY seq DESC LIMIT 1",
    [ST_GET_SPEC] = "SELECT spec FROM jobs WHERE id = ?1",
    [ST_GET_SPEC_WRITTEN] = "SELECT coalesce(spec_written, spec) FROM jobs WHERE id = ?1",
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
    [ST_PAGE_STATES] = PAGE_STATES(""),
    [ST_PAGE_OWNER_STATES] = PAGE_STATES("owner = ?1 AND "),
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
    [ST_SET_REQUEUED] = "UPDATE jobs SET state = 'queued', slurm_reason = ?2, sid = NULL, "
                        "supervisor_pid = NULL, supervisor_start = NULL, killed = 0, "
                        "gpu_devices = NULL, hosts = NULL "
                        "WHERE id = ?1 AND state IN ('starting', 'running') AND stop_reason IS NULL",
    /* An event without a change: the row must still be in that state. */
    [ST_NOTE] = "UPDATE jobs SET state = state WHERE id = ?1 AND state = ?2",
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
    [ST_DELETE_FINISHED_JOB] = "DELETE FROM jobs WHERE id = ?1 AND state IN "
                               "('succeeded', 'failed', 'cancelled', 'timeout')",
    [ST_DELETE_EVENTS] = "DELETE FROM events WHERE job_id = ?1",
    [ST_EVENTS] = "SELECT at, from_state, to_state, detail FROM events WHERE job_id = ?1 "
                  "ORDER BY id",
    /* Every job's events after ?1 (the events' primary key), with the
     * owner; a deleted job's events are gone with it. */
    [ST_EVENTS_SINCE] = "SELECT e.id, e.job_id, j.owner, e.at, e.from_state, e.to_state, e.detail "
                        "FROM events e JOIN jobs j ON j.id = e.job_id WHERE e.id > ?1 "
                        "ORDER BY e.id LIMIT ?2",
    [ST_EVENTS_LAST] = "SELECT coalesce(max(id), 0) FROM events",
    /* A user's disk (quota.c): what the finished jobs' run directories held
     * when measured, and the jobs whose directories must be walked; both
     * skip the owner's queue (its jobs have no run directory yet). */
    [ST_OWNER_CACHED_BYTES] =
        "SELECT coalesce(sum(final_bytes), 0) FROM jobs WHERE owner = ?1 AND state IN "
        "('succeeded', 'failed', 'cancelled', 'timeout') AND files_removed = 0 "
        "AND final_bytes_at = finished_at",
    [ST_OWNER_UNMEASURED] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE owner = ?1 AND state IN ('starting', "
        "'running', 'succeeded', 'failed', 'cancelled', 'timeout') AND files_removed = 0 "
        "AND (final_bytes IS NULL OR final_bytes_at IS NOT finished_at)",
};

/* ---- connections ---------------------------------------------------------- */

store_conn *store_acquire(store *st)
{
    pthread_mutex_lock(&st->lock);
    while (!st->free_list)
        pthread_cond_wait(&st->available, &st->lock);
    store_conn *c = st->free_list;
    st->free_list = c->next_free;
    pthread_mutex_unlock(&st->lock);
    return c;
}

void store_release(store *st, store_conn *c)
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
sqlite3_stmt *store_stmt(store_conn *c, stmt_id id)
{
    store_fault_fn fault = store_fault_hook;
    if (fault && fault(store_fault_arg, store_stmt_sql[id])) {
        log_error("store: simulated fault before \"%.60s\"", store_stmt_sql[id]);
        return NULL;
    }
    if (!c->stmt[id]) {
        int rc = sqlite3_prepare_v3(c->db, store_stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &c->stmt[id], NULL);
        if (rc != SQLITE_OK) {
            log_error("store: preparing statement %d: %s", (int)id, sqlite3_errmsg(c->db));
            return NULL;
        }
    }
    return c->stmt[id];
}

/* Virtual machine steps of every statement finished (store_vm_steps). */
static _Atomic uint64_t store_vm_steps_total;

uint64_t store_vm_steps(void)
{
    return atomic_load_explicit(&store_vm_steps_total, memory_order_relaxed);
}

void store_done(sqlite3_stmt *s)
{
    if (s) {
        int steps = sqlite3_stmt_status(s, SQLITE_STMTSTATUS_VM_STEP, 1);
        atomic_fetch_add_explicit(&store_vm_steps_total, (uint64_t)steps, memory_order_relaxed);
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
    }
}

bool store_log_rc(store_conn *c, int rc, const char *what)
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
    return store_log_rc(c, rc, store_stmt_sql[id]);
}

bool store_begin(store_conn *c) { return store_exec_stmt(c, ST_BEGIN); }
/* Commit a write transaction, and count it (store_writes). */
bool store_commit(store_conn *c)
{
    if (!store_exec_stmt(c, ST_COMMIT))
        return false;
    atomic_fetch_add(c->writes, 1);
    return true;
}
void store_rollback(store_conn *c)
{
    if (!sqlite3_get_autocommit(c->db))
        store_exec_stmt(c, ST_ROLLBACK);
}

void store_bind_text(sqlite3_stmt *s, int i, const char *v)
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

/* A statement used rarely (uploads, listings): prepared per call rather than kept
 * in every connection's table; NULL (logged) on failure or a simulated fault. */
sqlite3_stmt *store_prepare_once(store_conn *c, const char *sql)
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

/* ---- statement and column helpers shared by the tables' files ---------- */

/* Run a bound one-off write statement to its end; finalizes it. */
bool store_step_once(store_conn *c, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return store_log_rc(c, rc, what);
}

/* Begin a write: the writer mutex, then BEGIN IMMEDIATE. */
store_conn *store_write_begin(store *st)
{
    store_conn *c = store_acquire(st);
    pthread_mutex_lock(&st->write_lock);
    if (store_begin(c))
        return c;
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return NULL;
}

store_status store_write_end(store *st, store_conn *c, store_status rs)
{
    if (rs == STORE_OK && !store_commit(c))
        rs = STORE_ERROR;
    if (rs != STORE_OK)
        store_rollback(c);
    pthread_mutex_unlock(&st->write_lock);
    store_release(st, c);
    return rs;
}

void store_bind_nonempty(sqlite3_stmt *s, int i, const char *v)
{
    if (v && v[0])
        store_bind_text(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

store_status store_rows(store_conn *c, sqlite3_stmt *s, store_row_fn fn, void *arg,
                        const char *what)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if (!fn(s, arg))
            return STORE_OK;
    return store_log_rc(c, rc, what) ? STORE_OK : STORE_ERROR;
}

store_status store_row_one(store_conn *c, sqlite3_stmt *s, store_row_fn fn, void *arg,
                           const char *what)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        return fn(s, arg) ? STORE_OK : STORE_ERROR;
    if (rc == SQLITE_DONE)
        return STORE_NOT_FOUND;
    store_log_rc(c, rc, what);
    return STORE_ERROR;
}

/* Bind texts to ?1.. up to what the statement has: one call serves SQL that
 * takes an optional filter (an owner) and SQL that takes none. */
static void store_bind_texts(sqlite3_stmt *s, const char *const *arg, int n)
{
    int k = sqlite3_bind_parameter_count(s);
    for (int i = 0; i < k && i < n; i++)
        store_bind_text(s, i + 1, arg[i]);
}

store_status store_stmt_rows(store *st, stmt_id id, const store_arg *args, int n,
                             store_row_fn fn, void *arg, const char *what)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, id);
    if (s) {
        for (int i = 0; i < n; i++) {
            if (args[i].is_int)
                sqlite3_bind_int64(s, i + 1, args[i].i);
            else
                store_bind_text(s, i + 1, args[i].text);
        }
        rs = store_rows(c, s, fn, arg, what);
        store_done(s);
    }
    store_release(st, c);
    return rs;
}

store_status store_select(store *st, const store_query *q, bool one)
{
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_prepare_once(c, q->sql);
    if (s) {
        store_bind_texts(s, q->arg, 2);
        rs = one ? store_row_one(c, s, q->row, q->ctx, q->what)
                 : store_rows(c, s, q->row, q->ctx, q->what);
        sqlite3_finalize(s);
    }
    store_release(st, c);
    return rs;
}

long long store_int_once(store_conn *c, const char *sql, const char *a1, const char *a2,
                         const char *what)
{
    sqlite3_stmt *s = store_prepare_once(c, sql);
    if (!s)
        return -1;
    const char *arg[2] = {a1, a2};
    store_bind_texts(s, arg, 2);
    int rc = sqlite3_step(s);
    long long n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    if (rc != SQLITE_ROW)
        store_log_rc(c, rc, what);
    sqlite3_finalize(s);
    return n;
}

bool store_query_double(store_conn *c, stmt_id id, const char *arg, double *out)
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
    return store_log_rc(c, rc, store_stmt_sql[id]);
}

bool store_exec_sql(store_conn *c, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        log_error("store: %s: %s", sql, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc == SQLITE_OK;
}

double store_col_time(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

char *store_col_strdup(sqlite3_stmt *s, int i)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    return v ? strdup((const char *)v) : NULL;
}

void store_col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    snprintf(dst, cap, "%s", v ? (const char *)v : "");
}

uint64_t store_writes(store *st)
{
    return atomic_load(&st->writes);
}

uint64_t store_statements(store *st)
{
    return atomic_load_explicit(&st->statements, memory_order_relaxed);
}
