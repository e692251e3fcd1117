/* sweep.c — a sweep's lifecycle (sweep.h): create, advance, cancel, and
 * the JSON a client reads. Everything a decision needs is in the store
 * (the sweep's request, its trials' rows, their jobs' states) or in the
 * trials' run directories (history.json), so advancing twice, or after a
 * restart, decides the same. One lock serializes advances: the monitor's
 * thread (a trial's job ended) and HTTP threads (a sweep read) may both
 * call it. */
#include "sweep/sweep.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/retention.h"
#include "run/rundir.h"
#include "sweep/sweep_asha.h"
#include "sweep/sweep_trials.h"
#include "sweep/sweep_pbt_run.h"

static pthread_mutex_t sweep_lock = PTHREAD_MUTEX_INITIALIZER;

static bool sweep_refuse(sweep_error *err, const char *field, const char *msg)
{
    snprintf(err->field, sizeof err->field, "%s", field);
    snprintf(err->msg, sizeof err->msg, "%s: %s", field, msg);
    return false;
}

/* An optional integer field of o within [lo, hi], else def. */
static bool sweep_int_field(const json_t *o, const char *key, const char *field, int lo, int hi,
                            int def, int *out, sweep_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        *out = def;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char msg[128];
        snprintf(msg, sizeof msg, "must be an integer from %d to %d", lo, hi);
        return sweep_refuse(err, field, msg);
    }
    *out = (int)json_integer_value(v);
    return true;
}

/* An optional integer field of a search section, read into *out. */
typedef struct sweep_int_spec {
    const char *key;
    int lo, hi, def;
    int *out;
} sweep_int_spec;

/* search's section ("asha", "pbt"), which must be an object (shape names
 * its fields), with its n integer fields read in order; NULL with err
 * naming the first field refused. */
static const json_t *sweep_conf_section(const json_t *search, const char *section,
                                        const char *shape, const sweep_int_spec *ints, size_t n,
                                        sweep_error *err)
{
    const json_t *o = json_object_get(search, section);
    char field[64];
    if (!json_is_object(o)) {
        char msg[160];
        snprintf(field, sizeof field, "search.%s", section);
        snprintf(msg, sizeof msg, "must be an object {%s}", shape);
        sweep_refuse(err, field, msg);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(field, sizeof field, "search.%s.%s", section, ints[i].key);
        if (!sweep_int_field(o, ints[i].key, field, ints[i].lo, ints[i].hi, ints[i].def,
                             ints[i].out, err))
            return NULL;
    }
    return o;
}

static bool sweep_conf_asha(const json_t *search, sweep_conf *c, sweep_error *err)
{
    int lo, hi;
    const sweep_int_spec ints[] = {
        {"min_epochs", 1, 100000, 1, &lo},
        {"max_epochs", 1, 100000, 0, &hi},
        {"reduction_factor", 2, 100, 3, &c->eta},
    };
    if (!sweep_conf_section(search, "asha",
                            "\"min_epochs\", \"max_epochs\", \"reduction_factor\"", ints,
                            sizeof ints / sizeof *ints, err))
        return false;
    if (hi <= lo)
        return sweep_refuse(err, "search.asha.max_epochs", "must be given and above min_epochs");
    c->n_rungs = sweep_asha_rungs(lo, hi, c->eta, c->rungs, SWEEP_ASHA_MAX_RUNGS);
    return true;
}

/* "pbt": {"population", "perturb_every_epochs", "generations" or "epochs"
 * (their total), "quantile", "seed"}; the population is checked where it
 * is drawn (sweep_search_trials). */
static bool sweep_conf_pbt(const json_t *search, sweep_conf *c, sweep_error *err)
{
    int total;
    const sweep_int_spec ints[] = {
        {"perturb_every_epochs", 1, 100000, 0, &c->perturb},
        {"generations", 1, 1000, 0, &c->generations},
        {"epochs", 1, 1000000, 0, &total},
    };
    const json_t *p = sweep_conf_section(
        search, "pbt", "\"population\", \"perturb_every_epochs\", \"generations\"", ints,
        sizeof ints / sizeof *ints, err);
    if (!p)
        return false;
    if (c->perturb == 0)
        return sweep_refuse(err, "search.pbt.perturb_every_epochs",
                            "must be given: the epochs of one generation");
    if ((c->generations == 0) == (total == 0))
        return sweep_refuse(err, "search.pbt.generations", "give one of generations and epochs "
                                                           "(all generations' epochs)");
    if (total) {
        if (total % c->perturb != 0 || total / c->perturb > 1000)
            return sweep_refuse(err, "search.pbt.epochs", "must be a multiple of "
                                                          "perturb_every_epochs, at most 1000 "
                                                          "generations of it");
        c->generations = total / c->perturb;
    }
    const json_t *q = json_object_get(p, "quantile");
    c->quantile = q ? json_number_value(q) : 0.25;
    if (q && (!json_is_number(q) || !(c->quantile > 0 && c->quantile <= 0.5)))
        return sweep_refuse(err, "search.pbt.quantile", "must be a number above 0 and at most "
                                                        "0.5");
    const json_t *seed = json_object_get(p, "seed");
    if (!seed)
        seed = json_object_get(search, "seed");
    c->seed = json_is_integer(seed) ? (uint64_t)json_integer_value(seed) : 0;
    return true;
}

static bool sweep_conf_parse(const json_t *search, sweep_conf *c, sweep_error *err)
{
    memset(c, 0, sizeof *c);
    c->search = search;
    c->method = json_string_value(json_object_get(search, "method"));
    c->asha = c->method && strcmp(c->method, "asha") == 0;
    c->pbt = c->method && strcmp(c->method, "pbt") == 0;
    c->metric = json_string_value(json_object_get(search, "metric"));
    if (!c->metric || !c->metric[0] || strlen(c->metric) > 64)
        return sweep_refuse(err, "search.metric", "must name a history key (\"val_accuracy\", "
                                                  "\"val_loss\", \"loss\", ...)");
    const json_t *mode = json_object_get(search, "mode");
    const char *m = json_string_value(mode);
    if (mode && (!m || (strcmp(m, "max") != 0 && strcmp(m, "min") != 0)))
        return sweep_refuse(err, "search.mode", "must be \"max\" or \"min\"");
    c->maximize = m ? strcmp(m, "max") == 0 : !strstr(c->metric, "loss");
    if (!sweep_int_field(search, "max_concurrent", "search.max_concurrent", 1,
                         SWEEP_MAX_CONCURRENT, SWEEP_DEFAULT_CONCURRENT, &c->max_concurrent, err))
        return false;
    const json_t *keep = json_object_get(search, "keep");
    const char *k = json_string_value(keep);
    if (keep && (!k || (strcmp(k, "all") != 0 && strcmp(k, "best") != 0)))
        return sweep_refuse(err, "search.keep", "must be \"all\" or \"best\"");
    c->keep_best = k && strcmp(k, "best") == 0;
    if (c->pbt)
        return sweep_conf_pbt(search, c, err);
    return !c->asha || sweep_conf_asha(search, c, err);
}

/* The epochs a trial's first job is asked for: ASHA's first rung, a PBT
 * generation, or the spec's own (0). */
static int sweep_first_epochs(const sweep_conf *c)
{
    return c->asha ? c->rungs[0] : c->pbt ? c->perturb : 0;
}

/* Trial params applied to a copy of job (and training.epochs = epochs when
 * > 0), as compact JSON text (heap); NULL with msg. */
static char *sweep_trial_spec(const json_t *job, const json_t *params, int epochs, char *msg,
                              size_t cap)
{
    json_t *spec = json_deep_copy(job);
    const char *path;
    const json_t *v;
    bool ok = spec != NULL;
    json_object_foreach((json_t *)params, path, v) {
        if (ok)
            ok = sweep_search_apply(spec, path, v, msg, cap);
    }
    if (ok && epochs > 0) {
        json_t *e = json_integer(epochs);
        ok = sweep_search_apply(spec, "training.epochs", e, msg, cap);
        json_decref(e);
    }
    char *text = ok ? json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (ok && !text)
        snprintf(msg, cap, "out of memory");
    json_decref(spec);
    return text;
}

/* Every trial's spec through the submit's checks, without storing one. */
static bool sweep_validate(daemon_ctx *d, const char *owner, const json_t *job,
                           const json_t *trials, const sweep_conf *c, int *status,
                           sweep_error *err)
{
    api_submitted *sub = malloc(sizeof *sub);
    if (!sub)
        return *status = 500, sweep_refuse(err, "search", "out of memory");
    bool ok = true;
    for (size_t i = 0; ok && i < json_array_size(trials); i++) {
        const json_t *params = json_array_get(trials, i);
        char msg[512] = "", *p = json_dumps(params, JSON_COMPACT | JSON_REAL_PRECISION(17));
        char *text = sweep_trial_spec(job, params, sweep_first_epochs(c), msg, sizeof msg);
        if (!text) {
            *status = 400;
            snprintf(err->field, sizeof err->field, "search.parameters");
            snprintf(err->msg, sizeof err->msg, "trial %zu %.200s: %.500s", i, p ? p : "", msg);
            ok = false;
        } else if (!api_submit_job(d, owner, text, strlen(text), true, sub)) {
            *status = sub->status;
            snprintf(err->field, sizeof err->field, "job%s%s", sub->field[0] ? "." : "",
                     sub->field);
            snprintf(err->msg, sizeof err->msg, "trial %zu %.200s: %.500s", i, p ? p : "", sub->msg);
            ok = false;
        }
        free(text);
        free(p);
    }
    free(sub);
    return ok;
}

bool sweep_create(daemon_ctx *d, const char *owner, const char *body, size_t len,
                  char id[STORE_ID_LEN + 1], int *status, sweep_error *err)
{
    *status = 400;
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, 0, &jerr);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return sweep_refuse(err, "", "the body must be a JSON object {\"name\", \"job\", "
                                     "\"search\"}");
    }
    const json_t *job = json_object_get(doc, "job"), *search = json_object_get(doc, "search");
    const json_t *name = json_object_get(doc, "name");
    sweep_conf c;
    json_t *trials = NULL;
    bool ok = false;
    if (name && (!json_is_string(name) || json_string_length(name) == 0 ||
                 json_string_length(name) > 100))
        sweep_refuse(err, "name", "must be a string of 1 to 100 characters");
    else if (!json_is_object(job))
        sweep_refuse(err, "job", "must be a job spec (an object, as POST /api/v1/jobs takes)");
    else if (!json_is_object(search))
        sweep_refuse(err, "search", "must be an object");
    else if (sweep_conf_parse(search, &c, err) &&
             (trials = sweep_search_trials(search, SWEEP_MAX_TRIALS, err)) &&
             sweep_validate(d, owner, job, trials, &c, status, err))
        ok = true;
    size_t n = ok ? json_array_size(trials) : 0;
    char **params = ok ? calloc(n, sizeof *params) : NULL;
    char *text = ok ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    for (size_t i = 0; params && i < n; i++)
        params[i] = json_dumps(json_array_get(trials, i), JSON_COMPACT | JSON_REAL_PRECISION(17));
    bool stored = false;
    if (ok && params && text) {
        bool all = true;
        for (size_t i = 0; i < n; i++)
            all = all && params[i];
        stored = all && store_sweep_create(d->st, owner, name ? json_string_value(name) : "sweep",
                                           text, (const char *const *)params, n, daemon_now(),
                                           id) == STORE_OK;
    }
    if (ok && !stored) {
        *status = 500;
        sweep_refuse(err, "", "could not store the sweep; see the server log");
    }
    for (size_t i = 0; params && i < n; i++)
        free(params[i]);
    free(params);
    free(text);
    json_decref(trials);
    json_decref(doc);
    if (!stored)
        return false;
    log_info("sweep %s (%s): %zu trials", id, owner, n);
    sweep_advance(d, id);
    return true;
}

/* ---- advancing ------------------------------------------------------------ */

static bool sweep_collect(const store_trial *t, void *arg)
{
    sweep_trials *ts = arg;
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? ts->cap * 2 : 16;
        sweep_trial *v = realloc(ts->v, cap * sizeof *v);
        if (!v)
            return !(ts->failed = true);
        ts->v = v;
        ts->cap = cap;
    }
    sweep_trial *x = &ts->v[ts->n];
    memset(x, 0, sizeof *x);
    x->idx = t->idx;
    x->params = json_loads(t->params ? t->params : "{}", 0, NULL);
    x->rungs = json_loads(t->rungs ? t->rungs : "[]", 0, NULL);
    if (!x->params || !json_is_array(x->rungs)) {
        json_decref(x->params);
        json_decref(x->rungs);
        return !(ts->failed = true);
    }
    snprintf(x->job_id, sizeof x->job_id, "%s", t->job_id ? t->job_id : "");
    x->budget = t->budget;
    x->has_job = t->has_job;
    x->state = t->job_state;
    x->finished_at = t->job_finished_at;
    ts->n++;
    return true;
}

static void sweep_trials_free(sweep_trials *ts)
{
    for (size_t i = 0; i < ts->n; i++) {
        json_decref(ts->v[i].params);
        json_decref(ts->v[i].rungs);
    }
    free(ts->v);
    memset(ts, 0, sizeof *ts);
}

static bool sweep_trials_load(daemon_ctx *d, const char *id, sweep_trials *ts)
{
    memset(ts, 0, sizeof *ts);
    if (store_sweep_trials(d->st, id, sweep_collect, ts) == STORE_OK && !ts->failed)
        return true;
    sweep_trials_free(ts);
    return false;
}

/* A succeeded trial's job's rung: its budget's epochs and metric there. */
static void sweep_record(daemon_ctx *d, const char *id, const sweep_conf *c, sweep_trial *t)
{
    if (!t->has_job || t->state != JOB_SUCCEEDED || t->budget <= 0)
        return;
    const json_t *last = sweep_last_rung(t);
    if (last && json_integer_value(json_object_get(last, "epochs")) == t->budget)
        return;
    double m = sweep_history_metric(d, t->job_id, c->metric, t->budget);
    json_t *rung = json_pack("{s:i, s:o, s:f, s:n}", "epochs", t->budget, "metric",
                             isnan(m) ? json_null() : json_real(m), "completed_at",
                             isnan(t->finished_at) ? daemon_now() : t->finished_at,
                             "promoted_at");
    if (!rung || json_array_append_new(t->rungs, rung) != 0)
        return;
    sweep_store_trial(d, id, t);
}

/* The rung record of t at `epochs`, or NULL. */
static json_t *sweep_rung_at(const sweep_trial *t, int epochs)
{
    size_t i;
    json_t *r;
    json_array_foreach(t->rungs, i, r) {
        if (json_integer_value(json_object_get(r, "epochs")) == epochs)
            return r;
    }
    return NULL;
}

/* Resume trial t's job from its checkpoint with rung k+1's budget. */
static bool sweep_promote(daemon_ctx *d, const char *id, const sweep_conf *c, sweep_trial *t,
                          int k)
{
    int epochs = c->rungs[k + 1];
    char *spec = sweep_spec_with_epochs(d, t->job_id, false, epochs);
    char *written = sweep_spec_with_epochs(d, t->job_id, true, epochs);
    char detail[160];
    snprintf(detail, sizeof detail, "promoted by sweep %s to rung %d: %d epochs from its "
             "checkpoint", id, k + 1, epochs);
    double now = daemon_now();
    store_status rs = spec && written && sweep_clear_ending(d, t->job_id)
                          ? store_sweep_requeue(d->st, t->job_id, spec, written,
                                                d->cfg.max_queued, detail, now)
                          : STORE_ERROR;
    free(spec);
    free(written);
    if (rs != STORE_OK) {
        log_warn("sweep %s: cannot promote trial %d (job %s) yet: %s", id, t->idx, t->job_id,
                 rs == STORE_LIMIT ? "its owner's queue is full" : "store error");
        return false;
    }
    json_object_set_new(sweep_rung_at(t, c->rungs[k]), "promoted_at", json_real(now));
    t->budget = epochs;
    t->state = JOB_QUEUED;
    sweep_store_trial(d, id, t);
    log_info("sweep %s: trial %d (job %s) promoted to %d epochs", id, t->idx, t->job_id, epochs);
    daemon_wake();
    return true;
}

/* ASHA: the trial to promote now, highest rung first (-1: none); its rung
 * index in *k. */
static int sweep_asha_next(const sweep_conf *c, const sweep_trials *ts, int *k)
{
    sweep_asha_entry *e = malloc((ts->n ? ts->n : 1) * sizeof *e);
    size_t *who = malloc((ts->n ? ts->n : 1) * sizeof *who);
    int pick = -1;
    for (int r = c->n_rungs - 2; e && who && r >= 0 && pick < 0; r--) {
        size_t n = 0;
        for (size_t i = 0; i < ts->n; i++) {
            const json_t *rung = sweep_rung_at(&ts->v[i], c->rungs[r]);
            if (!rung)
                continue;
            const json_t *m = json_object_get(rung, "metric");
            /* A trial whose job is no longer a finished success (deleted,
             * resumed by hand) counts in the rung but cannot be promoted. */
            bool movable = ts->v[i].has_job && ts->v[i].state == JOB_SUCCEEDED &&
                           ts->v[i].budget == c->rungs[r];
            e[n].metric = json_is_number(m) ? json_number_value(m) : NAN;
            e[n].promoted = !json_is_null(json_object_get(rung, "promoted_at")) || !movable;
            who[n++] = i;
        }
        int p = sweep_asha_pick(e, n, c->eta, c->maximize);
        if (p >= 0) {
            pick = (int)who[p];
            *k = r;
        }
    }
    free(e);
    free(who);
    return pick;
}

/* Submit trial t (its first rung's epochs under ASHA). false: not now
 * (the owner's queue is full, a store error); a trial that can never be
 * submitted is marked so (budget -1) and true. */
static bool sweep_submit(daemon_ctx *d, const store_sweep *sw, const json_t *job,
                         const sweep_conf *c, sweep_trial *t)
{
    int epochs = sweep_first_epochs(c);
    char msg[512];
    char *text = sweep_trial_spec(job, t->params, epochs, msg, sizeof msg);
    api_submitted *sub = malloc(sizeof *sub);
    bool ok = text && sub && api_submit_job(d, sw->owner, text, strlen(text), false, sub);
    if (!ok && sub && text && sub->status != 429 && sub->status != 500 && sub->status != 503) {
        log_warn("sweep %s: trial %d cannot be submitted: %s", sw->id, t->idx, sub->msg);
        t->budget = -1;
        free(text);
        free(sub);
        return sweep_store_trial(d, sw->id, t);
    }
    if (ok) {
        snprintf(t->job_id, sizeof t->job_id, "%s", sub->id);
        t->has_job = true;
        t->state = JOB_QUEUED;
        if (!epochs) {
            json_t *spec = json_loads(text, 0, NULL);
            json_t *e = json_object_get(json_object_get(spec, "training"), "epochs");
            t->budget = json_is_integer(e) ? (int)json_integer_value(e) : 1;
            json_decref(spec);
        } else {
            t->budget = epochs;
        }
        if (c->pbt)
            sweep_pbt_first(c, t);
        sweep_store_trial(d, sw->id, t);
    }
    free(text);
    free(sub);
    return ok;
}

static void sweep_retain(daemon_ctx *d, const sweep_conf *c, const sweep_trials *ts);

/* sw's request (*doc, the caller's), its search read into *c, and its
 * trials (*ts); false, holding nothing, when one of them cannot be read. */
static bool sweep_read(daemon_ctx *d, const store_sweep *sw, json_t **doc, sweep_conf *c,
                       sweep_trials *ts)
{
    sweep_error err;
    *doc = json_loads(sw->doc, 0, NULL);
    if (*doc && sweep_conf_parse(json_object_get(*doc, "search"), c, &err) &&
        sweep_trials_load(d, sw->id, ts))
        return true;
    json_decref(*doc);
    *doc = NULL;
    return false;
}

static void sweep_advance_locked(daemon_ctx *d, const store_sweep *sw)
{
    json_t *doc;
    sweep_conf c;
    sweep_trials ts;
    if (!sweep_read(d, sw, &doc, &c, &ts)) {
        log_error("sweep %s: cannot read its request or trials; not advanced", sw->id);
        return;
    }
    const json_t *job = json_object_get(doc, "job");
    int active = 0;
    bool unsubmitted = false;
    for (size_t i = 0; i < ts.n; i++) {
        if (c.pbt)
            sweep_pbt_record(d, sw->id, &c, &ts.v[i]);
        else
            sweep_record(d, sw->id, &c, &ts.v[i]);
        active += sweep_active(&ts.v[i]);
        unsubmitted = unsubmitted || (!ts.v[i].job_id[0] && ts.v[i].budget >= 0);
    }
    int boundary = c.pbt ? sweep_pbt_boundary(&c, &ts, active, unsubmitted) : -1;
    if (boundary >= 0)
        sweep_pbt_decide(d, sw, &c, &ts, boundary);
    size_t next = 0;
    bool blocked = false;
    while (active < c.max_concurrent && !blocked) {
        int k = 0, p = c.asha ? sweep_asha_next(&c, &ts, &k) : -1;
        if (p >= 0) {
            blocked = !sweep_promote(d, sw->id, &c, &ts.v[p], k);
            active += !blocked;
            continue;
        }
        p = c.pbt ? sweep_pbt_waiting(&ts) : -1;
        if (p >= 0) {
            blocked = !sweep_pbt_start(d, sw, &c, &ts.v[p]);
            active += !blocked;
            continue;
        }
        while (next < ts.n && (ts.v[next].job_id[0] || ts.v[next].budget < 0))
            next++;
        if (next == ts.n)
            break;
        blocked = !sweep_submit(d, sw, job, &c, &ts.v[next]);
        active += !blocked && ts.v[next].budget > 0;
    }
    bool pending = c.pbt && (sweep_pbt_waiting(&ts) >= 0 ||
                             sweep_pbt_boundary(&c, &ts, active, false) >= 0);
    bool any_metric = false;
    for (size_t i = 0; i < ts.n; i++) {
        pending = pending || (!ts.v[i].job_id[0] && ts.v[i].budget >= 0);
        const json_t *last = sweep_last_rung(&ts.v[i]);
        any_metric = any_metric || json_is_number(json_object_get(last, "metric"));
    }
    /* Files go before the sweep shows as ended, so whoever sees it ended
     * sees what it kept (retention is idempotent if the finish fails). */
    if (active == 0 && !pending && !blocked) {
        sweep_retain(d, &c, &ts);
        if (store_sweep_finish(d->st, sw->id, any_metric ? "succeeded" : "failed",
                               daemon_now()) == STORE_OK)
            log_info("sweep %s (%s): %s", sw->id, sw->owner,
                     any_metric ? "succeeded" : "failed");
    }
    sweep_trials_free(&ts);
    json_decref(doc);
}

void sweep_advance(daemon_ctx *d, const char *sweep_id)
{
    pthread_mutex_lock(&sweep_lock);
    store_sweep sw;
    if (store_sweep_get(d->st, sweep_id, &sw) == STORE_OK) {
        if (strcmp(sw.state, "running") == 0)
            sweep_advance_locked(d, &sw);
        store_sweep_clear(&sw);
    }
    pthread_mutex_unlock(&sweep_lock);
}

void sweep_job_ended(daemon_ctx *d, const char *job_id)
{
    char id[STORE_ID_LEN + 1];
    if (store_sweep_of_job(d->st, job_id, id, NULL) == STORE_OK)
        sweep_advance(d, id);
}

bool sweep_job_fields(daemon_ctx *d, const char *job_id, json_t *job)
{
    char id[STORE_ID_LEN + 1];
    char *params = NULL;
    store_status rs = store_sweep_of_job(d->st, job_id, id, &params);
    if (rs == STORE_NOT_FOUND)
        return true;
    json_t *p = rs == STORE_OK ? json_loads(params, 0, NULL) : NULL;
    free(params);
    if (!p)
        return false;
    json_object_set_new(job, "sweep", json_string(id));
    json_object_set_new(job, "params", p);
    return true;
}

/* A page's row of job_id: its object in the array (found by "id"). */
static bool sweep_page_row(const char *job_id, const char *sweep_id, const char *params,
                           void *arg)
{
    json_t *jobs = arg;
    size_t i;
    json_t *row;
    json_array_foreach(jobs, i, row) {
        const char *id = json_string_value(json_object_get(row, "id"));
        if (!job_id || !id || strcmp(id, job_id) != 0)
            continue;
        json_t *p = json_loads(params ? params : "{}", 0, NULL);
        json_object_set_new(row, "sweep", json_string(sweep_id ? sweep_id : ""));
        json_object_set_new(row, "params", p ? p : json_null());
        break;
    }
    return true;
}

bool sweep_page_fields(daemon_ctx *d, json_t *jobs)
{
    if (json_array_size(jobs) == 0)
        return true;
    json_t *ids = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(jobs, i, row) {
        if (ids)
            json_array_append(ids, json_object_get(row, "id"));
    }
    char *text = ids ? json_dumps(ids, JSON_COMPACT) : NULL;
    json_decref(ids);
    bool ok = text && store_sweep_of_jobs(d->st, text, sweep_page_row, jobs) == STORE_OK;
    free(text);
    return ok;
}

store_status sweep_cancel(daemon_ctx *d, const char *sweep_id)
{
    pthread_mutex_lock(&sweep_lock);
    double now = daemon_now();
    store_status rs = store_sweep_finish(d->st, sweep_id, "cancelled", now);
    sweep_trials ts;
    if (rs == STORE_OK && sweep_trials_load(d, sweep_id, &ts)) {
        for (size_t i = 0; i < ts.n; i++) {
            const sweep_trial *t = &ts.v[i];
            if (!sweep_active(t))
                continue;
            store_status js = t->state == JOB_QUEUED
                                  ? store_job_cancel_queued(d->st, t->job_id, now)
                                  : STORE_CONFLICT;
            if (js == STORE_CONFLICT)
                js = store_job_request_stop(d->st, t->job_id, "cancel", now);
            if (js != STORE_OK && js != STORE_CONFLICT)
                log_error("sweep %s: cannot cancel trial %d (job %s)", sweep_id, t->idx,
                          t->job_id);
        }
        sweep_trials_free(&ts);
        daemon_wake();
    } else if (rs == STORE_OK) {
        log_error("sweep %s: cancelled, but its trials could not be read to stop them",
                  sweep_id);
    }
    pthread_mutex_unlock(&sweep_lock);
    return rs;
}

/* ---- the public object ----------------------------------------------------- */

static json_t *sweep_time(double t)
{
    return isnan(t) ? json_null() : json_real(t);
}

/* A trial's state as a user reads it: its job's, with "pending" before
 * submit, "unsubmittable", "deleted", and under ASHA "paused" (waiting at
 * a rung) or "stopped" (left at a rung when the sweep ended). */
static const char *sweep_trial_state(const sweep_conf *c, const store_sweep *sw,
                                     const sweep_trial *t)
{
    if (t->budget < 0)
        return "unsubmittable";
    if (!t->job_id[0])
        return strcmp(sw->state, "running") == 0 ? "pending" : "not_run";
    if (!t->has_job)
        return "deleted";
    if (c->asha && t->state == JOB_SUCCEEDED && t->budget < c->rungs[c->n_rungs - 1])
        return strcmp(sw->state, "running") == 0 ? "paused" : "stopped";
    const json_t *last = sweep_last_rung(t);
    if (c->pbt && t->state == JOB_SUCCEEDED &&
        (last != sweep_pbt_last(t) ||
         json_integer_value(json_object_get(last, "generation")) + 1 < c->generations))
        return strcmp(sw->state, "running") == 0 ? "paused" : "stopped";
    return job_state_name(t->state);
}

static json_t *sweep_trial_json(const sweep_conf *c, const store_sweep *sw, const sweep_trial *t)
{
    const json_t *last = sweep_last_rung(t);
    const json_t *metric = json_object_get(last, "metric");
    json_t *o = json_pack("{s:i, s:o, s:O, s:s, s:I, s:O, s:O}", "index", t->idx, "job",
                          t->job_id[0] ? json_string(t->job_id) : json_null(), "params",
                          t->params, "state", sweep_trial_state(c, sw, t), "epochs_run",
                          (json_int_t)(last ? json_integer_value(json_object_get(last, "epochs"))
                                            : 0),
                          "metric", metric ? metric : json_null(), "rungs", t->rungs);
    if (o && c->pbt)
        json_object_set_new(o, "pbt", sweep_pbt_lineage(t));
    return o;
}

/* Does a (epochs run, metric) beat b? More epochs first (ASHA's rungs are
 * not comparable across budgets), then the metric in the sweep's mode. */
static bool sweep_beats(const sweep_conf *c, const sweep_trial *a, const sweep_trial *b)
{
    const json_t *la = sweep_last_rung(a), *lb = sweep_last_rung(b);
    json_int_t ea = json_integer_value(json_object_get(la, "epochs"));
    json_int_t eb = json_integer_value(json_object_get(lb, "epochs"));
    if (ea != eb)
        return ea > eb;
    double ma = json_number_value(json_object_get(la, "metric"));
    double mb = json_number_value(json_object_get(lb, "metric"));
    return c->maximize ? ma > mb : ma < mb;
}

static const sweep_trial *sweep_best_trial(const sweep_conf *c, const sweep_trials *ts)
{
    const sweep_trial *best = NULL;
    for (size_t i = 0; i < ts->n; i++) {
        const sweep_trial *t = &ts->v[i];
        if (json_is_number(json_object_get(sweep_last_rung(t), "metric")) &&
            (!best || sweep_beats(c, t, best)))
            best = t;
    }
    return best;
}

/* The sweep ended: stopped ASHA trials keep only their last checkpoint,
 * and under keep "best" every trial but the best loses its checkpoints and
 * weights (run/retention.h). */
static void sweep_retain(daemon_ctx *d, const sweep_conf *c, const sweep_trials *ts)
{
    const sweep_trial *best = sweep_best_trial(c, ts);
    for (size_t i = 0; i < ts->n; i++) {
        const sweep_trial *t = &ts->v[i];
        if (!t->job_id[0] || !t->has_job || sweep_active(t))
            continue;
        bool loser = c->keep_best && t != best;
        bool stopped = c->asha && t->state == JOB_SUCCEEDED &&
                       t->budget < c->rungs[c->n_rungs - 1];
        if (loser || stopped)
            retention_sweep_trial(d, t->job_id, loser);
        if (loser && c->pbt)
            sweep_pbt_forget(d, t);
    }
}

static json_t *sweep_best(const sweep_conf *c, const sweep_trials *ts)
{
    const sweep_trial *best = sweep_best_trial(c, ts);
    if (!best)
        return json_null();
    return json_pack("{s:s, s:O, s:O, s:I}", "job", best->job_id, "params", best->params,
                     "metric", json_object_get(sweep_last_rung(best), "metric"), "epochs_run",
                     json_integer_value(json_object_get(sweep_last_rung(best), "epochs")));
}

json_t *sweep_json(daemon_ctx *d, const store_sweep *sw, bool detail)
{
    json_t *doc;
    sweep_conf c;
    sweep_trials ts;
    if (!sweep_read(d, sw, &doc, &c, &ts))
        return NULL;
    int done = 0, running = 0;
    for (size_t i = 0; i < ts.n; i++) {
        const sweep_trial *t = &ts.v[i];
        running += sweep_active(t);
        /* A PBT member between generations is not done. */
        done += t->budget < 0 ||
                (t->job_id[0] && !sweep_active(t) &&
                 !(c.pbt && strcmp(sweep_trial_state(&c, sw, t), "paused") == 0));
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:i, s:i, s:i}",
                          "id", sw->id, "name", sw->name, "owner", sw->owner, "state", sw->state,
                          "method", c.method, "metric", c.metric, "mode",
                          c.maximize ? "max" : "min", "max_concurrent", c.max_concurrent,
                          "created_at", sweep_time(sw->created_at), "finished_at",
                          sweep_time(sw->finished_at), "trials_total", (int)ts.n,
                          "trials_done", done, "trials_running", running);
    if (o && c.asha) {
        json_t *rungs = json_array();
        for (int i = 0; rungs && i < c.n_rungs; i++)
            json_array_append_new(rungs, json_integer(c.rungs[i]));
        json_object_set_new(o, "rungs", rungs ? rungs : json_null());
        json_object_set_new(o, "reduction_factor", json_integer(c.eta));
    }
    if (o && c.pbt)
        json_object_set_new(o, "pbt", json_pack("{s:i, s:i, s:i, s:f, s:I}", "population",
                                                (int)ts.n, "perturb_every_epochs", c.perturb,
                                                "generations", c.generations, "quantile",
                                                c.quantile, "seed", (json_int_t)c.seed));
    if (o)
        json_object_set_new(o, "best", sweep_best(&c, &ts));
    if (o && detail) {
        json_t *trials = json_array();
        for (size_t i = 0; trials && i < ts.n; i++)
            json_array_append_new(trials, sweep_trial_json(&c, sw, &ts.v[i]));
        json_object_set_new(o, "trials", trials ? trials : json_null());
        json_object_set(o, "job", json_object_get(doc, "job"));
        json_object_set(o, "search", json_object_get(doc, "search"));
    }
    sweep_trials_free(&ts);
    json_decref(doc);
    return o;
}
