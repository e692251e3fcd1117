/* api_jobs.c — the main API: /healthz, /metrics and /api/v1/jobs[/{id}[/...]]. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "jobview.h"
#include "rundir.h"

enum MHD_Result api_healthz(api_request *r)
{
    return api_reply_json(r, MHD_HTTP_OK,
                          json_pack("{s:s, s:s}", "status", "ok", "version", DAEMON_VERSION));
}

enum MHD_Result api_metrics(api_request *r)
{
    size_t len = 0;
    char *text = metrics_render(r->d->st, &len);
    if (!text)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot render metrics");
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text);
    else
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "text/plain; version=0.0.4; charset=utf-8");
    return api_reply_response(r, MHD_HTTP_OK, resp);
}

enum MHD_Result api_jobs_submit(api_request *r)
{
    enum MHD_Result ret;
    if (!api_authenticate(r, NULL, &ret))
        return ret;
    return api_submit_spec(r, r->body, r->body_len);
}

typedef struct list_ctx {
    daemon_ctx *d;
    json_t *jobs;
} list_ctx;

static bool api_list_add(const store_job *job, void *arg)
{
    list_ctx *l = arg;
    json_array_append_new(l->jobs, jobview_json(l->d, job));
    return true;
}

enum MHD_Result api_jobs_list(api_request *r)
{
    enum MHD_Result ret;
    if (!api_authenticate(r, NULL, &ret))
        return ret;
    int state = -1;
    const char *want = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "state");
    if (want && want[0]) {
        job_state js;
        if (!job_state_parse(want, &js))
            return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "state",
                                   "state: unknown state \"%.40s\"; expected one of queued, "
                                   "starting, running, succeeded, failed, cancelled, timeout",
                                   want);
        state = (int)js;
    }
    list_ctx l = {r->d, json_array()};
    const char *owner = r->caller.role == AUTH_ROLE_ADMIN ? NULL : r->caller.identity;
    if (store_job_list(r->d->st, owner, state, api_list_add, &l) != STORE_OK) {
        json_decref(l.jobs);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    return api_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "jobs", l.jobs));
}

enum MHD_Result api_job_get(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_authenticate(r, NULL, &ret) || !api_load_visible_job(r, &job, &ret))
        return ret;
    json_t *o = jobview_json(r->d, &job);
    store_job_clear(&job);
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_job_cancel(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_authenticate(r, NULL, &ret) || !api_load_visible_job(r, &job, &ret))
        return ret;
    ret = api_cancel_job(r, &job);
    store_job_clear(&job);
    return ret;
}

/* Serve a run-directory file of a visible job, or 404 when it does not exist
 * yet. `disposition` adds a Content-Disposition (downloads). */
static enum MHD_Result api_serve_file(api_request *r, const char *file, const char *type,
                                      const char *disposition, const char *what)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_authenticate(r, NULL, &ret) || !api_load_visible_job(r, &job, &ret))
        return ret;
    store_job_clear(&job);
    char path[4096];
    if (!rundir_path(path, sizeof path, r->d->cfg.data_dir, r->job_id, file))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "job %s has no %s yet", r->job_id,
                               what);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot serve %s", what);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (disposition)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
    return api_reply_response(r, MHD_HTTP_OK, resp);
}

enum MHD_Result api_job_history(api_request *r)
{
    return api_serve_file(r, "history.json", "application/json", NULL, "history");
}

enum MHD_Result api_job_weights(api_request *r)
{
    const char *format = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "format");
    if (!format || !format[0])
        format = "safetensors";
    if (strcmp(format, "safetensors") != 0 && strcmp(format, "npz") != 0) {
        enum MHD_Result ret;
        if (!api_authenticate(r, NULL, &ret))
            return ret;
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "format",
                               "format: expected safetensors or npz, got \"%.40s\"", format);
    }
    char file[32], disposition[96];
    snprintf(file, sizeof file, "weights.%s", format);
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s-weights.%s\"",
             r->job_id, format);
    return api_serve_file(r, file, "application/octet-stream", disposition, "weights");
}

enum MHD_Result api_job_logs(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_authenticate(r, NULL, &ret) || !api_load_visible_job(r, &job, &ret))
        return ret;
    job_state state = job.state;
    store_job_clear(&job);
    const char *off_s = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "offset");
    long long offset = 0;
    if (off_s && off_s[0]) {
        char *end;
        errno = 0;
        offset = strtoll(off_s, &end, 10);
        if (errno || *end || offset < 0)
            return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "offset",
                                   "offset: expected a byte offset >= 0, got \"%.40s\"", off_s);
    }
    char path[4096];
    if (!rundir_path(path, sizeof path, r->d->cfg.data_dir, r->job_id, "train.log"))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    long long size = 0;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        size = (long long)st.st_size;
    /* At most 4 MiB per answer: a follower asks again from X-Log-Offset. */
    long long count = offset < size ? size - offset : 0;
    if (count > (4LL << 20))
        count = 4LL << 20;
    struct MHD_Response *resp;
    if (count > 0) {
        resp = MHD_create_response_from_fd_at_offset64((uint64_t)count, fd, (uint64_t)offset);
        if (!resp)
            close(fd);
    } else {
        if (fd >= 0)
            close(fd);
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!resp)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot serve the log");
    char next[32];
    snprintf(next, sizeof next, "%lld", offset + count);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    MHD_add_response_header(resp, "X-Log-Offset", next);
    MHD_add_response_header(resp, "X-Job-State", job_state_name(state));
    return api_reply_response(r, MHD_HTTP_OK, resp);
}

static bool api_event_add(double at, const char *from, const char *to, const char *detail,
                          void *arg)
{
    json_t *e = json_object();
    json_object_set_new(e, "at", json_real(at));
    json_object_set_new(e, "from", from ? json_string(from) : json_null());
    json_object_set_new(e, "to", json_string(to ? to : ""));
    json_object_set_new(e, "detail", detail ? json_string(detail) : json_null());
    json_array_append_new(arg, e);
    return true;
}

enum MHD_Result api_job_events(api_request *r)
{
    enum MHD_Result ret;
    store_job job;
    if (!api_authenticate(r, NULL, &ret) || !api_load_visible_job(r, &job, &ret))
        return ret;
    store_job_clear(&job);
    json_t *events = json_array();
    if (store_job_events(r->d->st, r->job_id, api_event_add, events) != STORE_OK) {
        json_decref(events);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    return api_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "events", events));
}
