/* api_seed.c — the Distributed Keras Punchcard endpoints, kept for its
 * clients: /api/submit, /api/state, /api/cancel and /api/destroy act on the
 * caller's current job (their most recent one), with JSON job specs where
 * the seed took pickles. They speak the seed's fields beside ours: submit
 * takes job_name, num_executors x num_processes (workers) and data_path
 * (the training set's name); state answers job_name and running; destroy
 * answers the model's architecture with its tensors. And its status codes,
 * which its client tests: 403 from submit while the current job is
 * unfinished, 200 from cancel whatever the state, 400 from destroy unless
 * there is a finished job. The seed's pickled trainer is refused: no code
 * travels in a job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "jobspec/spec.h"
#include "api/jobview.h"
#include "log.h"
#include "run/rundir.h"
#include "store/store.h"

/* The seed's submit fields that are not ours, pulled out of the body. */
typedef struct seed_fields {
    json_t *job_name, *num_executors, *num_processes, *data_path;
} seed_fields;

/* The seed's field `key` of body, which must be of the given JSON type
 * (a positive integer for the counts); NULL when absent. False with the
 * field named in *bad when it has the wrong type. */
static bool seed_field(json_t *body, const char *key, json_type type, json_t **out,
                       const char **bad)
{
    json_t *v = json_object_get(body, key);
    *out = v;
    if (!v)
        return true;
    if (json_typeof(v) != type || (type == JSON_INTEGER && json_integer_value(v) < 1) ||
        (type == JSON_STRING && json_string_length(v) == 0)) {
        *bad = key;
        return false;
    }
    return true;
}

/* Set spec.section.key to value unless the spec gives it already, in which
 * case the two must agree. False naming the field on a disagreement. */
static bool seed_merge(json_t *spec, const char *section, const char *key, json_t *value,
                       char *why, size_t len)
{
    json_t *parent = spec;
    if (section) {
        parent = json_object_get(spec, section);
        if (!parent) {
            parent = json_object();
            if (!parent || json_object_set_new(spec, section, parent) != 0) {
                snprintf(why, len, "out of memory");
                return false;
            }
        }
        if (!json_is_object(parent))
            return true; /* the spec library names the bad section */
    }
    json_t *have = json_object_get(parent, key);
    if (have && !json_equal(have, value)) {
        snprintf(why, len, "%s%s%s differs from the seed field that sets it; give it once",
                 section ? section : "", section ? "." : "", key);
        return false;
    }
    if (!have && json_object_set(parent, key, value) != 0) {
        snprintf(why, len, "out of memory");
        return false;
    }
    return true;
}

/* Map the seed's fields onto spec: job_name -> name; num_executors x
 * num_processes (the seed's worker count) -> distributed.workers;
 * data_path -> data.train, a dataset name as any other. */
static bool seed_apply(json_t *spec, const seed_fields *f, const char **field, char *why,
                       size_t len)
{
    *field = "job_name";
    if (f->job_name && !seed_merge(spec, NULL, "name", f->job_name, why, len))
        return false;
    *field = f->num_executors ? "num_executors" : "num_processes";
    if (f->num_executors || f->num_processes) {
        json_int_t e = f->num_executors ? json_integer_value(f->num_executors) : 1;
        json_int_t p = f->num_processes ? json_integer_value(f->num_processes) : 1;
        if (e > 1 << 20 || p > 1 << 20) {
            snprintf(why, len, "num_executors x num_processes is too large");
            return false;
        }
        json_t *workers = json_integer(e * p);
        bool ok = workers && seed_merge(spec, "distributed", "workers", workers, why, len);
        json_decref(workers);
        if (!ok)
            return false;
    }
    *field = "data_path";
    return !f->data_path || seed_merge(spec, "data", "train", f->data_path, why, len);
}

enum MHD_Result api_seed_submit(api_request *r)
{
    json_t *body = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL,
                               "body must be a JSON object: {\"secret\": ..., \"job\": {spec}} "
                               "or the spec with a \"secret\" field");
    }
    if (json_object_get(body, "trainer")) {
        json_decref(body);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "trainer",
                               "trainer: a pickled dist-keras trainer cannot run here (no code "
                               "travels in a job); send the job as a spec instead: "
                               "{\"secret\": ..., \"job\": {\"model\": ..., \"data\": ..., "
                               "\"training\": ..., \"distributed\": {\"trainer\": "
                               "\"downpour\", ...}}} (see docs/job-spec.md)");
    }
    seed_fields f;
    const char *bad = NULL;
    if (!seed_field(body, "job_name", JSON_STRING, &f.job_name, &bad) ||
        !seed_field(body, "num_executors", JSON_INTEGER, &f.num_executors, &bad) ||
        !seed_field(body, "num_processes", JSON_INTEGER, &f.num_processes, &bad) ||
        !seed_field(body, "data_path", JSON_STRING, &f.data_path, &bad)) {
        json_decref(body);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, bad, "%s: expected %s", bad,
                               strcmp(bad, "job_name") == 0 || strcmp(bad, "data_path") == 0
                                   ? "a non-empty string"
                                   : "a positive integer");
    }
    /* {"secret", "job": {spec}}, or the spec itself carrying "secret". */
    json_t *spec = json_object_get(body, "job");
    if (spec && !json_is_object(spec)) {
        json_decref(body);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "job", "job: must be a job spec object");
    }
    json_incref(f.job_name);
    json_incref(f.num_executors);
    json_incref(f.num_processes);
    json_incref(f.data_path);
    static const char *const seed_keys[] = {"secret", "job_name", "num_executors",
                                            "num_processes", "data_path"};
    if (!spec) {
        for (size_t i = 0; i < sizeof seed_keys / sizeof *seed_keys; i++)
            json_object_del(body, seed_keys[i]);
        spec = body;
    }
    char why[256];
    const char *field = NULL;
    bool ok = seed_apply(spec, &f, &field, why, sizeof why);
    char *text = ok ? json_dumps(spec, JSON_COMPACT) : NULL;
    json_decref(f.job_name);
    json_decref(f.num_executors);
    json_decref(f.num_processes);
    json_decref(f.data_path);
    json_decref(body);
    if (!ok)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, field, "%s: %s", field, why);
    if (!text)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot encode the job");
    /* The seed keeps one job per secret: a second submit is refused while
     * the first runs (a check then an insert: two submits racing may both
     * pass, which costs a queued job, nothing else). */
    store_job cur;
    store_status rs = store_job_latest(r->d->st, r->caller.identity, &cur);
    if (rs == STORE_ERROR) {
        free(text);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    if (rs == STORE_OK) {
        bool busy = !job_state_is_final(cur.state);
        enum MHD_Result ret = MHD_NO;
        if (busy)
            ret = api_reply_error(r, MHD_HTTP_FORBIDDEN, NULL,
                                  "your job %s is %s: one job at a time through /api/submit; "
                                  "wait for it or /api/cancel it (POST /api/v1/jobs queues "
                                  "several)", cur.id, job_state_name(cur.state));
        store_job_clear(&cur);
        if (busy) {
            free(text);
            return ret;
        }
    }
    enum MHD_Result ret = api_submit_spec(r, text, strlen(text));
    free(text);
    return ret;
}

enum MHD_Result api_seed_state(api_request *r)
{
    json_t *o = jobview_json(r->d, r->job);
    if (!o)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    /* The seed's Job.is_finished reads "running": true until the job ends. */
    json_object_set_new(o, "job_name", json_string(r->job->name));
    json_object_set_new(o, "running", json_boolean(!job_state_is_final(r->job->state)));
    return api_reply_json(r, MHD_HTTP_OK, o);
}

/* The model's architecture as the job's resolved spec gives it (input and
 * layers, presets expanded), or null when job.json is missing or invalid. */
static json_t *seed_architecture(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/job.json", dir);
    spec_error err;
    job_spec *spec = spec_load_file(path, &err);
    if (!spec)
        return json_null();
    json_t *resolved = spec_to_json(spec);
    spec_free(spec);
    json_t *model = json_object_get(resolved, "model");
    json_incref(model);
    json_decref(resolved);
    return model ? model : json_null();
}

/* handler(r, true) with r->job the caller's current job (latest), or
 * handler(r, false) when they have none; 500 on a store error. */
static enum MHD_Result seed_on_current_job(api_request *r,
                                           enum MHD_Result (*handler)(api_request *, bool))
{
    store_job job;
    store_status rs = store_job_latest(r->d->st, r->caller.identity, &job);
    if (rs == STORE_NOT_FOUND)
        return handler(r, false);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    r->job = &job;
    enum MHD_Result ret = handler(r, true);
    r->job = NULL;
    store_job_clear(&job);
    return ret;
}

static enum MHD_Result seed_cancel_job(api_request *r, bool have)
{
    if (!have) {
        json_t *o = json_pack("{s:b}", "cancelled", 0);
        if (!o)
            return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
        return api_reply_json(r, MHD_HTTP_OK, o);
    }
    /* A finished job stays as it is, answered 200 as the seed does. */
    return job_state_is_final(r->job->state) ? api_job_get(r) : api_job_cancel(r);
}

enum MHD_Result api_seed_cancel(api_request *r)
{
    return seed_on_current_job(r, seed_cancel_job);
}

/* Answer r->job's model and forget it (r->job finished). */
static enum MHD_Result seed_destroy_job(api_request *r)
{
    const store_job *job = r->job;
    char dir[4096], path[4200], err[512];
    if (!rundir_path(dir, sizeof dir, r->d->cfg.data_dir, job->id, NULL))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    json_t *model = rundir_weights_model(path, err, sizeof err);
    snprintf(path, sizeof path, "%s/history.json", dir);
    json_t *history = json_load_file(path, 0, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "model", model ? model : json_null());
    json_object_set_new(o, "history", history ? history : json_null());
    json_object_set_new(o, "architecture", seed_architecture(dir));
    json_object_set_new(o, "job_name", json_string(job->name));
    /* Forget it: the row first, so a failure leaves no half-deleted job. */
    if (store_job_delete(r->d->st, job->id) != STORE_OK) {
        json_decref(o);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    if (!rundir_remove(dir))
        log_warn("job %s: could not remove its run directory %s", job->id, dir);
    log_info("job %s (%s): destroyed", job->id, job->owner);
    return api_reply_json(r, MHD_HTTP_OK, o);
}

static enum MHD_Result seed_destroy_current(api_request *r, bool have)
{
    if (!have)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL,
                               "%s has no job to destroy", r->caller.identity);
    if (!job_state_is_final(r->job->state))
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL,
                               "job %s is %s; cancel it (or wait for it) before destroying it",
                               r->job->id, job_state_name(r->job->state));
    return seed_destroy_job(r);
}

enum MHD_Result api_seed_destroy(api_request *r)
{
    return seed_on_current_job(r, seed_destroy_current);
}
