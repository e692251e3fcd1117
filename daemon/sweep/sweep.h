/* sweep.h — a hyperparameter sweep's lifecycle: a request checked and
 * stored with every trial's spec validated, its trials submitted as the
 * owner's ordinary jobs (at most max_concurrent at a time, through the
 * submit path of POST /api/v1/jobs), ASHA's promotions, its end, its
 * cancel, and its public JSON. Advancing a sweep is idempotent and reads
 * everything from the store, so it is safe to repeat from any thread (it
 * runs when a trial's job ends and whenever the sweep is read). */
#ifndef PUNCH_SWEEP_H
#define PUNCH_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "daemon.h"
#include "store/store_sweeps.h"
#include "sweep/sweep_search.h"

/* Limits: trials of one sweep, trials running at once (and the default). */
#define SWEEP_MAX_TRIALS 1000
#define SWEEP_MAX_CONCURRENT 64
#define SWEEP_DEFAULT_CONCURRENT 4

/* Check the request body {"name", "job", "search"} for owner, validate every
 * trial's spec as a submit would (dry run), store the sweep and submit its
 * first trials. On refusal false, with *status (400, 500...) and err. */
bool sweep_create(daemon_ctx *d, const char *owner, const char *body, size_t len,
                  char id[STORE_ID_LEN + 1], int *status, sweep_error *err);

/* Record finished trials' rungs, promote (ASHA), submit trials up to
 * max_concurrent, end the sweep when nothing is left to run. */
void sweep_advance(daemon_ctx *d, const char *sweep_id);

/* The hook for a job that reached a final state: advances its sweep, if it
 * is a trial of one (one indexed look-up otherwise). */
void sweep_job_ended(daemon_ctx *d, const char *job_id);

/* A trial's job object gets "sweep" (the sweep's id) and "params" (its
 * trial's); another job's is left as it is. false on a store error. */
bool sweep_job_fields(daemon_ctx *d, const char *job_id, json_t *job);

/* A job list's page (an array of job objects with "id"): each trial's row
 * gets "sweep" and "params" as sweep_job_fields gives them, in one store
 * statement for the page. false on a store error. */
bool sweep_page_fields(daemon_ctx *d, json_t *jobs);

/* Cancel a running sweep: its queued trials cancelled, running ones asked
 * to stop, nothing more submitted. STORE_CONFLICT if it already ended. */
store_status sweep_cancel(daemon_ctx *d, const char *sweep_id);

/* The sweep as JSON: id, name, owner, state, method, metric, mode, times,
 * counts; with detail also trials [...] and best. NULL on a store error. */
json_t *sweep_json(daemon_ctx *d, const store_sweep *sw, bool detail);

#endif
