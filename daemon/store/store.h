/* store.h — the durable job queue: SQLite in WAL mode.
 *
 * Every accepted job, its state and every state change (the events table)
 * live here; the run directories hold only what the engine produced. Writes
 * are transactions with synchronous=FULL, so a job is on disk before its 201
 * and a power loss cannot lose it (a WAL commit costs one fsync; see
 * store.c). The store keeps a small pool of connections so readers never wait
 * on a writer's fsync; every function is safe to call from any thread.
 *
 * Time values are UNIX seconds (double); NAN stands for SQL NULL. */
#ifndef PUNCH_STORE_H
#define PUNCH_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jobstate/jobstate.h"

#define STORE_ID_LEN 12

/* A job row, without its spec. Heap strings belong to the struct: release
 * with store_job_clear(). */
typedef struct store_job {
    int64_t seq;
    char id[STORE_ID_LEN + 1];
    char owner[64];
    char name[128];
    job_state state;
    int priority;
    int ranks;
    char trainer[24];
    int workers;
    int threads;
    long time_limit_s;
    double vstart;
    double submitted_at, started_at, finished_at;
    bool has_exit_code;
    int exit_code;
    char *error;
    pid_t supervisor_pid;       /* 0 if none */
    long long supervisor_start; /* clock ticks since boot */
    pid_t sid;                  /* mpirun's session; 0 until running */
    char stop_reason[16];       /* "", "cancel" or "timeout" */
    double stop_requested_at;
    bool killed;
    char *progress;             /* frozen JSON when finished, else NULL */
    char *result;
    int gpus;                   /* held while running: resources.gpus x workers */
    char gpu_devices[256];      /* its devices on a single host ("0,1"), else "" */
    char *hosts;                /* its allocation once started: JSON text
                                   [{"host": "h1", "ranks": 2}, ...] in rank
                                   order (placement.h); NULL before, or for a
                                   job started before migration 0004 */
    long slurm_id;              /* its Slurm job (scheduler = slurm); 0: none */
    char slurm_reason[128];     /* Slurm's reason while it pends there; "" */
    double mem_per_rank;        /* estimated bytes per rank (memest.c); 0: not charged */
    bool files_removed;         /* its run directory was removed by retention */
    double final_bytes;         /* its run directory's disk use measured since it
                                   last ended (store_job_set_final_bytes); -1:
                                   not measured, or not ended */
    int checkpoint_keep;        /* training.checkpoint_keep, kept at submit; -1:
                                   submitted before migration 0013 (job.json) */
    char hparams[256];          /* its key hyperparameters, compact JSON
                                   (spec_hparams.h), kept at submit; "":
                                   submitted before migration 0016 */
} store_job;

void store_job_clear(store_job *job);

typedef struct store_new_job {
    const char *owner;
    const char *name;
    const char *trainer;
    const char *spec;      /* the JSON text that runs ("@NAME" resolved) */
    const char *spec_written; /* the spec as the user wrote it; NULL: spec */
    int priority;
    int ranks;
    int workers;
    int threads;
    long time_limit_s;
    int gpus;              /* resources.gpus x workers */
    double mem_per_rank;   /* estimated bytes per rank (memest.c); 0: none */
    int checkpoint_keep;   /* training.checkpoint_keep; -1: unknown (NULL) */
    const char *hparams;   /* key hyperparameters, compact JSON; NULL: none */
} store_new_job;

typedef enum store_status {
    STORE_OK,
    STORE_NOT_FOUND,
    STORE_CONFLICT,  /* the job is not in a state that allows the change */
    STORE_LIMIT,     /* the owner's queue is full */
    STORE_ERROR,     /* SQLite failed; logged with context */
} store_status;

typedef struct store store;

/* Open (creating if missing) the database at path and bring its schema up to
 * date. `connections` is the pool size (one per concurrent caller is ideal). */
store *store_open(const char *path, int connections, char *err, size_t errlen);
void store_close(store *st);
/* The schema version the database is at (PRAGMA user_version). */
int store_schema_version(store *st);

/* Insert a queued job unless its owner already has max_queued queued jobs
 * (STORE_LIMIT); both in one transaction, so concurrent submits cannot
 * overshoot. Fills id_out. Durable when it returns STORE_OK. now <= 0 stamps
 * the submission time inside the transaction (times then follow run order). */
store_status store_job_submit(store *st, const store_new_job *nj, int max_queued, double now,
                              char id_out[STORE_ID_LEN + 1]);

store_status store_job_get(store *st, const char *id, store_job *job);
/* The owner's most recently submitted job (the seed API's "current job"). */
store_status store_job_latest(store *st, const char *owner, store_job *job);

/* The ids (in order, at most max) of the jobs whose id starts with prefix:
 * owner's, or everyone's when owner is NULL. A short id a user types. */
store_status store_job_ids_by_prefix(store *st, const char *owner, const char *prefix,
                                     char (*ids)[STORE_ID_LEN + 1], int max, int *n);
/* The submitted spec text; caller frees *spec. */
store_status store_job_spec(store *st, const char *id, char **spec);
/* The spec as its user wrote it (the resolved one for jobs submitted
 * before migration 0012); caller frees *spec. */
store_status store_job_spec_written(store *st, const char *id, char **spec);
/* 1-based place of a queued job in run order (priority, fair share, FIFO);
 * 0 if the job is not queued; -1 on a store error (logged). */
int store_queue_position(store *st, const store_job *job);

/* Jobs of owner in starting or running (the per-user running limit counts
 * these); -1 on a store error. */
int store_owner_active(store *st, const char *owner);

/* Iteration: the callback returns false to stop early. The job is only
 * valid during the call. */
typedef bool (*store_job_cb)(const store_job *job, void *arg);
/* One page of a job list (store_job_page): jobs matching the filters, newest
 * first (by seq, which submission order gives), older than a cursor. */
typedef struct store_page_query {
    const char *owner; /* NULL: every owner */
    int state;         /* < 0: every state (or those of states) */
    unsigned states;   /* with state < 0: a bit (1u << job_state) per state kept; 0: all */
    const char *name_glob; /* only jobs whose name matches this SQLite GLOB; NULL: any */
    int64_t before;    /* only jobs with seq < before; <= 0: from the newest */
    double since;      /* only jobs submitted at or after this time; NAN: any */
    int limit;         /* at most this many jobs (>= 1) */
    bool owner_active; /* also read the owners' active job counts */
} store_page_query;

typedef struct store_owner_count {
    char owner[64];
    int count;
} store_owner_count;

/* A page read in one read transaction, so its figures agree. Release with
 * store_page_clear(). */
typedef struct store_page {
    store_job *jobs;
    size_t n;
    int *queue_position;         /* per job: its 1-based place if queued, else 0 */
    bool more;                   /* older jobs match beyond jobs[n - 1] */
    store_owner_count *active;   /* with owner_active: every owner with jobs in
                                    starting or running, and how many */
    size_t n_active;
} store_page;

/* Read a page. Its cost does not depend on the store's size: each filter
 * is a range of an index (schema/migrations/0006_pages.sql), and the
 * queue's places come from one walk of the run order shared by every page
 * until the queue changes (not one count per job). */
store_status store_job_page(store *st, const store_page_query *q, store_page *page);
void store_page_clear(store_page *page);
/* The page's active count for owner (0 if none); needs owner_active. */
int store_page_owner_active(const store_page *page, const char *owner);

/* Number of SQL statements the store's connections have started (SQLite's
 * trace hook, counting every statement and trigger program run), for tests
 * that guard the cost of a request and for metrics. */
uint64_t store_statements(store *st);

/* SQLite virtual machine steps of the store's statements finished so far,
 * in this process (every store): the work a request's queries did, rows
 * visited included, where a count of statements cannot tell a point
 * lookup from a COUNT over thousands of rows. For cost tests. */
uint64_t store_vm_steps(void);

/* Number of write transactions committed since the store was opened: read
 * before a read, an unchanged count afterwards means nothing the read saw
 * has changed since (this process is the database's only writer). */
uint64_t store_writes(store *st);

/* Queued jobs in run order, at most limit. */
store_status store_queue_scan(store *st, int limit, store_job_cb cb, void *arg);
/* The same without the jobs of owners who already have max_running jobs
 * starting or running (<= 0: no limit), so the `limit` rows a scheduling
 * pass reads are jobs that may start: behind a thousand jobs of users at
 * their limit, another user's job would otherwise never be seen. */
store_status store_queue_scan_startable(store *st, int limit, int max_running,
                                        store_job_cb cb, void *arg);
/* Jobs in starting or running. */
store_status store_active_jobs(store *st, store_job_cb cb, void *arg);
/* Number of jobs per state. */
store_status store_counts(store *st, long counts[JOB_STATE_COUNT]);

/* State changes; each records an event. STORE_CONFLICT when the job is not
 * in a state the change applies to. */
store_status store_job_cancel_queued(store *st, const char *id, double now);
/* queued -> starting (the job left the queue; its supervisor is not yet
 * forked) with the GPU devices it was given (NULL or "": none) and its
 * allocation (hosts: the JSON text of store_job.hosts; NULL or "": none),
 * then the supervisor's identity once it is. */
store_status store_job_mark_starting(store *st, const char *id, const char *gpu_devices,
                                     const char *hosts, double now);
/* A starting or running job Slurm put back in its queue (requeue after a
 * preemption, a node failure, `scontrol requeue`) is queued again, waiting
 * for `reason`, with a running -> queued event saying `detail`.
 * STORE_CONFLICT when it is not starting or running, or a stop was asked. */
store_status store_job_requeued(store *st, const char *id, const char *reason, const char *detail,
                                double now);

/* An event saying `detail` on a job that stays in `state` (state -> state);
 * STORE_CONFLICT when it is no longer in that state. */
store_status store_job_note(store *st, const char *id, job_state state, const char *detail,
                            double now);

/* Record a job's Slurm job id and Slurm's current reason for it ("" or
 * NULL: none), while it is queued, starting or running. With `submitted`
 * (the submission just made, e.g. "Slurm job 42"), the job's events get a
 * queued -> queued line saying so. */
store_status store_job_set_slurm(store *st, const char *id, long slurm_id, const char *reason,
                                 const char *submitted, double now);

store_status store_job_set_supervisor(store *st, const char *id, pid_t supervisor_pid,
                                      long long supervisor_start);
store_status store_job_mark_running(store *st, const char *id, pid_t sid, double now);
/* Record why the daemon stops a starting/running job; keeps the first reason. */
store_status store_job_request_stop(store *st, const char *id, const char *reason, double now);
store_status store_job_mark_killed(store *st, const char *id);
/* Move a queued/starting/running job to a final state. exit_code may be
 * NULL; error, progress and result (JSON text) may be NULL. */
store_status store_job_finish(store *st, const char *id, job_state final_state,
                              const int *exit_code, const char *error, const char *progress,
                              const char *result, double now);
/* Forget up to `max` finished jobs (succeeded, failed, cancelled, timeout)
 * that ended before `before`, oldest first, with their events, in one
 * transaction; never a queued, starting or running job. Their ids go to
 * ids (capacity max), their number to *n, for the caller to remove their
 * run directories. */
store_status store_prune_finished(store *st, double before, int max,
                                  char (*ids)[STORE_ID_LEN + 1], int *n);
/* retention_keep_records: mark up to `max` finished jobs that ended before
 * `before` and whose files are still there (files_removed = 0), oldest
 * first, as files_removed, in one transaction; rows and events stay. Their
 * ids go to ids (capacity max), their number to *n, for the caller to
 * remove their run directories. */
store_status store_mark_files_removed(store *st, double before, int max,
                                      char (*ids)[STORE_ID_LEN + 1], int *n);
/* Record `bytes`, the disk use of finished job id's run directory, as
 * measured for its end at finished_at (ignored if it has ended again since,
 * or is not finished). */
store_status store_job_set_final_bytes(store *st, const char *id, double finished_at,
                                       double bytes);
/* owner's disk as the store knows it: *cached, the sum of the final bytes
 * measured for their finished jobs (not removed by retention), and one cb
 * per job of theirs that has a run directory but no such measure (started,
 * or finished and not measured since it ended). Queued jobs are not read:
 * the cost follows the owner's history, not their queue. */
store_status store_owner_disk(store *st, const char *owner, double *cached, store_job_cb cb,
                              void *arg);
/* Forget a job and its events (the seed's destroy). */
store_status store_job_delete(store *st, const char *id);
/* Forget a finished job and its events (DELETE /api/v1/jobs/{id}), in one
 * transaction that checks it is still finished: STORE_CONFLICT when it is
 * not (resumed since it was read), STORE_NOT_FOUND when it is gone. The run
 * directory is the caller's to remove, after this returns STORE_OK. */
store_status store_job_delete_finished(store *st, const char *id);

/* A job's events, oldest first. */
typedef bool (*store_event_cb)(double at, const char *from, const char *to, const char *detail,
                               void *arg);
store_status store_job_events(store *st, const char *id, store_event_cb cb, void *arg);

/* ---- uploaded datasets (migration 0007) ------------------------------------
 * One row per (owner, name): what the upload's format check found. The
 * file itself is the daemon's (datasets.h); a dataset is "in use" while a
 * queued, starting or running job of its owner names it, that is, while
 * the job's stored spec holds `ref`, the quoted "@PATH" submit resolved the
 * name to. */
typedef struct store_dataset {
    char owner[64];
    char name[72];
    char format[16];
    long long bytes;
    char sha256[65];
    long long records;      /* -1: the file holds tensors, not samples */
    char *shapes;           /* JSON text; owned (store_dataset_clear) */
    double created_at;
} store_dataset;

void store_dataset_clear(store_dataset *ds);

/* Insert or replace ds (owner, name) in one transaction that first checks
 * that no active job uses ref (STORE_CONFLICT) and that the owner's other
 * uploads plus ds->bytes stay within quota (STORE_LIMIT), then calls
 * place(arg) (which puts the file in place; false aborts with STORE_ERROR)
 * and commits. *replaced: whether the name existed. */
store_status store_dataset_put(store *st, const store_dataset *ds, const char *ref,
                               long long quota, bool (*place)(void *arg), void *arg,
                               bool *replaced);
store_status store_dataset_get(store *st, const char *owner, const char *name,
                               store_dataset *out);
typedef bool (*store_dataset_cb)(const store_dataset *ds, void *arg);
/* owner's datasets by name (every owner's, by owner then name, if NULL). */
store_status store_dataset_list(store *st, const char *owner, store_dataset_cb cb, void *arg);
/* The oldest queued or running job of owner that uses ref, into id (for a
 * 409's message): STORE_NOT_FOUND when none does (any more). */
store_status store_dataset_user(store *st, const char *owner, const char *ref,
                                char id[STORE_ID_LEN + 1]);
/* Forget (owner, name) unless an active job uses ref (STORE_CONFLICT). */
store_status store_dataset_delete(store *st, const char *owner, const char *name,
                                  const char *ref);
/* Bytes of owner's uploads; -1 on a store error. */
long long store_dataset_usage(store *st, const char *owner);

/* Put a failed, cancelled or timed-out job back in the queue under its id
 * (POST /api/v1/jobs/{id}/resume): every trace of its last run cleared,
 * its fair-share tag set to the scheduler's clock, an event from its
 * final state to queued with `detail`. STORE_CONFLICT in another state,
 * STORE_LIMIT when its owner already has max_queued queued jobs (0: no
 * limit), STORE_NOT_FOUND for no such job. */
store_status store_job_resume(store *st, const char *id, int max_queued, const char *detail,
                              double now);

/* The event feed (GET /api/v1/events): every job's events after the event
 * id `after`, oldest first, at most limit. Ids ascend with time and are
 * never reused. Strings are valid only during the call. */
typedef struct store_feed_event {
    int64_t id;
    const char *job_id, *owner;
    double at;
    const char *from, *to, *detail; /* from and detail may be NULL */
} store_feed_event;
typedef bool (*store_feed_cb)(const store_feed_event *e, void *arg);
store_status store_events_since(store *st, int64_t after, int limit, store_feed_cb cb, void *arg);
/* The newest event's id (0 when there is none). */
store_status store_events_last(store *st, int64_t *id);

/* Fault simulation for tests, in the manner of SQLite's sqlite3FaultSim:
 * while fn is set, it is called (from any thread) before each SQL statement
 * the store is about to run, with that statement's text; when it returns
 * true the statement fails as a failing SQLite would, so the call returns
 * STORE_ERROR (or its false/-1 equivalent) after logging. fn NULL turns the
 * simulation off. Production never sets it. */
typedef bool (*store_fault_fn)(void *arg, const char *sql);
void store_fault_sim(store_fault_fn fn, void *arg);

#endif
