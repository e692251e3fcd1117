/* sweep_trials.h — what sweep.c and the PBT lifecycle (sweep_pbt_run.c)
 * share inside daemon/sweep: a sweep's configuration as its request says
 * it, its trials as advancing sees them (copies of their rows), and the
 * helpers both use to record and requeue them (sweep_trials.c). Not for other modules:
 * sweep.h is the sweep's interface. */
#ifndef PUNCH_SWEEP_TRIALS_H
#define PUNCH_SWEEP_TRIALS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon.h"
#include "store/store.h"
#include "sweep/sweep_asha.h"

/* What the request's "search" asks, beyond its trials. */
typedef struct sweep_conf {
    const char *method;
    bool asha;
    const char *metric;
    bool maximize;
    int max_concurrent;
    int eta;
    int rungs[SWEEP_ASHA_MAX_RUNGS];
    int n_rungs;
    bool keep_best; /* "keep": "best": losers' files go when the sweep ends */
    bool pbt;
    int perturb;     /* PBT: epochs of a generation */
    int generations;
    double quantile;
    uint64_t seed;
    const json_t *search; /* the request's search (owned by its document) */
} sweep_conf;

/* A trial as advancing sees it (copies of its row). */
typedef struct sweep_trial {
    int idx;
    json_t *params;
    char job_id[STORE_ID_LEN + 1]; /* "" before submit */
    int budget;                    /* -1: could not be submitted */
    json_t *rungs;
    bool has_job;
    job_state state;
    double finished_at;
} sweep_trial;

typedef struct sweep_trials {
    sweep_trial *v;
    size_t n, cap;
    bool failed;
} sweep_trials;

/* The metric after `epochs` epochs in job's history.json (NAN: none). */
double sweep_history_metric(daemon_ctx *d, const char *job_id, const char *metric, int epochs);

/* The last rung t completed, or NULL. */
json_t *sweep_last_rung(const sweep_trial *t);

/* Store t's job, budget and rungs (logged on failure). */
bool sweep_store_trial(daemon_ctx *d, const char *id, const sweep_trial *t);

/* Whether t's job is queued, starting or running. */
bool sweep_active(const sweep_trial *t);

/* job's stored spec (written: as its user wrote it) with training.epochs
 * set; heap text or NULL. */
char *sweep_spec_with_epochs(daemon_ctx *d, const char *job_id, bool written, int epochs);

/* Put t's succeeded job back in the queue under its id with these specs
 * (taken and freed), clearing how its last run ended, with the event's
 * detail; false (logged) when not now. */
bool sweep_requeue(daemon_ctx *d, const char *id, const sweep_trial *t, char *spec,
                   char *written, const char *detail);

/* Remove the files that say how job's last run ended (exit.json,
 * supervisor.json), as a resume does; false (logged) on failure. */
bool sweep_clear_ending(daemon_ctx *d, const char *job_id);

#endif
