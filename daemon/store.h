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
} store_job;

void store_job_clear(store_job *job);

typedef struct store_new_job {
    const char *owner;
    const char *name;
    const char *trainer;
    const char *spec;      /* the submitted JSON text */
    int priority;
    int ranks;
    int workers;
    int threads;
    long time_limit_s;
    int gpus;              /* resources.gpus x workers */
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
/* The submitted spec text; caller frees *spec. */
store_status store_job_spec(store *st, const char *id, char **spec);
/* 1-based place of a queued job in run order (priority, fair share, FIFO);
 * 0 if the job is not queued; -1 on a store error (logged). */
int store_queue_position(store *st, const store_job *job);

/* Jobs of owner in starting or running (the per-user running limit counts
 * these); -1 on a store error. */
int store_owner_active(store *st, const char *owner);

/* Iteration: the callback returns false to stop early. The job is only
 * valid during the call. */
typedef bool (*store_job_cb)(const store_job *job, void *arg);
/* Jobs of `owner` (all owners if NULL), newest first, of one state or all
 * (state < 0). */
store_status store_job_list(store *st, const char *owner, int state, store_job_cb cb, void *arg);
/* Queued jobs in run order, at most limit. */
store_status store_queue_scan(store *st, int limit, store_job_cb cb, void *arg);
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
/* Forget a job and its events (the seed's destroy). */
store_status store_job_delete(store *st, const char *id);

/* A job's events, oldest first. */
typedef bool (*store_event_cb)(double at, const char *from, const char *to, const char *detail,
                               void *arg);
store_status store_job_events(store *st, const char *id, store_event_cb cb, void *arg);

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
