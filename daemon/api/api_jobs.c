/* api_jobs.c — the main API: /healthz, /metrics, /api/v1/whoami and
 * /api/v1/jobs[/{id}[/...]].
 * The seed's /api/state and /api/cancel reuse the job handlers. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "api/jobview.h"
#include "sweep/sweep.h"
#include "log.h"
#include "api/pagecache.h"
#include "run/quota.h"
#include "run/rundir.h"

/* "ok", or "degraded" with the reason while the data dir's file system has
 * less than disk_min_free_pct free (new jobs would soon fail to write). The
 * status code stays 200: the server answers and accepts work. */
enum MHD_Result api_healthz(api_request *r)
{
    const config *c = &r->d->cfg;
    double free_b = 0, total_b = 0;
    char why[200] = "";
    if (!quota_fs_space(c->data_dir, &free_b, &total_b))
        snprintf(why, sizeof why, "cannot tell the data dir's free space");
    else if (total_b > 0 && free_b * 100 < total_b * c->disk_min_free_pct)
        snprintf(why, sizeof why, "data dir's file system is %.1f%% free (below %d%%)",
                 100 * free_b / total_b, c->disk_min_free_pct);
    json_t *o = json_pack("{s:s, s:s}", "status", why[0] ? "degraded" : "ok", "version",
                          DAEMON_VERSION);
    if (o && why[0])
        json_object_set_new(o, "reason", json_string(why));
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_cluster(api_request *r)
{
    json_t *view = cluster_json(r->d->cl);
    if (!view)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return api_reply_json(r, MHD_HTTP_OK, view);
}

/* Who the secret names, so a client (the dashboard) shows the name and
 * offers admin views without probing an admin route and meeting a 403. */
enum MHD_Result api_whoami(api_request *r)
{
    return api_reply_json(r, MHD_HTTP_OK,
                          json_pack("{s:s, s:s}", "identity", r->caller.identity, "role",
                                    r->caller.role == AUTH_ROLE_ADMIN ? "admin" : "user"));
}

enum MHD_Result api_metrics(api_request *r)
{
    size_t len = 0;
    char *text = metrics_render(r->d->st, &len);
    if (!text)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot render metrics");
    if (r->engines && !api_engine_metrics(r->engines, &text, &len)) {
        free(text);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot render metrics");
    }
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
    return api_submit_spec(r, r->body, r->body_len);
}

/* Listing: pages of at most API_LIST_MAX jobs, API_LIST_DEFAULT unless
 * asked, so one request's cost is bounded whatever the store holds. */
enum { API_LIST_DEFAULT = 100, API_LIST_MAX = 1000 };

/* A cursor is the seq of the last job of a page, as "p" + hex: opaque to
 * clients (openapi.yaml), stable under concurrent submits because newer
 * jobs only ever get larger seqs. */
static void api_cursor_format(char *buf, size_t len, int64_t seq)
{
    snprintf(buf, len, "p%llx", (unsigned long long)seq);
}

static bool api_cursor_parse(const char *text, int64_t *seq)
{
    if (text[0] != 'p' || !text[1] || strlen(text) > 17)
        return false;
    unsigned long long v = 0;
    for (const char *p = text + 1; *p; p++) {
        int digit = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (digit < 0)
            return false;
        v = v * 16 + (unsigned)digit;
    }
    if (v == 0 || v > INT64_MAX)
        return false;
    *seq = (int64_t)v;
    return true;
}

static const char *api_arg(api_request *r, const char *name)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
    return v && v[0] ? v : NULL;
}

/* state=S or S,S,...: one state is an index range (q->state), several are
 * merged ranges (q->states); an unknown one is a 400 naming it. */
static bool api_list_states(api_request *r, const char *v, store_page_query *q,
                            enum MHD_Result *replied)
{
    unsigned mask = 0;
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        char name[16] = "";
        job_state js;
        if (n < sizeof name)
            memcpy(name, p, n);
        if (n == 0 || n >= sizeof name || !job_state_parse(name, &js)) {
            *replied = api_reply_error(r, MHD_HTTP_BAD_REQUEST, "state",
                                       "state: unknown state \"%.*s\"; expected one or a comma "
                                       "list of queued, starting, running, succeeded, failed, "
                                       "cancelled, timeout",
                                       (int)(n > 40 ? 40 : n), p);
            return false;
        }
        mask |= 1u << (unsigned)js;
        p += n + (p[n] == ',');
    }
    for (int js = 0; js < JOB_STATE_COUNT; js++)
        if (mask == 1u << (unsigned)js)
            q->state = js;
    if (q->state < 0)
        q->states = mask;
    return true;
}

/* The longest name=PATTERN: a GLOB's cost grows with its length. */
enum { API_NAME_PATTERN_MAX = 128, API_NAME_GLOB_MAX = API_NAME_PATTERN_MAX + 3 };

/* name=PATTERN as `punch list --name` means it: a shell glob of the whole
 * name when it has *, ? or [ ("[!...]" negating as in fnmatch), else a
 * substring; as a GLOB in *buf (case-sensitive, as both are). */
static bool api_list_name(api_request *r, const char *v, char buf[API_NAME_GLOB_MAX],
                          store_page_query *q, enum MHD_Result *replied)
{
    size_t n = strlen(v);
    if (n > API_NAME_PATTERN_MAX) {
        *replied = api_reply_error(r, MHD_HTTP_BAD_REQUEST, "name",
                                   "name: a pattern of at most %d bytes, got %zu",
                                   API_NAME_PATTERN_MAX, n);
        return false;
    }
    if (!strpbrk(v, "*?[")) {
        snprintf(buf, API_NAME_GLOB_MAX, "*%s*", v);
    } else {
        snprintf(buf, API_NAME_GLOB_MAX, "%s", v);
        for (char *b = buf; (b = strchr(b, '[')) != NULL; b++)
            if (b[1] == '!')
                b[1] = '^';
    }
    q->name_glob = buf;
    return true;
}

/* The page the query string asks for, or an error reply already sent
 * (*replied set). */
static bool api_list_query(api_request *r, store_page_query *q, char glob[API_NAME_GLOB_MAX],
                           enum MHD_Result *replied)
{
    *q = (store_page_query){.owner = r->caller.identity, .state = -1, .since = NAN,
                            .limit = API_LIST_DEFAULT, .owner_active = jobview_needs_active(r->d)};
    const char *v;
    if ((v = api_arg(r, "state")) && !api_list_states(r, v, q, replied))
        return false;
    if ((v = api_arg(r, "name")) && !api_list_name(r, v, glob, q, replied))
        return false;
    if ((v = api_arg(r, "limit"))) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < 1 || n > API_LIST_MAX) {
            *replied = api_reply_error(r, MHD_HTTP_BAD_REQUEST, "limit",
                                       "limit: expected a number of jobs from 1 to %d, got "
                                       "\"%.40s\"",
                                       API_LIST_MAX, v);
            return false;
        }
        q->limit = (int)n;
    }
    if ((v = api_arg(r, "after")) && !api_cursor_parse(v, &q->before)) {
        *replied = api_reply_error(r, MHD_HTTP_BAD_REQUEST, "after",
                                   "after: \"%.40s\" is not a cursor; pass the \"next\" of the "
                                   "previous page",
                                   v);
        return false;
    }
    if ((v = api_arg(r, "since"))) {
        char *end;
        errno = 0;
        q->since = strtod(v, &end);
        if (errno || *end || !isfinite(q->since)) {
            *replied = api_reply_error(r, MHD_HTTP_BAD_REQUEST, "since",
                                       "since: expected a time in UNIX seconds, got \"%.40s\"",
                                       v);
            return false;
        }
    }
    bool admin = r->caller.role == AUTH_ROLE_ADMIN;
    if ((v = api_arg(r, "user"))) {
        if (!admin && strcmp(v, r->caller.identity) != 0) {
            *replied = api_reply_error(r, MHD_HTTP_FORBIDDEN, "user",
                                       "user: only an admin may list another user's jobs");
            return false;
        }
        q->owner = v;
    } else if (admin) {
        q->owner = NULL;
    }
    return true;
}

/* The page cache's key of q: every part of the query that decides the
 * reply (the caller only through q's owner); false when it is too long to
 * be kept. */
static bool api_list_key(const store_page_query *q, char key[PAGECACHE_KEY_MAX])
{
    int n = snprintf(key, PAGECACHE_KEY_MAX, "%d|%x|%lld|%.17g|%d|%s%s|%s%s", q->state,
                     q->states, (long long)q->before, q->since, q->limit, q->owner ? "=" : "*",
                     q->owner ? q->owner : "", q->name_glob ? "~" : "",
                     q->name_glob ? q->name_glob : "");
    return n > 0 && n < PAGECACHE_KEY_MAX;
}

enum MHD_Result api_jobs_list(api_request *r)
{
    store_page_query q;
    enum MHD_Result replied;
    char glob[API_NAME_GLOB_MAX];
    if (!api_list_query(r, &q, glob, &replied))
        return replied;
    pagecache *pc = r->d->pages;
    char key[PAGECACHE_KEY_MAX];
    bool keyed = pc && api_list_key(&q, key);
    uint64_t writes = store_writes(r->d->st); /* before the read: see pagecache_put */
    size_t len = 0;
    char *text = keyed ? pagecache_get(pc, key, writes, &len) : NULL;
    if (text)
        return api_reply_response(r, MHD_HTTP_OK, api_text_response(text, len));
    store_page page;
    if (store_job_page(r->d->st, &q, &page) != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    json_t *jobs = json_array();
    for (size_t i = 0; i < page.n; i++) {
        const store_job *job = &page.jobs[i];
        int active = q.owner_active ? store_page_owner_active(&page, job->owner) : 0;
        json_array_append_new(jobs, jobview_json_with(r->d, job, page.queue_position[i], active));
        /* Its progress comes from the run directory, not the store. */
        keyed = keyed && job->state != JOB_STARTING && job->state != JOB_RUNNING;
    }
    /* A sweep's trials carry its id and their params (one statement). */
    if (!sweep_page_fields(r->d, jobs)) {
        store_page_clear(&page);
        json_decref(jobs);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    json_t *next = json_null();
    if (page.more) {
        char cursor[24];
        api_cursor_format(cursor, sizeof cursor, page.jobs[page.n - 1].seq);
        next = json_string(cursor);
    }
    size_t n = page.n;
    store_page_clear(&page);
    text = api_json_text(json_pack("{s:o, s:o}", "jobs", jobs, "next", next), &len);
    if (text && keyed)
        pagecache_put(pc, key, writes, text, len);
    if (!text)
        log_error("http: cannot encode a page of %zu jobs", n);
    return api_reply_response(r, MHD_HTTP_OK, api_text_response(text, len));
}

/* The reply for a job: its view, or 500 when building it needed the store
 * and the store failed. */
static enum MHD_Result api_reply_job(api_request *r, const store_job *job)
{
    json_t *o = jobview_json(r->d, job);
    if (!o)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_job_get(api_request *r)
{
    json_t *o = jobview_json(r->d, r->job);
    if (!o || !sweep_job_fields(r->d, r->job->id, o)) {
        json_decref(o);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_job_cancel(api_request *r)
{
    daemon_ctx *d = r->d;
    const store_job *job = r->job;
    double now = daemon_now();
    store_status rs = STORE_CONFLICT;
    if (job->state == JOB_QUEUED)
        rs = store_job_cancel_queued(d->st, job->id, now);
    if (rs == STORE_CONFLICT && !job_state_is_final(job->state)) {
        /* Running, or started between our read and the update (a store
         * error is not a conflict: it stays a 500). */
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
    enum MHD_Result ret = api_reply_job(r, &fresh);
    store_job_clear(&fresh);
    return ret;
}

/* Forget finished job r->job: its row and events, then its run directory
 * (its uploads are the owner's and stay). The bytes freed are measured
 * before anything goes, so the answer says what the removal gave back. */
static enum MHD_Result api_job_forget(api_request *r)
{
    const store_job *job = r->job;
    char dir[4096];
    if (!rundir_path(dir, sizeof dir, r->d->cfg.data_dir, job->id, NULL))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    double bytes = job->files_removed ? 0 : quota_dir_bytes(dir);
    store_status rs = store_job_delete_finished(r->d->st, job->id);
    if (rs == STORE_NOT_FOUND)
        return api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no job %s", job->id);
    if (rs == STORE_CONFLICT)
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job %s was queued again; cancel it before deleting it", job->id);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    if (!job->files_removed && !rundir_remove(dir))
        log_warn("job %s: could not remove its run directory %s", job->id, dir);
    log_info("job %s (%s): deleted by %s, %.0f bytes freed", job->id, job->owner,
             r->caller.identity, bytes);
    json_t *o = json_pack("{s:s, s:b, s:f}", "id", job->id, "deleted", 1, "bytes_freed", bytes);
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_job_delete(api_request *r)
{
    if (job_state_is_final(r->job->state))
        return api_job_forget(r);
    return api_job_cancel(r);
}

/* Serve a run-directory file of r->job, or 404 when it does not exist yet.
 * `disposition` adds a Content-Disposition (downloads). */
static enum MHD_Result api_serve_file(api_request *r, const char *file, const char *type,
                                      const char *disposition, const char *what)
{
    if (r->job->files_removed)
        return api_reply_files_removed(r);
    char path[4096];
    if (!rundir_path(path, sizeof path, r->d->cfg.data_dir, r->job->id, file))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return job_state_is_final(r->job->state)
                   ? api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "job %s has no %s (it ended %s)",
                                     r->job->id, what, job_state_name(r->job->state))
                   : api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "job %s has no %s yet",
                                     r->job->id, what);
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
    if (strcmp(format, "safetensors") != 0 && strcmp(format, "npz") != 0)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "format",
                               "format: expected safetensors or npz, got \"%.40s\"", format);
    char file[32], disposition[96];
    snprintf(file, sizeof file, "weights.%s", format);
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s-weights.%s\"",
             r->job->id, format);
    return api_serve_file(r, file, "application/octet-stream", disposition, "weights");
}

enum MHD_Result api_job_logs(api_request *r)
{
    if (r->job->files_removed)
        return api_reply_files_removed(r);
    job_state state = r->job->state;
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
    if (!rundir_path(path, sizeof path, r->d->cfg.data_dir, r->job->id, "train.log"))
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
    json_t *events = json_array();
    if (store_job_events(r->d->st, r->job->id, api_event_add, events) != STORE_OK) {
        json_decref(events);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    return api_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "events", events));
}

enum MHD_Result api_job_spec(api_request *r)
{
    const char *resolved = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "resolved");
    bool want_resolved = resolved && strcmp(resolved, "0") != 0;
    char *spec = NULL;
    store_status rs = want_resolved ? store_job_spec(r->d->st, r->job->id, &spec)
                                    : store_job_spec_written(r->d->st, r->job->id, &spec);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(spec), spec, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(spec);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    return api_reply_response(r, MHD_HTTP_OK, resp);
}
