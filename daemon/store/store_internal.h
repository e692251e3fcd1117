/* store_internal.h — what the store's files share and nothing outside store/ sees:
 * the prepared statements by id, a connection, the store itself, and the helpers
 * that acquire a connection, run a statement and read a row. The public
 * contracts are in store.h. */
#ifndef PUNCH_STORE_INTERNAL_H
#define PUNCH_STORE_INTERNAL_H

#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

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
    ST_GET_SPEC_WRITTEN,
    ST_QUEUE_AHEAD,
    ST_QUEUE_BEHIND,
    ST_QUEUED_TOTAL,
    ST_PAGE_ALL,
    ST_PAGE_STATE,
    ST_PAGE_OWNER,
    ST_PAGE_OWNER_STATE,
    ST_PAGE_STATES,
    ST_PAGE_OWNER_STATES,
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
    ST_NOTE,
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
    ST_DELETE_FINISHED_JOB,
    ST_DELETE_EVENTS,
    ST_EVENTS,
    ST_EVENTS_SINCE,
    ST_EVENTS_LAST,
    ST_OWNER_CACHED_BYTES,
    ST_OWNER_UNMEASURED,
    ST_COUNT_
} stmt_id;

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

/* The SQL of each statement id (store.c). */
extern const char *const store_stmt_sql[ST_COUNT_];

/* ---- store.c: connections and statements ----------------------------------- */
/* A connection of the pool, waiting for one to be free; give it back with
 * store_release. */
store_conn *store_acquire(store *st);
void store_release(store *st, store_conn *c);

/* The prepared statement `id` of c, reset and unbound, ready to bind; NULL
 * (logged) if it cannot be prepared or a simulated fault hits it. */
sqlite3_stmt *store_stmt(store_conn *c, stmt_id id);

/* Reset a statement after its last step. */
void store_done(sqlite3_stmt *s);

/* True when rc is SQLITE_OK or SQLITE_DONE; otherwise logs what failed. */
bool store_log_rc(store_conn *c, int rc, const char *what);

bool store_begin(store_conn *c);

/* Commit a write transaction, and count it (store_writes). */
bool store_commit(store_conn *c);

void store_rollback(store_conn *c);

/* Binds v, or NULL when v is NULL. */
void store_bind_text(sqlite3_stmt *s, int i, const char *v);

/* A statement used rarely (uploads, listings): prepared per call rather than kept
 * in every connection's table; NULL (logged) on failure or a simulated fault. */
sqlite3_stmt *store_prepare_once(store_conn *c, const char *sql);

/* A write transaction: the writer mutex, then BEGIN IMMEDIATE; NULL (logged)
 * when it cannot begin. store_write_end commits when rs is STORE_OK, else
 * rolls back, and returns rs (STORE_ERROR when the commit fails). */
store_conn *store_write_begin(store *st);
store_status store_write_end(store *st, store_conn *c, store_status rs);

/* Run a bound one-off (store_prepare_once) statement to its end; finalizes it. */
bool store_step_once(store_conn *c, sqlite3_stmt *s, const char *what);

/* Binds v, or NULL when v is NULL or empty (optional columns). */
void store_bind_nonempty(sqlite3_stmt *s, int i, const char *v);

/* One row of a statement being read; false stops the walk (not an error) for
 * store_rows, and fails the read for store_row_one. */
typedef bool (*store_row_fn)(sqlite3_stmt *s, void *arg);

/* Step through a bound statement, fn per row, until the rows end or fn
 * returns false: STORE_OK then, STORE_ERROR (logged as `what`) when a step
 * fails. The caller resets or finalizes s. */
store_status store_rows(store_conn *c, sqlite3_stmt *s, store_row_fn fn, void *arg,
                        const char *what);

/* Step a bound statement once: STORE_OK when fn reads its row,
 * STORE_NOT_FOUND when there is none, STORE_ERROR (logged) otherwise. */
store_status store_row_one(store_conn *c, sqlite3_stmt *s, store_row_fn fn, void *arg,
                           const char *what);

/* A parameter of a kept statement: a text (NULL binds NULL) or, with
 * is_int, an integer. */
typedef struct store_arg {
    const char *text;
    int64_t i;
    bool is_int;
} store_arg;
#define STORE_TEXT(v) ((store_arg){.text = (v)})
#define STORE_INT(v) ((store_arg){.i = (v), .is_int = true})

/* Run kept statement id with args[0..n) bound as ?1.., fn per row
 * (store_rows), on a connection of st. */
store_status store_stmt_rows(store *st, stmt_id id, const store_arg *args, int n,
                             store_row_fn fn, void *arg, const char *what);

/* A rarely used SELECT, prepared once, its parameters ?1, ?2 bound to the
 * texts in arg (as many as the SQL has), its rows read by row(s, ctx). */
typedef struct store_query {
    const char *sql;
    const char *arg[2];
    store_row_fn row;
    void *ctx;
    const char *what; /* for the log: "reading a sweep" */
} store_query;

/* Run q on a connection of st: every row (store_rows) or the first
 * (store_row_one, when one). */
store_status store_select(store *st, const store_query *q, bool one);

/* The integer that the rarely used `sql` selects with texts a1 and a2 as ?1
 * and ?2 (as many as it has), or -1 (logged as `what`). */
long long store_int_once(store_conn *c, const char *sql, const char *a1, const char *a2,
                         const char *what);

/* The one number that statement `id` (with arg as ?1, unless NULL) selects. */
bool store_query_double(store_conn *c, stmt_id id, const char *arg, double *out);

/* SQL run once, unprepared (savepoints, BEGIN/COMMIT of read transactions). */
bool store_exec_sql(store_conn *c, const char *sql);
/* A fresh random id (STORE_ID_LEN hex digits) for a job or a sweep; false
 * when the kernel's generator fails. */
bool store_random_id(char id[STORE_ID_LEN + 1]);

/* Column readers: a time (NAN for NULL), a copy of a text (NULL for NULL),
 * a text into a fixed buffer ("" for NULL). */
double store_col_time(sqlite3_stmt *s, int i);
char *store_col_strdup(sqlite3_stmt *s, int i);
void store_col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap);

/* ---- store_jobs.c: rows ---------------------------------------------------- */
/* Fill *job from a row selected with JOB_COLUMNS. */
void store_row_to_job(sqlite3_stmt *s, store_job *job);

/* Run kept statement id (args as in store_stmt_rows), one job per row. */
store_status store_stmt_jobs(store *st, stmt_id id, const store_arg *args, int n,
                             store_job_cb cb, void *arg);

/* The number of queued jobs of job_id's owner, or -1 (logged). */
long long store_owner_queued_of(store_conn *c, const char *job_id);

/* ---- store_events.c -------------------------------------------------------- */
/* Record a transition of job id inside the caller's transaction. */
bool store_event(store_conn *c, const char *id, double now, const char *from,
                 const char *to, const char *detail);

#endif
