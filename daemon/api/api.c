/* api.c — what more than one handler needs: JSON replies and errors, and
 * the submission of a job spec (the v1 and the seed submit). */
#include "api/api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/admission.h"
#include "api/datasets.h"
#include "api/initfrom.h"
#include "api/sitedata.h"
#include "log.h"
#include "run/quota.h"
#include "jobspec/spec.h"

enum MHD_Result api_reply_response(api_request *r, int status, struct MHD_Response *resp)
{
    if (!resp) {
        r->status = 500;
        return MHD_NO;
    }
    r->status = status;
    if (r->close_connection &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES) {
        MHD_destroy_response(resp);
        r->status = 500;
        return MHD_NO;
    }
    /* RFC 9110 §11.6.1: a 401 names the scheme that would succeed. */
    if (status == MHD_HTTP_UNAUTHORIZED &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"punchcard\"") != MHD_YES) {
        MHD_destroy_response(resp);
        r->status = 500;
        return MHD_NO;
    }
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

char *api_json_text(json_t *body, size_t *len)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(body);
    if (!text)
        return NULL;
    *len = strlen(text);
    char *nl = realloc(text, *len + 2);
    if (nl) {
        text = nl;
        text[(*len)++] = '\n';
        text[*len] = '\0';
    }
    return text;
}

struct MHD_Response *api_text_response(char *text, size_t len)
{
    if (!text)
        return NULL;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    return resp;
}

struct MHD_Response *api_json_response(json_t *body)
{
    size_t len = 0;
    char *text = api_json_text(body, &len);
    return api_text_response(text, len);
}

enum MHD_Result api_reply_json(api_request *r, int status, json_t *body)
{
    struct MHD_Response *resp = api_json_response(body);
    if (!resp)
        log_error("http: cannot encode a %d reply", status);
    return api_reply_response(r, status, resp);
}

enum MHD_Result api_reply_error(api_request *r, int status, const char *field, const char *fmt, ...)
{
    /* Room for a whole spec error (SPEC_ERROR_STR_MAX) and its context: our
     * own messages are never cut. */
    char msg[3072];
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

/* Does s hold a control character: C0 (ESC, BEL, CR, LF...), DEL, or C1
 * (U+0080..U+009F, two bytes in UTF-8)? Such a string would reach logs and
 * other users' terminals as escape sequences. */
static bool api_has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return true;
    return false;
}

/* The JSON path (into path) of the first key or string of v holding a
 * control character; false if there is none. */
static bool api_find_control(const json_t *v, const char *at, char *path, size_t cap)
{
    char sub[200];
    if (json_is_string(v) && api_has_control(json_string_value(v))) {
        snprintf(path, cap, "%s", at[0] ? at : "(top level)");
        return true;
    }
    if (json_is_object(v)) {
        const char *key;
        const json_t *item;
        json_object_foreach((json_t *)v, key, item) {
            snprintf(sub, sizeof sub, "%s%s%s", at, at[0] ? "." : "", key);
            if (api_has_control(key)) {
                snprintf(path, cap, "%s", at[0] ? at : "(top level)");
                return true;
            }
            if (api_find_control(item, sub, path, cap))
                return true;
        }
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
        snprintf(sub, sizeof sub, "%s[%zu]", at, i);
        if (api_find_control(json_array_get(v, i), sub, path, cap))
            return true;
    }
    return false;
}

/* Check the dataset names the spec library accepted once more, here at the
 * edge that turns them into paths under the `datasets` roots, and refuse a
 * site dataset that is not there (a typo would otherwise fail the job only
 * after its wait in the queue). */
static bool api_datasets_ok(const job_spec *spec, const char *roots, const char **field,
                            const char **name, const char **why)
{
    const char *names[3] = {spec->data.train, spec->data.test, spec->data.validation};
    const char *fields[3] = {"data.train", "data.test", "data.validation"};
    for (int i = 0; i < 3; i++) {
        /* "@NAME" is an upload (datasets_resolve_spec checks it). */
        if (!names[i] || names[i][0] == '@')
            continue;
        *field = fields[i];
        *name = names[i];
        if (!spec_dataset_name_ok(names[i], why))
            return false;
        if (!sitedata_may_exist(roots, names[i])) {
            *why = "no such dataset on this server (an upload is named \"@NAME\")";
            return false;
        }
    }
    return true;
}

/* A refusal of a submit: its status, field and message (status 0: none). */
typedef struct api_refusal {
    int status;
    const char *field; /* static, or field_buf */
    char field_buf[200];
    char msg[1024];
} api_refusal;

static bool api_refuse(api_refusal *no, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool api_refuse(api_refusal *no, int status, const char *field, const char *fmt, ...)
{
    no->status = status;
    no->field = field;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(no->msg, sizeof no->msg, fmt, ap);
    va_end(ap);
    return false;
}

/* Could this user's job ever run here: its dataset names, the cluster's
 * slots, GPUs and memory, the site's limits, the user's disk quota. */
static bool api_submit_admit(api_request *r, const job_spec *spec, int ranks, memest *mem,
                             api_refusal *no)
{
    daemon_ctx *d = r->d;
    const char *field = NULL, *name = NULL, *why = NULL;
    if (!api_datasets_ok(spec, d->cfg.datasets, &field, &name, &why))
        return api_refuse(no, MHD_HTTP_BAD_REQUEST, field, "%s: \"%.255s\": %s", field, name,
                          why ? why : "not a valid dataset name");
    char too_big[768];
    memest_job(spec, mem);
    if (!admission_check(d, ranks, spec->resources.gpus, spec->distributed.workers, &field,
                         too_big, sizeof too_big) ||
        !admission_memory(d, mem, &field, too_big, sizeof too_big) ||
        !admission_limits(d, spec, &field, too_big, sizeof too_big))
        return api_refuse(no, MHD_HTTP_BAD_REQUEST, field, "%s", too_big);
    if (d->cfg.user_quota_mb > 0) {
        double used = quota_user_bytes(d, r->caller.identity);
        double quota = (double)d->cfg.user_quota_mb * 1024 * 1024;
        char b[2][32];
        if (used >= quota)
            return api_refuse(no, MHD_HTTP_INSUFFICIENT_STORAGE, NULL,
                              "your jobs' run directories hold %s, at or over your quota of %s "
                              "(user_quota_mb); delete old jobs to submit more",
                              memest_format(used, b[0], sizeof b[0]),
                              memest_format(quota, b[1], sizeof b[1]));
    }
    return true;
}

/* The text the store keeps (heap): the spec as submitted, free of control
 * characters, with "@NAME" uploads and training.init_from resolved to the
 * files the engine reads, compacted (whitespace padding is not kept). */
static char *api_submit_text(api_request *r, const char *spec_text, size_t len,
                             api_refusal *no)
{
    daemon_ctx *d = r->d;
    json_t *doc = json_loadb(spec_text, len, 0, NULL);
    bool control = doc && api_find_control(doc, "", no->field_buf, sizeof no->field_buf);
    json_decref(doc);
    if (control) {
        api_refuse(no, MHD_HTTP_BAD_REQUEST, no->field_buf, "%s: control characters (ESC, BEL, "
                   "CR, LF, DEL, C1...) are not allowed", no->field_buf);
        return NULL;
    }
    char *resolved = NULL, *warm = NULL;
    const char *field = NULL;
    if (datasets_resolve_spec(d->st, d->cfg.data_dir, r->caller.identity, spec_text, len,
                              &resolved, &field, no->msg, sizeof no->msg) < 0 ||
        initfrom_resolve(d, r->caller.identity, resolved ? resolved : spec_text, &warm, &field,
                         no->msg, sizeof no->msg) < 0) {
        free(resolved);
        no->status = MHD_HTTP_BAD_REQUEST;
        no->field = field;
        return NULL;
    }
    if (warm) {
        free(resolved);
        resolved = warm;
        if (initfrom_check(d, resolved, no->msg, sizeof no->msg) != 0) {
            free(resolved);
            no->status = MHD_HTTP_BAD_REQUEST;
            no->field = "training.init_from";
            return NULL;
        }
    }
    const char *text = resolved ? resolved : spec_text;
    doc = json_loadb(text, resolved ? strlen(resolved) : len, 0, NULL);
    char *compact = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!compact && !resolved)
        compact = strndup(spec_text, len);
    if (compact)
        free(resolved);
    return compact ? compact : resolved;
}

/* spec_text: what runs but for data and init_from (an uploaded model
 * already resolved); written: the spec as the user wrote it. */
static enum MHD_Result api_submit_resolved(api_request *r, const char *spec_text, size_t len,
                                           const char *written_text, size_t written_len)
{
    daemon_ctx *d = r->d;
    spec_error err;
    memset(&err, 0, sizeof err);
    job_spec *spec = spec_parse(spec_text, len, &err);
    if (!spec) {
        char msg[SPEC_ERROR_STR_MAX];
        spec_error_str(&err, msg, sizeof msg);
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, err.path, "%s", msg);
    }
    int ranks = spec_ranks_needed(spec);
    memest mem;
    api_refusal no = {0};
    char *text = NULL;
    if (!api_submit_admit(r, spec, ranks, &mem, &no) ||
        !(text = api_submit_text(r, spec_text, len, &no))) {
        spec_free(spec);
        if (!no.status)
            return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
        return api_reply_error(r, no.status, no.field, "%s", no.msg);
    }
    /* Kept as written ("@NAME", 0.2), so GET .../spec gives back text that a
     * new submit accepts; the resolved text is what runs. */
    char *written = strndup(written_text, written_len);
    if (!written) {
        spec_free(spec);
        free(text);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    store_new_job nj = {
        .owner = r->caller.identity,
        .name = spec->name ? spec->name : "job",
        .trainer = spec_trainer_name(spec->distributed.trainer),
        .spec = text,
        .spec_written = written,
        .priority = spec->resources.priority,
        .ranks = ranks,
        .workers = spec->distributed.workers,
        .threads = spec->resources.threads_per_worker > 0 ? spec->resources.threads_per_worker : 1,
        /* A job that asks for no limit runs for the site's longest (under
         * Slurm, for its partition's: a --time past the partition's
         * MaxTime would be refused). */
        .time_limit_s = spec->resources.time_limit_s > 0 || config_slurm(&d->cfg)
                            ? spec->resources.time_limit_s
                            : d->cfg.max_time_limit_s,
        .gpus = spec->resources.gpus * spec->distributed.workers,
        .mem_per_rank = mem.per_rank,
    };
    if (config_slurm(&d->cfg) && atomic_load(&d->slurm_down)) {
        spec_free(spec);
        free(text);
        free(written);
        return api_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                               "Slurm is not reachable (slurmctld down?); the job was not "
                               "accepted, submit it again later");
    }
    char id[STORE_ID_LEN + 1];
    store_status rs = store_job_submit(d->st, &nj, d->cfg.max_queued, 0, id);
    spec_free(spec);
    free(text);
    free(written);
    if (rs == STORE_LIMIT)
        return api_reply_error(r, MHD_HTTP_TOO_MANY_REQUESTS, NULL,
                               "%s already has %d queued jobs (the limit); wait for some to "
                               "start or cancel one",
                               r->caller.identity, d->cfg.max_queued);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "could not store the job; see the server log");
    /* The job is stored: failing to read its place back costs the position,
     * not a 500 (the client would retry and queue it twice). */
    store_job job;
    int pos = 0;
    if (store_job_get(d->st, id, &job) == STORE_OK) {
        pos = store_queue_position(d->st, &job);
        store_job_clear(&job);
    }
    log_info("job %s (%s): queued, %d ranks, position %d", id, r->caller.identity, ranks, pos);
    daemon_wake();
    struct MHD_Response *resp = api_json_response(
        json_pack("{s:s, s:s, s:o, s:i}", "id", id, "state", "queued", "queue_position",
                  pos > 0 ? json_integer(pos) : json_null(), "ranks", ranks));
    if (resp) {
        char loc[64];
        snprintf(loc, sizeof loc, "/api/v1/jobs/%s", id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
    }
    return api_reply_response(r, MHD_HTTP_CREATED, resp);
}

/* "model": "@NAME.onnx" is resolved first: parsing the spec imports it. */
enum MHD_Result api_submit_spec(api_request *r, const char *spec_text, size_t len)
{
    char *resolved = NULL, why[1024];
    if (datasets_resolve_model(r->d->st, r->d->cfg.data_dir, r->caller.identity, spec_text,
                               len, &resolved, why, sizeof why) < 0)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "model", "%s", why);
    enum MHD_Result rc = resolved ? api_submit_resolved(r, resolved, strlen(resolved), spec_text,
                                                        len)
                                  : api_submit_resolved(r, spec_text, len, spec_text, len);
    free(resolved);
    return rc;
}
