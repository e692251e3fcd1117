/* api_seed.c — the Distributed Keras Punchcard endpoints, kept for its
 * clients: /api/submit, /api/state, /api/cancel and /api/destroy act on the
 * caller's current job (their most recent one, which routes.c loads), with
 * JSON job specs where the seed took pickles. /api/state and /api/cancel are
 * the v1 job handlers; submit and destroy are here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "log.h"
#include "rundir.h"

enum MHD_Result api_seed_submit(api_request *r)
{
    json_t *body = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, NULL);
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
    enum MHD_Result ret = api_submit_spec(r, text, strlen(text));
    free(text);
    return ret;
}

enum MHD_Result api_seed_destroy(api_request *r)
{
    const store_job *job = r->job;
    if (!job_state_is_final(job->state))
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job %s is %s; cancel it (or wait for it) before destroying it",
                               job->id, job_state_name(job->state));
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
