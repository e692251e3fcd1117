/* store_sweeps.h — hyperparameter sweeps in the store (migration 0013):
 * one row per sweep (its request as submitted) and one per trial (its
 * parameters, its job once submitted, its epoch budget and rung records).
 * The trials' jobs are ordinary rows of `jobs`; a trial row only points at
 * one. Same contracts as store.h: every write is a durable transaction when
 * it returns STORE_OK, every function is safe from any thread. */
#ifndef PUNCH_STORE_SWEEPS_H
#define PUNCH_STORE_SWEEPS_H

#include "store/store.h"

/* A sweep row. doc is heap text (store_sweep_clear). */
typedef struct store_sweep {
    int64_t seq;
    char id[STORE_ID_LEN + 1];
    char owner[64];
    char name[128];
    char state[16];      /* "running", "succeeded", "cancelled", "failed" */
    double created_at;
    double finished_at;  /* NAN while running */
    char *doc;           /* {"name", "job", "search"} as accepted (JSON text) */
} store_sweep;

void store_sweep_clear(store_sweep *sw);

/* A trial row with its job's state (valid during a callback only). */
typedef struct store_trial {
    int idx;
    const char *params;   /* JSON object text: spec path -> value */
    const char *job_id;   /* NULL until submitted */
    int budget;           /* epochs its job is asked for; 0 before submit */
    const char *rungs;    /* JSON array text */
    bool has_job;         /* job_id names a job that still exists */
    job_state job_state;
    double job_finished_at;
} store_trial;

/* Insert a running sweep with n trials (params[i]: JSON object text) in one
 * transaction; fills id_out. */
store_status store_sweep_create(store *st, const char *owner, const char *name, const char *doc,
                                const char *const *params, size_t n, double now,
                                char id_out[STORE_ID_LEN + 1]);
store_status store_sweep_get(store *st, const char *id, store_sweep *out);
typedef bool (*store_sweep_cb)(const store_sweep *sw, void *arg);
/* owner's sweeps (everyone's when NULL), newest first. */
store_status store_sweep_list(store *st, const char *owner, store_sweep_cb cb, void *arg);
typedef bool (*store_trial_cb)(const store_trial *t, void *arg);
/* A sweep's trials by index. */
store_status store_sweep_trials(store *st, const char *id, store_trial_cb cb, void *arg);
/* Record trial idx's job, budget and rungs (job_id NULL: unchanged). */
store_status store_sweep_trial_set(store *st, const char *id, int idx, const char *job_id,
                                   int budget, const char *rungs);
/* Move a running sweep to a final state (STORE_CONFLICT if not running). */
store_status store_sweep_finish(store *st, const char *id, const char *state, double now);
/* The sweep a job is a trial of, into sweep_id, and its trial's params
 * (heap JSON text, caller frees; NULL allowed): STORE_NOT_FOUND if none. */
store_status store_sweep_of_job(store *st, const char *job_id, char sweep_id[STORE_ID_LEN + 1],
                                char **params);
/* ASHA's promotion: a succeeded job back in the queue under its id with a
 * new spec (spec: the text that runs; written: as its user would write it),
 * its fair-share tag at the scheduler's clock, an event succeeded -> queued
 * with detail. STORE_CONFLICT when it is not succeeded, STORE_LIMIT when its
 * owner has max_queued queued jobs (0: no limit). */
store_status store_sweep_requeue(store *st, const char *job_id, const char *spec,
                                 const char *written, int max_queued, const char *detail,
                                 double now);

/* PBT's exploit: trial idx's params (JSON object text) become new ones. */
store_status store_sweep_trial_params(store *st, const char *id, int idx, const char *params);
/* The trials among the jobs of job_ids (a JSON array of ids, text): cb(job
 * id, sweep id, params JSON text) for each, in one statement whatever the
 * number of ids (a job list's page). */
typedef bool (*store_job_trial_cb)(const char *job_id, const char *sweep_id, const char *params,
                                   void *arg);
store_status store_sweep_of_jobs(store *st, const char *job_ids, store_job_trial_cb cb,
                                 void *arg);

#endif
