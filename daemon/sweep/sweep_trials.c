/* sweep_trials.c — the trial helpers that the sweep driver (sweep.c) and
 * the PBT lifecycle (sweep_pbt_run.c) both call (sweep_trials.h): a
 * trial's metric from its history, its last rung, storing and requeueing
 * it. In a file of their own so neither caller calls back into the other. */
#include "sweep/sweep_trials.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "run/rundir.h"
#include "store/store_sweeps.h"
#include "sweep/sweep_search.h"

/* The metric after `epochs` epochs in job's history.json (NAN: none). */
double sweep_history_metric(daemon_ctx *d, const char *job_id, const char *metric, int epochs)
{
    char path[4096];
    if (!rundir_path(path, sizeof path, d->cfg.data_dir, job_id, "history.json"))
        return NAN;
    json_t *h = json_load_file(path, 0, NULL);
    const json_t *v = json_object_get(h, metric);
    size_t n = json_array_size(v);
    double m = NAN;
    if (n > 0) {
        const json_t *x = json_array_get(v, epochs >= 1 && (size_t)epochs <= n ? (size_t)epochs - 1
                                                                                 : n - 1);
        if (json_is_number(x))
            m = json_number_value(x);
    }
    json_decref(h);
    return m;
}

/* The last rung t completed (PBT's records of a generation in progress
 * have no completed_at yet), or NULL. */
json_t *sweep_last_rung(const sweep_trial *t)
{
    for (size_t n = json_array_size(t->rungs); n > 0; n--) {
        json_t *r = json_array_get(t->rungs, n - 1);
        if (json_is_number(json_object_get(r, "completed_at")))
            return r;
    }
    return NULL;
}

bool sweep_store_trial(daemon_ctx *d, const char *id, const sweep_trial *t)
{
    char *rungs = json_dumps(t->rungs, JSON_COMPACT | JSON_REAL_PRECISION(17));
    store_status rs = rungs ? store_sweep_trial_set(d->st, id, t->idx,
                                                    t->job_id[0] ? t->job_id : NULL, t->budget,
                                                    rungs)
                            : STORE_ERROR;
    free(rungs);
    if (rs != STORE_OK)
        log_error("sweep %s: cannot record trial %d; retried at its next advance", id, t->idx);
    return rs == STORE_OK;
}

bool sweep_active(const sweep_trial *t)
{
    return t->has_job && !job_state_is_final(t->state);
}

/* job's stored spec (written: as its user wrote it) with training.epochs
 * set; heap text or NULL. */
char *sweep_spec_with_epochs(daemon_ctx *d, const char *job_id, bool written, int epochs)
{
    char *text = NULL;
    if ((written ? store_job_spec_written(d->st, job_id, &text)
                 : store_job_spec(d->st, job_id, &text)) != STORE_OK)
        return NULL;
    json_t *spec = json_loads(text, 0, NULL);
    free(text);
    json_t *e = json_integer(epochs);
    char msg[256];
    char *out = spec && e && sweep_search_apply(spec, "training.epochs", e, msg, sizeof msg)
                    ? json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(17))
                    : NULL;
    json_decref(e);
    json_decref(spec);
    return out;
}

/* Remove the files that say how job's last run ended, as a resume does
 * (api_resume.c), so the monitor does not settle the new run from them. */
bool sweep_clear_ending(daemon_ctx *d, const char *job_id)
{
    static const char *const ended[] = {"exit.json", "supervisor.json"};
    for (size_t i = 0; i < sizeof ended / sizeof ended[0]; i++) {
        char path[4096];
        if (!rundir_path(path, sizeof path, d->cfg.data_dir, job_id, ended[i]) ||
            (unlink(path) != 0 && errno != ENOENT)) {
            log_error("job %s: cannot clear the last run's %s: %s", job_id, ended[i],
                      strerror(errno));
            return false;
        }
    }
    return true;
}

/* Put a succeeded job back in the queue under its id with new specs,
 * clearing how its last run ended; false (logged) when not now. */
bool sweep_requeue(daemon_ctx *d, const char *id, const sweep_trial *t, char *spec,
                   char *written, const char *detail)
{
    store_status rs = spec && written && sweep_clear_ending(d, t->job_id)
                          ? store_sweep_requeue(d->st, t->job_id, spec, written,
                                                d->cfg.max_queued, detail, daemon_now())
                          : STORE_ERROR;
    free(spec);
    free(written);
    if (rs != STORE_OK)
        log_warn("sweep %s: cannot requeue trial %d (job %s) yet: %s", id, t->idx, t->job_id,
                 rs == STORE_LIMIT ? "its owner's queue is full" : "store error");
    return rs == STORE_OK;
}
