/* api_seed.c — the Distributed Keras Punchcard endpoints, kept for its
 * clients: /api/submit, /api/state, /api/cancel and /api/destroy act on the
 * caller's current job (their most recent one), with JSON job specs where
 * the seed took pickles. */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "jobview.h"
#include "log.h"
#include "rundir.h"

enum MHD_Result api_seed_submit(api_request *r)
{
    json_error_t jerr;
    json_t *body = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &jerr);
    const char *secret = json_string_value(json_object_get(body, "secret"));
    char *secret_copy = secret ? strdup(secret) : NULL;
    enum MHD_Result ret;
    bool authed = api_authenticate(r, secret_copy, &ret);
    free(secret_copy);
    if (!authed) {
        json_decref(body);
        return ret;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL,
                               "body must be a JSON object: {\"secret\": ..., \"job\": {spec}} "
                               "or the spec with a \"secret\" field");
    }
    /* {"secret", "job": {spec}}, or the spec itself carrying "secret". */
    json_t *spec = json_object_get(body, "job");
    if (spec && !json_is_object(spec)) {
        json_decref(body);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "job", "job: must be a job spec object");
    }
    if (!spec) {
        json_object_del(body, "secret");
        spec = body;
    }
    char *text = json_dumps(spec, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot encode the job");
    ret = api_submit_spec(r, text, strlen(text));
    free(text);
    return ret;
}

/* The caller's current job, or a 404 queued in *ret. */
static bool api_seed_current(api_request *r, store_job *job, enum MHD_Result *ret)
{
    if (!api_authenticate(r, NULL, ret))
        return false;
    store_status rs = store_job_latest(r->d->st, r->caller.identity, job);
    if (rs == STORE_OK)
        return true;
    *ret = rs == STORE_NOT_FOUND
               ? api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "%s has no job", r->caller.identity)
               : api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    return false;
}

enum MHD_Result api_seed_state(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_seed_current(r, &job, &ret))
        return ret;
    json_t *o = jobview_json(r->d, &job);
    store_job_clear(&job);
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_seed_cancel(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_seed_current(r, &job, &ret))
        return ret;
    ret = api_cancel_job(r, &job);
    store_job_clear(&job);
    return ret;
}

enum MHD_Result api_seed_destroy(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_seed_current(r, &job, &ret))
        return ret;
    if (!job_state_is_final(job.state)) {
        ret = api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                              "job %s is %s; cancel it (or wait for it) before destroying it",
                              job.id, job_state_name(job.state));
        store_job_clear(&job);
        return ret;
    }
    char dir[4096], path[4200], err[512];
    json_t *model = NULL, *history = NULL;
    if (rundir_path(dir, sizeof dir, r->d->cfg.data_dir, job.id, NULL)) {
        snprintf(path, sizeof path, "%s/weights.safetensors", dir);
        model = rundir_weights_model(path, err, sizeof err);
        snprintf(path, sizeof path, "%s/history.json", dir);
        history = json_load_file(path, 0, NULL);
    }
    json_t *o = json_object();
    json_object_set_new(o, "model", model ? model : json_null());
    json_object_set_new(o, "history", history ? history : json_null());
    /* Forget it: the row first, so a failure leaves no half-deleted job. */
    if (store_job_delete(r->d->st, job.id) != STORE_OK) {
        json_decref(o);
        store_job_clear(&job);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    if (!rundir_remove(dir))
        log_warn("job %s: could not remove its run directory %s", job.id, dir);
    log_info("job %s (%s): destroyed", job.id, job.owner);
    store_job_clear(&job);
    return api_reply_json(r, MHD_HTTP_OK, o);
}
