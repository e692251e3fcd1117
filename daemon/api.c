/* api.c — helpers every handler shares: JSON replies, errors, caller
 * authentication, job visibility, submit and cancel. */
#include "api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jobview.h"
#include "log.h"
#include "jobspec/spec.h"

enum MHD_Result api_reply_response(api_request *r, int status, struct MHD_Response *resp)
{
    if (!resp) {
        r->status = 500;
        return MHD_NO;
    }
    r->status = status;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result api_reply_json(api_request *r, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(body);
    if (!text) {
        log_error("http: cannot encode a %d reply", status);
        r->status = 500;
        return MHD_NO;
    }
    size_t len = strlen(text);
    /* A trailing newline keeps curl output readable. */
    char *nl = realloc(text, len + 2);
    if (nl) {
        text = nl;
        text[len++] = '\n';
        text[len] = '\0';
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        r->status = 500;
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    return api_reply_response(r, status, resp);
}

enum MHD_Result api_reply_error(api_request *r, int status, const char *field, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Messages may quote client bytes: keep them valid for JSON. */
    json_t *m = json_string(msg);
    if (!m) {
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        m = json_string(msg);
    }
    json_t *f = field && field[0] ? json_string(field) : NULL;
    json_t *body = json_object();
    json_object_set_new(body, "error", m ? m : json_string("error"));
    json_object_set_new(body, "field", f ? f : json_null());
    return api_reply_json(r, status, body);
}

/* The bearer token of an Authorization header, or NULL. */
static const char *api_bearer(const char *h)
{
    if (!h || strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t'))
        return NULL;
    h += 6;
    while (*h == ' ' || *h == '\t')
        h++;
    return *h ? h : NULL;
}

bool api_authenticate(api_request *r, const char *body_secret, enum MHD_Result *ret)
{
    const char *secret = api_bearer(
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
    if (!secret)
        secret = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "secret");
    if (!secret)
        secret = body_secret;
    if (secret && auth_identify(r->d->au, secret, strlen(secret), &r->caller))
        return true;
    *ret = api_reply_error(r, MHD_HTTP_UNAUTHORIZED, NULL,
                           secret ? "invalid secret"
                                  : "missing secret: send \"Authorization: Bearer SECRET\"");
    return false;
}

bool api_load_visible_job(api_request *r, store_job *job, enum MHD_Result *ret)
{
    store_status rs = store_job_get(r->d->st, r->job_id, job);
    if (rs == STORE_OK &&
        (r->caller.role == AUTH_ROLE_ADMIN || strcmp(job->owner, r->caller.identity) == 0))
        return true;
    if (rs == STORE_OK)
        store_job_clear(job);
    if (rs == STORE_ERROR)
        *ret = api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    else
        *ret = api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no job %s", r->job_id);
    return false;
}

/* Check the dataset names the spec library accepted once more, here at the
 * edge that turns them into paths under --datasets. */
static bool api_datasets_ok(const job_spec *spec, const char **field, const char **why)
{
    const char *names[3] = {spec->data.train, spec->data.test, spec->data.validation};
    const char *fields[3] = {"data.train", "data.test", "data.validation"};
    for (int i = 0; i < 3; i++) {
        if (names[i] && !spec_dataset_name_ok(names[i], why)) {
            *field = fields[i];
            return false;
        }
    }
    return true;
}

enum MHD_Result api_submit_spec(api_request *r, const char *spec_text, size_t len)
{
    daemon_ctx *d = r->d;
    spec_error err;
    memset(&err, 0, sizeof err);
    job_spec *spec = spec_parse(spec_text, len, &err);
    if (!spec) {
        char msg[600];
        spec_error_str(&err, msg, sizeof msg);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, err.path, "%s", msg);
    }
    const char *field = NULL, *why = NULL;
    if (!api_datasets_ok(spec, &field, &why)) {
        spec_free(spec);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, field, "%s: %s", field,
                               why ? why : "not a valid dataset name");
    }
    int ranks = spec_ranks_needed(spec);
    if (ranks > d->total_slots) {
        spec_free(spec);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "distributed.workers",
                               "distributed.workers: the job needs %d MPI ranks but this "
                               "cluster has %d slots; it could never run",
                               ranks, d->total_slots);
    }
    /* One GPU set per worker; an asynchronous trainer's parameter server
     * (the extra rank) needs none. */
    int gpus = spec->resources.gpus * spec->distributed.workers;
    if (gpus > d->total_gpus) {
        int per_worker = spec->resources.gpus, workers = spec->distributed.workers;
        spec_free(spec);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "resources.gpus",
                               "resources.gpus: the job needs %d GPU%s (%d per worker x %d "
                               "worker%s) but this cluster has %d (--gpus %d on each of %d "
                               "host%s); it could never run",
                               gpus, gpus == 1 ? "" : "s", per_worker, workers,
                               workers == 1 ? "" : "s", d->total_gpus, d->cfg.gpus, d->hosts,
                               d->hosts == 1 ? "" : "s");
    }
    store_new_job nj = {
        .owner = r->caller.identity,
        .name = spec->name ? spec->name : "job",
        .trainer = spec_trainer_name(spec->distributed.trainer),
        .spec = spec_text,
        .priority = spec->resources.priority,
        .ranks = ranks,
        .workers = spec->distributed.workers,
        .threads = spec->resources.threads_per_worker > 0 ? spec->resources.threads_per_worker : 1,
        .time_limit_s = spec->resources.time_limit_s,
        .gpus = gpus,
    };
    char id[STORE_ID_LEN + 1];
    store_status rs = store_job_submit(d->st, &nj, d->cfg.max_queued, 0, id);
    spec_free(spec);
    if (rs == STORE_LIMIT)
        return api_reply_error(r, MHD_HTTP_TOO_MANY_REQUESTS, NULL,
                               "%s already has %d queued jobs (the limit); wait for some to "
                               "start or cancel one",
                               r->caller.identity, d->cfg.max_queued);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "could not store the job; see the server log");
    store_job job;
    int pos = 0;
    if (store_job_get(d->st, id, &job) == STORE_OK) {
        pos = store_queue_position(d->st, &job);
        store_job_clear(&job);
    }
    log_info("job %s (%s): queued, %d ranks, position %d", id, r->caller.identity, ranks, pos);
    daemon_wake();
    json_t *body = json_pack("{s:s, s:s, s:o, s:i}", "id", id, "state", "queued",
                             "queue_position", pos > 0 ? json_integer(pos) : json_null(),
                             "ranks", ranks);
    char *text = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(body);
    struct MHD_Response *resp = NULL;
    if (text) {
        size_t n = strlen(text);
        char *nl = realloc(text, n + 2);
        if (nl) {
            text = nl;
            text[n++] = '\n';
            text[n] = '\0';
        }
        resp = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(text);
    }
    if (resp) {
        char loc[64];
        snprintf(loc, sizeof loc, "/api/v1/jobs/%s", id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
    }
    return api_reply_response(r, MHD_HTTP_CREATED, resp);
}

enum MHD_Result api_cancel_job(api_request *r, store_job *job)
{
    daemon_ctx *d = r->d;
    double now = daemon_now();
    store_status rs = STORE_CONFLICT;
    if (job->state == JOB_QUEUED)
        rs = store_job_cancel_queued(d->st, job->id, now);
    if (rs != STORE_OK && !job_state_is_final(job->state)) {
        /* Running, or started between our read and the update. */
        rs = store_job_request_stop(d->st, job->id, "cancel", now);
        if (rs == STORE_OK)
            daemon_wake();
    }
    if (rs == STORE_CONFLICT || (rs == STORE_OK && job_state_is_final(job->state))) {
        /* Say how it actually ended, which may be after our first read. */
        store_job now_job;
        job_state state = job->state;
        if (store_job_get(d->st, job->id, &now_job) == STORE_OK) {
            state = now_job.state;
            store_job_clear(&now_job);
        }
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL, "job %s already %s", job->id,
                               job_state_name(state));
    }
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    log_info("job %s (%s): cancel requested by %s", job->id, job->owner, r->caller.identity);
    store_job fresh;
    if (store_job_get(d->st, job->id, &fresh) != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    json_t *o = jobview_json(d, &fresh);
    store_job_clear(&fresh);
    return api_reply_json(r, MHD_HTTP_OK, o);
}
