/* sweep_pbt_run.c — PBT's lifecycle in a sweep (sweep_pbt_run.h): the
 * record of each generation, the boundary where the bottom quantile
 * exploits and explores (sweep_pbt.c decides who), and each member's next
 * generation started: afresh from a copy of its donor's weights through
 * the engine's warm start, or on from its own checkpoint. */
#include "sweep/sweep_pbt_run.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/rundir.h"
#include "sweep/sweep_pbt.h"
#include "sweep/sweep_search.h"

/* A PBT trial's record of one generation: how it began (from_job: the job
 * whose weights it started from, null when it went on from its own
 * checkpoint or its first start; params: those it trained with), when its
 * job was started for it, and once done its metric and time. */
static json_t *sweep_pbt_record_new(int generation, int epochs, const char *from_job,
                                    const json_t *params)
{
    return json_pack("{s:i, s:i, s:o, s:O, s:n, s:n, s:n}", "generation", generation, "epochs",
                     epochs, "from_job", from_job ? json_string(from_job) : json_null(),
                     "params", params, "started_at", "metric", "completed_at");
}

/* The last record, complete or not (NULL: none). */
json_t *sweep_pbt_last(const sweep_trial *t)
{
    size_t n = json_array_size(t->rungs);
    return n ? json_array_get(t->rungs, n - 1) : NULL;
}

static bool sweep_pbt_done(const json_t *rec)
{
    return json_is_number(json_object_get(rec, "completed_at"));
}

/* Generation 0's record, for a trial just submitted. */
void sweep_pbt_first(const sweep_conf *c, sweep_trial *t)
{
    json_t *rec = sweep_pbt_record_new(0, c->perturb, NULL, t->params);
    if (rec)
        json_object_set_new(rec, "started_at", json_real(daemon_now()));
    if (!rec || json_array_append_new(t->rungs, rec) != 0)
        log_error("sweep: trial %d: out of memory for its first generation", t->idx);
}

/* A succeeded trial's job finished the generation it was started for:
 * its metric from history.json (the job's run, after its budget). */
void sweep_pbt_record(daemon_ctx *d, const char *id, const sweep_conf *c, sweep_trial *t)
{
    json_t *rec = sweep_pbt_last(t);
    if (!t->has_job || t->state != JOB_SUCCEEDED || !rec || sweep_pbt_done(rec) ||
        json_is_null(json_object_get(rec, "started_at")))
        return;
    double m = sweep_history_metric(d, t->job_id, c->metric, t->budget);
    json_object_set_new(rec, "metric", isnan(m) ? json_null() : json_real(m));
    json_object_set_new(rec, "completed_at",
                        json_real(isnan(t->finished_at) ? daemon_now() : t->finished_at));
    sweep_store_trial(d, id, t);
}

/* A trial waiting for its decided generation to start, or -1. */
int sweep_pbt_waiting(const sweep_trials *ts)
{
    for (size_t i = 0; i < ts->n; i++) {
        const sweep_trial *t = &ts->v[i];
        json_t *rec = sweep_pbt_last(t);
        if (t->has_job && t->state == JOB_SUCCEEDED && rec && !sweep_pbt_done(rec) &&
            json_is_null(json_object_get(rec, "started_at")))
            return (int)i;
    }
    return -1;
}

/* Copy src to dst through dst.tmp and a rename, so a reader never sees
 * half a file. */
static bool sweep_copy_file(const char *src, const char *dst)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = in >= 0 && out >= 0;
    char buf[65536];
    while (ok) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        for (ssize_t off = 0; ok && off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            ok = w > 0;
            off += ok ? w : 0;
        }
    }
    int saved = errno;
    if (out >= 0 && close(out) != 0)
        ok = false, saved = errno;
    if (in >= 0)
        close(in);
    if (ok && rename(tmp, dst) != 0)
        ok = false, saved = errno;
    if (!ok) {
        log_error("sweep: cannot copy %s to %s: %s", src, dst, strerror(saved));
        unlink(tmp);
    }
    return ok;
}

/* The files an exploiting trial's job warm-starts from: copies of the
 * donor's weights and of its checkpoint (for its optimizer state) taken
 * at the boundary, in the trial's own run directory, since the donor goes
 * on training and rewrites its own. */
static bool sweep_pbt_init_path(daemon_ctx *d, const char *job_id, char *path, size_t cap)
{
    return rundir_path(path, cap, d->cfg.data_dir, job_id, "pbt-init.safetensors");
}

static bool sweep_pbt_optim_path(daemon_ctx *d, const char *job_id, char *path, size_t cap)
{
    return rundir_path(path, cap, d->cfg.data_dir, job_id, "pbt-init.ckpt");
}

/* job's stored spec (written: as its user wrote it) for an exploit:
 * params applied, training.epochs a generation, training.init_from the
 * donor's job (and, in the spec that runs, the copies of its weights and
 * of its checkpoint, whose optimizer state the run takes too). */
static char *sweep_pbt_spec(daemon_ctx *d, const sweep_conf *c, const char *job_id,
                            bool written, const json_t *params, const char *donor)
{
    char *text = NULL, msg[512], path[4096], optim[4096];
    if ((written ? store_job_spec_written(d->st, job_id, &text)
                 : store_job_spec(d->st, job_id, &text)) != STORE_OK)
        return NULL;
    json_t *spec = json_loads(text, 0, NULL);
    free(text);
    json_t *tr = json_object_get(spec, "training");
    if (!json_is_object(tr) && spec && json_is_object(spec)) {
        tr = json_object();
        json_object_set_new(spec, "training", tr);
    }
    bool ok = json_is_object(tr) && sweep_pbt_init_path(d, job_id, path, sizeof path) &&
              sweep_pbt_optim_path(d, job_id, optim, sizeof optim);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)params, key, v) {
        ok = ok && sweep_search_apply(spec, key, v, msg, sizeof msg);
    }
    char ref[4200], optim_ref[4200];
    snprintf(ref, sizeof ref, "@%s", path);
    snprintf(optim_ref, sizeof optim_ref, "@%s", optim);
    json_t *init = written ? json_pack("{s:s}", "job", donor)
                           : json_pack("{s:s, s:s, s:s}", "job", donor, "path", ref,
                                       "optimizer", optim_ref);
    ok = ok && init && json_object_set_new(tr, "epochs", json_integer(c->perturb)) == 0;
    if (ok)
        ok = json_object_set_new(tr, "init_from", init) == 0;
    else
        json_decref(init);
    char *out = ok ? json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(spec);
    return out;
}

/* At the boundary, before anything moves: the exploit's spec through the
 * submit's checks (the donor's weights against the model, the new values
 * against the schema) and the donor's weights and checkpoint copied.
 * false: the trial goes on from its own checkpoint instead (logged). */
static bool sweep_pbt_prepare(daemon_ctx *d, const store_sweep *sw, const sweep_conf *c,
                              const sweep_trial *t, const sweep_trial *donor,
                              const json_t *params)
{
    char *text = sweep_pbt_spec(d, c, t->job_id, true, params, donor->job_id);
    api_submitted *sub = malloc(sizeof *sub);
    bool ok = text && sub && api_submit_job(d, sw->owner, text, strlen(text), true, sub);
    if (!ok)
        log_warn("sweep %s: trial %d cannot exploit job %s: %s; it goes on as it was", sw->id,
                 t->idx, donor->job_id, text && sub ? sub->msg : "out of memory");
    free(text);
    free(sub);
    char src[4096], dst[4096];
    return ok && rundir_path(src, sizeof src, d->cfg.data_dir, donor->job_id,
                             "weights.safetensors") &&
           sweep_pbt_init_path(d, t->job_id, dst, sizeof dst) && sweep_copy_file(src, dst) &&
           rundir_path(src, sizeof src, d->cfg.data_dir, donor->job_id,
                       "checkpoints/ckpt.bin") &&
           sweep_pbt_optim_path(d, t->job_id, dst, sizeof dst) && sweep_copy_file(src, dst);
}

/* The generation every live trial (a succeeded job whose records are all
 * complete) has finished, when it is a boundary to decide: none is
 * running, none waits to start, nothing is left to submit. -1 otherwise. */
int sweep_pbt_boundary(const sweep_conf *c, const sweep_trials *ts, int active,
                       bool unsubmitted)
{
    if (active > 0 || unsubmitted || sweep_pbt_waiting(ts) >= 0)
        return -1;
    int g = -1;
    for (size_t i = 0; i < ts->n; i++) {
        const sweep_trial *t = &ts->v[i];
        json_t *rec = sweep_pbt_last(t);
        if (t->has_job && t->state == JOB_SUCCEEDED && rec && sweep_pbt_done(rec)) {
            int rg = (int)json_integer_value(json_object_get(rec, "generation"));
            g = rg > g ? rg : g;
        }
    }
    return g >= 0 && g + 1 < c->generations ? g : -1;
}

/* Decide boundary g: rank the trials that finished it, exploit and
 * explore for the bottom quantile, and record generation g+1 for every
 * one of them (started as slots free, sweep_pbt_start). */
void sweep_pbt_decide(daemon_ctx *d, const store_sweep *sw, const sweep_conf *c,
                      sweep_trials *ts, int g)
{
    size_t n = 0;
    size_t *who = malloc((ts->n ? ts->n : 1) * sizeof *who);
    double *metric = malloc((ts->n ? ts->n : 1) * sizeof *metric);
    int *donor = malloc((ts->n ? ts->n : 1) * sizeof *donor);
    for (size_t i = 0; who && metric && donor && i < ts->n; i++) {
        const sweep_trial *t = &ts->v[i];
        json_t *rec = sweep_pbt_last(t);
        if (!t->has_job || t->state != JOB_SUCCEEDED || !rec ||
            json_integer_value(json_object_get(rec, "generation")) != g)
            continue;
        const json_t *m = json_object_get(rec, "metric");
        metric[n] = json_is_number(m) ? json_number_value(m) : NAN;
        who[n++] = i;
    }
    uint64_t state = sweep_pbt_state(c->seed, g + 1);
    if (!who || !metric || !donor ||
        sweep_pbt_plan(metric, n, c->quantile, c->maximize, &state, donor) < 0) {
        log_error("sweep %s: out of memory deciding generation %d", sw->id, g + 1);
        n = 0;
    }
    for (size_t k = 0; k < n; k++) {
        sweep_trial *t = &ts->v[who[k]];
        const sweep_trial *from = donor[k] >= 0 ? &ts->v[who[donor[k]]] : NULL;
        sweep_error err;
        json_t *params = from ? sweep_search_explore(c->search, from->params, &state, &err)
                              : json_incref(t->params);
        if (from && (!params || !sweep_pbt_prepare(d, sw, c, t, from, params))) {
            json_decref(params);
            params = json_incref(t->params);
            from = NULL;
        }
        json_t *rec = sweep_pbt_record_new(g + 1, (g + 2) * c->perturb,
                                           from ? from->job_id : NULL, params);
        char *text = from ? json_dumps(params, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        if (rec && json_array_append_new(t->rungs, rec) == 0 &&
            (!from || (text && store_sweep_trial_params(d->st, sw->id, t->idx, text) ==
                                   STORE_OK))) {
            json_decref(t->params);
            t->params = json_incref(params);
            sweep_store_trial(d, sw->id, t);
        } else {
            log_error("sweep %s: cannot record trial %d's generation %d", sw->id, t->idx,
                      g + 1);
        }
        free(text);
        json_decref(params);
    }
    log_info("sweep %s: generation %d decided for %zu trials", sw->id, g + 1, n);
    free(who);
    free(metric);
    free(donor);
}

/* Start trial t's decided generation: on from its own checkpoint with a
 * generation more of epochs, or, exploiting, afresh from the copy of the
 * donor's weights with the explored params. */
bool sweep_pbt_start(daemon_ctx *d, const store_sweep *sw, const sweep_conf *c, sweep_trial *t)
{
    json_t *rec = sweep_pbt_last(t);
    const char *donor = json_string_value(json_object_get(rec, "from_job"));
    const json_t *params = json_object_get(rec, "params");
    int g = (int)json_integer_value(json_object_get(rec, "generation"));
    char detail[1024], ckpt[4096];
    int epochs = donor ? c->perturb : t->budget + c->perturb;
    bool ok;
    if (donor) {
        char *p = json_dumps(params, JSON_COMPACT | JSON_REAL_PRECISION(17));
        snprintf(detail, sizeof detail, "exploited by sweep %s at generation %d: warm start "
                 "from job %s's weights, params %.800s", sw->id, g, donor, p ? p : "");
        free(p);
        /* Its own checkpoint would be resumed; the run starts afresh. */
        ok = rundir_path(ckpt, sizeof ckpt, d->cfg.data_dir, t->job_id, "checkpoints/ckpt.bin") &&
             (unlink(ckpt) == 0 || errno == ENOENT) &&
             sweep_requeue(d, sw->id, t, sweep_pbt_spec(d, c, t->job_id, false, params, donor),
                           sweep_pbt_spec(d, c, t->job_id, true, params, donor), detail);
    } else {
        snprintf(detail, sizeof detail, "continued by sweep %s to generation %d: %d epochs "
                 "from its checkpoint", sw->id, g, epochs);
        ok = sweep_requeue(d, sw->id, t, sweep_spec_with_epochs(d, t->job_id, false, epochs),
                           sweep_spec_with_epochs(d, t->job_id, true, epochs), detail);
    }
    if (!ok)
        return false;
    json_object_set_new(rec, "started_at", json_real(daemon_now()));
    t->budget = epochs;
    t->state = JOB_QUEUED;
    sweep_store_trial(d, sw->id, t);
    log_info("sweep %s: trial %d (job %s) starts generation %d%s%s", sw->id, t->idx, t->job_id,
             g, donor ? " from job " : "", donor ? donor : "");
    daemon_wake();
    return true;
}

/* PBT's lineage of a trial: [{generation, from_job, params}], one per
 * generation begun. */
json_t *sweep_pbt_lineage(const sweep_trial *t)
{
    json_t *out = json_array();
    size_t i;
    const json_t *r;
    json_array_foreach(t->rungs, i, r) {
        json_t *o = json_pack("{s:O, s:O, s:O}", "generation", json_object_get(r, "generation"),
                              "from_job", json_object_get(r, "from_job"), "params",
                              json_object_get(r, "params"));
        if (!out || !o || json_array_append_new(out, o) != 0) {
            json_decref(out);
            return json_null();
        }
    }
    return out ? out : json_null();
}


void sweep_pbt_forget(daemon_ctx *d, const sweep_trial *t)
{
    char path[4096];
    if (sweep_pbt_init_path(d, t->job_id, path, sizeof path) && unlink(path) != 0 &&
        errno != ENOENT)
        log_error("job %s: cannot remove %s: %s", t->job_id, path, strerror(errno));
    if (sweep_pbt_optim_path(d, t->job_id, path, sizeof path) && unlink(path) != 0 &&
        errno != ENOENT)
        log_error("job %s: cannot remove %s: %s", t->job_id, path, strerror(errno));
}
