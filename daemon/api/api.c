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
#include "jobspec/spec_submit.h"
#include "jobspec/spec_tensors.h"

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
    char retry[16];
    snprintf(retry, sizeof retry, "%d", r->retry_after);
    if (r->retry_after > 0 &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry) != MHD_YES) {
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
    const char *field; /* static */
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

/* The resolver's half of a submit (spec_submit.h): "@NAME" uploads and
 * training.init_from become the files the engine reads, on the tree the
 * spec library parsed once. */
static int api_submit_resolve(void *ctx, json_t *root, spec_refusal *no)
{
    api_request *r = ctx;
    daemon_ctx *d = r->d;
    const char *field = NULL;
    if (datasets_resolve_spec(d->st, d->cfg.data_dir, r->caller.identity, root, &field, no->msg,
                              sizeof no->msg) < 0 ||
        initfrom_resolve(d, r->caller.identity, root, &field, no->msg, sizeof no->msg) < 0) {
        no->field = field;
        return -1;
    }
    return 0;
}

/* A warm start's weights against the model: a missing tensor or a shape
 * mismatch is a 400 at submit, not a failure after the queue. */
static int api_submit_check(void *ctx, const job_spec *spec, const char *text, spec_refusal *no)
{
    (void)ctx, (void)text;
    const char *file = spec->training.init_from_file;
    if (!file || file[0] != '@')
        return 0;
    if (spec_tensors_check_file(spec, file + 1, no->msg, sizeof no->msg) != 0) {
        no->field = "training.init_from";
        return -1;
    }
    return 0;
}

/* The refusal's status, field and message into out (api.h: api_submitted). */
static bool api_submit_refused(api_submitted *out, int status, const char *field,
                               const char *msg)
{
    out->status = status;
    snprintf(out->field, sizeof out->field, "%s", field ? field : "");
    snprintf(out->msg, sizeof out->msg, "%s", msg);
    return false;
}

bool api_submit_job(daemon_ctx *d, const char *owner, const char *spec_text, size_t len,
                    bool dry_run, api_submitted *out)
{
    memset(out, 0, sizeof *out);
    /* The checks below read the caller from a request: the owner's. */
    api_request req = {.d = d};
    snprintf(req.caller.identity, sizeof req.caller.identity, "%s", owner);
    api_request *r = &req;
    spec_error err;
    memset(&err, 0, sizeof err);
    spec_refusal sno;
    spec_resolver res = {r, api_submit_resolve, api_submit_check};
    spec_submission sub;
    /* "model": "@NAME.onnx" is resolved on the text first: parsing the spec
     * imports the graph (an extra JSON read only for a spec holding "@");
     * so is a preset's input from an npz upload's shape. */
    char *model = NULL, why[1024];
    if (datasets_resolve_model(d->st, d->cfg.data_dir, owner, spec_text, len, &model, why,
                               sizeof why) < 0)
        return api_submit_refused(out, MHD_HTTP_BAD_REQUEST, "model", why);
    if (!model && datasets_preset_input(d->st, owner, spec_text, len, &model) < 0)
        return api_submit_refused(out, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    spec_submit_status read = model ? spec_submit_read(model, strlen(model), &res, &sub, &err, &sno)
                                    : spec_submit_read(spec_text, len, &res, &sub, &err, &sno);
    free(model);
    switch (read) {
    case SPEC_SUBMIT_OK:
        break;
    case SPEC_SUBMIT_INVALID: {
        char msg[SPEC_ERROR_STR_MAX];
        spec_error_str(&err, msg, sizeof msg);
        return api_submit_refused(out, MHD_HTTP_BAD_REQUEST, err.path, msg);
    }
    case SPEC_SUBMIT_CONTROL:
    case SPEC_SUBMIT_REFUSED:
        return api_submit_refused(out, MHD_HTTP_BAD_REQUEST, sno.field, sno.msg);
    default:
        return api_submit_refused(out, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    const job_spec *spec = sub.spec;
    int ranks = sub.facts.ranks;
    out->ranks = ranks;
    memest mem;
    api_refusal no = {0};
    if (!api_submit_admit(r, spec, ranks, &mem, &no)) {
        spec_submission_clear(&sub);
        return api_submit_refused(out, no.status, no.field, no.msg);
    }
    if (dry_run) {
        spec_submission_clear(&sub);
        return true;
    }
    /* Kept as written ("@NAME", 0.2), so GET .../spec gives back text that a
     * new submit accepts; the resolved text is what runs. */
    char *written = strndup(spec_text, len);
    if (!written) {
        spec_submission_clear(&sub);
        return api_submit_refused(out, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    store_new_job nj = {
        .owner = owner,
        .name = spec->name ? spec->name : "job",
        .trainer = spec_trainer_name(spec->distributed.trainer),
        .spec = sub.text,
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
        .checkpoint_keep = sub.facts.checkpoint_keep,
        .hparams = sub.hparams,
    };
    if (config_slurm(&d->cfg) && atomic_load(&d->slurm_down)) {
        spec_submission_clear(&sub);
        free(written);
        return api_submit_refused(out, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                                  "Slurm is not reachable (slurmctld down?); the job was not "
                                  "accepted, submit it again later");
    }
    store_status rs = store_job_submit(d->st, &nj, d->cfg.max_queued, 0, out->id);
    spec_submission_clear(&sub);
    free(written);
    if (rs == STORE_LIMIT) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s already has %d queued jobs (the limit); wait for some to "
                 "start or cancel one", owner, d->cfg.max_queued);
        return api_submit_refused(out, MHD_HTTP_TOO_MANY_REQUESTS, NULL, msg);
    }
    if (rs != STORE_OK)
        return api_submit_refused(out, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                  "could not store the job; see the server log");
    /* The job is stored: failing to read its place back costs the position,
     * not a 500 (the client would retry and queue it twice). */
    store_job job;
    if (store_job_get(d->st, out->id, &job) == STORE_OK) {
        out->position = store_queue_position(d->st, &job);
        store_job_clear(&job);
    }
    log_info("job %s (%s): queued, %d ranks, position %d", out->id, owner, ranks, out->position);
    daemon_wake();
    return true;
}

enum MHD_Result api_submit_spec(api_request *r, const char *spec_text, size_t len)
{
    api_submitted *sub = malloc(sizeof *sub);
    if (!sub)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    if (!api_submit_job(r->d, r->caller.identity, spec_text, len, false, sub)) {
        enum MHD_Result ret = api_reply_error(r, sub->status, sub->field, "%s", sub->msg);
        free(sub);
        return ret;
    }
    int pos = sub->position;
    struct MHD_Response *resp = api_json_response(
        json_pack("{s:s, s:s, s:o, s:i}", "id", sub->id, "state", "queued", "queue_position",
                  pos > 0 ? json_integer(pos) : json_null(), "ranks", sub->ranks));
    if (resp) {
        char loc[64];
        snprintf(loc, sizeof loc, "/api/v1/jobs/%s", sub->id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
    }
    free(sub);
    return api_reply_response(r, MHD_HTTP_CREATED, resp);
}
