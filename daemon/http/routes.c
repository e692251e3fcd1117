/* routes.c — the route table and its dispatcher. Each handler states in the
 * table whether it needs a caller and a job; the dispatcher authenticates,
 * loads the job and checks that the caller may see it, so no handler repeats
 * those steps or can forget one. */
#include "http/routes.h"

#include "api/events.h"
#include "ui/ui.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef enum routes_auth {
    ROUTES_PUBLIC,
    ROUTES_CALLER,          /* secret in "Authorization: Bearer" or ?secret= */
    ROUTES_CALLER_OR_BODY,  /* also a "secret" field of a JSON body (the seed's submit) */
    ROUTES_ADMIN,           /* a caller with role "admin"; others get 403 (the route's
                               existence is no secret, unlike another user's job) */
} routes_auth;

typedef enum routes_job {
    ROUTES_NO_JOB,
    ROUTES_PATH_JOB,        /* the {id} of the path, if the caller owns it or is admin */
    ROUTES_CURRENT_JOB,     /* the caller's most recent job (the seed API) */
} routes_job;

typedef struct routes_entry {
    const char *method;     /* "GET" also answers HEAD */
    const char *pattern;    /* "{id}" matches a job id, "{name}" one path segment */
    enum MHD_Result (*handler)(api_request *r);
    routes_auth needs_auth;
    routes_job needs_job;
    metrics_route metric;
} routes_entry;

/* Entries with the same pattern are adjacent, GET first: their methods, in
 * this order, are a 405's Allow header. */
static const routes_entry routes_table[] = {
    {"GET", "/healthz", api_healthz, ROUTES_PUBLIC, ROUTES_NO_JOB, ROUTE_HEALTHZ},
    {"GET", "/metrics", api_metrics, ROUTES_PUBLIC, ROUTES_NO_JOB, ROUTE_METRICS},
    {"GET", "/api/v1/jobs", api_jobs_list, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_JOBS_LIST},
    {"POST", "/api/v1/jobs", api_jobs_submit, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_JOBS_SUBMIT},
    {"GET", "/api/v1/jobs/{id}", api_job_get, ROUTES_CALLER, ROUTES_PATH_JOB, ROUTE_JOB_GET},
    {"DELETE", "/api/v1/jobs/{id}", api_job_delete, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_DELETE},
    {"POST", "/api/v1/jobs/{id}/cancel", api_job_cancel, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_CANCEL},
    {"GET", "/api/v1/jobs/{id}/history", api_job_history, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_HISTORY},
    {"GET", "/api/v1/jobs/{id}/weights", api_job_weights, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_WEIGHTS},
    {"GET", "/api/v1/jobs/{id}/logs", api_job_logs, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_LOGS},
    {"GET", "/api/v1/jobs/{id}/events", api_job_events, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_EVENTS},
    {"POST", "/api/v1/jobs/{id}/resume", api_job_resume, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_RESUME},
    {"POST", "/api/v1/jobs/{id}/predict", api_job_predict, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_PREDICT},
    {"GET", "/api/v1/jobs/{id}/export", api_job_export, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_EXPORT},
    {"POST", "/api/v1/jobs/{id}/generate", api_job_generate, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_GENERATE},
    {"GET", "/api/v1/jobs/{id}/files", api_job_files, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_FILES},
    {"GET", "/api/v1/jobs/{id}/files/{path}", api_job_file, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_FILE},
    {"GET", "/api/v1/cluster", api_cluster, ROUTES_ADMIN, ROUTES_NO_JOB, ROUTE_CLUSTER},
    {"GET", "/api/v1/whoami", api_whoami, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_OTHER},
    {"POST", "/api/submit", api_seed_submit, ROUTES_CALLER_OR_BODY, ROUTES_NO_JOB,
     ROUTE_SEED_SUBMIT},
    {"GET", "/api/state", api_seed_state, ROUTES_CALLER, ROUTES_CURRENT_JOB, ROUTE_SEED_STATE},
    {"GET", "/api/cancel", api_seed_cancel, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_SEED_CANCEL},
    {"POST", "/api/cancel", api_seed_cancel, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_SEED_CANCEL},
    {"GET", "/api/destroy", api_seed_destroy, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_SEED_DESTROY},
    {"POST", "/api/destroy", api_seed_destroy, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_SEED_DESTROY},
    {"GET", "/api/v1/datasets", api_datasets_list, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_DATASETS_LIST},
    {"GET", "/api/v1/datasets/{name}", api_dataset_get, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_DATASET_GET},
    {"PUT", "/api/v1/datasets/{name}", api_dataset_put, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_DATASET_PUT},
    {"DELETE", "/api/v1/datasets/{name}", api_dataset_delete, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_DATASET_DELETE},
    {"GET", "/api/v1/jobs/{id}/spec", api_job_spec, ROUTES_CALLER, ROUTES_PATH_JOB,
     ROUTE_JOB_SPEC},
    {"GET", "/api/v1/events", events_stream, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_EVENT_STREAM},
    {"GET", "/api/v1/sweeps", api_sweeps_list, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_OTHER},
    {"POST", "/api/v1/sweeps", api_sweeps_submit, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_OTHER},
    {"GET", "/api/v1/sweeps/{name}", api_sweep_get, ROUTES_CALLER, ROUTES_NO_JOB, ROUTE_OTHER},
    {"DELETE", "/api/v1/sweeps/{name}", api_sweep_cancel, ROUTES_CALLER, ROUTES_NO_JOB,
     ROUTE_OTHER},
    {"GET", "/", ui_serve, ROUTES_PUBLIC, ROUTES_NO_JOB, ROUTE_UI},
    {"GET", "/ui/", ui_serve, ROUTES_PUBLIC, ROUTES_NO_JOB, ROUTE_UI},
    {"GET", "/ui/app.js", ui_serve, ROUTES_PUBLIC, ROUTES_NO_JOB, ROUTE_UI},
    {"GET", "/ui/app.css", ui_serve, ROUTES_PUBLIC, ROUTES_NO_JOB, ROUTE_UI},
};
#define ROUTES_COUNT (sizeof routes_table / sizeof routes_table[0])

/* The shortest id prefix a user may type instead of a job's whole id
 * (routes_short_id resolves it). */
#define ROUTES_MIN_ID_PREFIX 4

static bool routes_is_job_id(const char *s, size_t n)
{
    if (n < ROUTES_MIN_ID_PREFIX || n > STORE_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Routes whose body is streamed to a file as it arrives instead of
 * buffered under max_body, and the function that opens the stream. */
typedef struct routes_stream_entry {
    const char *method;
    const char *pattern;
    api_stream *(*open)(api_request *r);
} routes_stream_entry;

static const routes_stream_entry routes_streams[] = {
    {"PUT", "/api/v1/datasets/{name}", api_datasets_stream_open},
    {"POST", "/api/v1/jobs/{id}/predict", api_predict_stream_open},
};

#define ROUTES_NAME_MAX 255
#define ROUTES_PATH_MAX 1023

/* Does path match pattern? A "{id}" takes one segment that is a job id,
 * copied to id_buf; a "{name}" any non-empty segment of up to
 * ROUTES_NAME_MAX bytes, a "{path}" (last in a pattern) the non-empty rest
 * of the path up to ROUTES_PATH_MAX bytes, slashes included (their
 * handlers check them), copied to name_buf. */
static bool routes_match(const char *pattern, const char *path, char id_buf[STORE_ID_LEN + 1],
                         char name_buf[ROUTES_PATH_MAX + 1])
{
    static const char param[] = "{id}", name_param[] = "{name}", path_param[] = "{path}";
    while (*pattern) {
        bool rest = strncmp(pattern, path_param, sizeof path_param - 1) == 0;
        if (rest || strncmp(pattern, name_param, sizeof name_param - 1) == 0) {
            size_t n = rest ? strlen(path) : strcspn(path, "/");
            if (n == 0 || n > (rest ? ROUTES_PATH_MAX : ROUTES_NAME_MAX))
                return false;
            memcpy(name_buf, path, n);
            name_buf[n] = '\0';
            pattern += rest ? sizeof path_param - 1 : sizeof name_param - 1;
            path += n;
        } else if (strncmp(pattern, param, sizeof param - 1) == 0) {
            size_t n = strcspn(path, "/");
            if (!routes_is_job_id(path, n))
                return false;
            memcpy(id_buf, path, n);
            id_buf[n] = '\0';
            pattern += sizeof param - 1;
            path += n;
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return *path == '\0';
}

static bool routes_method_is(const char *m, const char *want)
{
    return strcmp(m, want) == 0 || (strcmp(want, "GET") == 0 && strcmp(m, "HEAD") == 0);
}

/* The 405 for a path whose routes take other methods: the same error body
 * as every other, and Allow listing those methods. */
static enum MHD_Result routes_reply_405(api_request *r, const char *pattern)
{
    char allow[64] = "";
    size_t used = 0;
    for (size_t i = 0; i < ROUTES_COUNT; i++) {
        if (strcmp(routes_table[i].pattern, pattern) != 0)
            continue;
        const char *m = routes_table[i].method;
        int n = snprintf(allow + used, sizeof allow - used, "%s%s%s", used ? ", " : "", m,
                         strcmp(m, "GET") == 0 ? ", HEAD" : "");
        if (n > 0 && (size_t)n < sizeof allow - used)
            used += (size_t)n;
    }
    struct MHD_Response *resp =
        api_json_response(json_pack("{s:s, s:n}", "error", "method not allowed", "field"));
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    return api_reply_response(r, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
}

/* The bearer token of an Authorization header, or NULL. */
static const char *routes_bearer(const char *h)
{
    if (!h || strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t'))
        return NULL;
    h += 6;
    while (*h == ' ' || *h == '\t')
        h++;
    return *h ? h : NULL;
}

/* Identify the caller from "Authorization: Bearer", ?secret= or, for
 * ROUTES_CALLER_OR_BODY, a "secret" field of the JSON body, in that order.
 * On failure the 401 is queued in *ret. */
static bool routes_authenticate(api_request *r, routes_auth how, enum MHD_Result *ret)
{
    const char *secret = routes_bearer(
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
    if (!secret)
        secret = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "secret");
    json_t *body = NULL;
    if (!secret && how == ROUTES_CALLER_OR_BODY) {
        body = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, NULL);
        secret = json_string_value(json_object_get(body, "secret"));
    }
    bool ok = secret && auth_identify(r->d->au, secret, strlen(secret), &r->caller);
    const char *header =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!ok && !secret && header)
        *ret = api_reply_error(r, MHD_HTTP_UNAUTHORIZED, NULL,
                               "the Authorization header is not \"Bearer SECRET\" (it needs "
                               "the word Bearer before the secret)");
    else if (!ok)
        *ret = api_reply_error(r, MHD_HTTP_UNAUTHORIZED, NULL,
                               secret ? "invalid secret"
                                      : "missing secret: send \"Authorization: Bearer SECRET\"");
    json_decref(body);
    return ok;
}

/* r->job_id is not a job: is it the start of exactly one the caller may
 * see (theirs; any for an admin)? Then r->job_id becomes that job's whole
 * id (the buffer holds STORE_ID_LEN + 1) and the answer is true. Several:
 * the 409 naming them is queued in *ret. None, or not an id's start:
 * false with *ret MHD_NO, and the caller's 404 follows. */
static bool routes_short_id(api_request *r, enum MHD_Result *ret, store_status *rs)
{
    *ret = MHD_NO;
    size_t n = strlen(r->job_id);
    if (n < ROUTES_MIN_ID_PREFIX || n >= STORE_ID_LEN ||
        strspn(r->job_id, "0123456789abcdef") != n)
        return false;
    char ids[4][STORE_ID_LEN + 1];
    int found = 0;
    const char *owner = r->caller.role == AUTH_ROLE_ADMIN ? NULL : r->caller.identity;
    if (store_job_ids_by_prefix(r->d->st, owner, r->job_id, ids, 4, &found) != STORE_OK) {
        *rs = STORE_ERROR;
        return false;
    }
    if (found == 1) {
        memcpy((char *)r->job_id, ids[0], STORE_ID_LEN + 1);
        return true;
    }
    if (found > 1)
        *ret = api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job id %s is ambiguous: it starts %s, %s%s%s%s; give more of "
                               "the id", r->job_id, ids[0], ids[1], found > 2 ? ", " : "",
                               found > 2 ? ids[2] : "", found > 3 ? " and more" : "");
    return false;
}

/* Load the job the route acts on into *job. On failure the 404 (no such job,
 * or one the caller may not see) or 500 is queued in *ret. */
static bool routes_load_job(api_request *r, routes_job which, store_job *job,
                            enum MHD_Result *ret)
{
    if (which == ROUTES_CURRENT_JOB) {
        store_status rs = store_job_latest(r->d->st, r->caller.identity, job);
        if (rs == STORE_OK)
            return true;
        *ret = rs == STORE_NOT_FOUND
                   ? api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "%s has no job",
                                     r->caller.identity)
                   : api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
        return false;
    }
    store_status rs = store_job_get(r->d->st, r->job_id, job);
    if (rs == STORE_NOT_FOUND && routes_short_id(r, ret, &rs))
        rs = store_job_get(r->d->st, r->job_id, job);
    else if (rs == STORE_NOT_FOUND && *ret != MHD_NO)
        return false;
    if (rs == STORE_OK &&
        (r->caller.role == AUTH_ROLE_ADMIN || strcmp(job->owner, r->caller.identity) == 0))
        return true;
    if (rs == STORE_OK)
        store_job_clear(job);
    *ret = rs == STORE_ERROR
               ? api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error")
               : api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no job %s", r->job_id);
    return false;
}

/* Run route's handler once its caller and job are established. */
static enum MHD_Result routes_call(api_request *r, const routes_entry *route)
{
    enum MHD_Result ret;
    routes_auth how = route->needs_auth;
    if (route->metric == ROUTE_METRICS && config_metrics_admin(&r->d->cfg))
        how = ROUTES_ADMIN; /* metrics_auth = admin */
    if (how != ROUTES_PUBLIC && !routes_authenticate(r, how, &ret))
        return ret;
    if (how == ROUTES_ADMIN && r->caller.role != AUTH_ROLE_ADMIN)
        return api_reply_error(r, MHD_HTTP_FORBIDDEN, NULL, "%s %.200s is for admins only",
                               r->method, r->path);
    if (route->needs_job == ROUTES_NO_JOB)
        return route->handler(r);
    store_job job;
    if (!routes_load_job(r, route->needs_job, &job, &ret))
        return ret;
    r->job = &job;
    ret = route->handler(r);
    r->job = NULL;
    store_job_clear(&job);
    return ret;
}

enum MHD_Result routes_dispatch(api_request *r)
{
    char id_buf[STORE_ID_LEN + 1], name_buf[ROUTES_PATH_MAX + 1];
    const routes_entry *route = NULL, *path_match = NULL;
    for (size_t i = 0; i < ROUTES_COUNT && !route; i++) {
        if (!routes_match(routes_table[i].pattern, r->path, id_buf, name_buf))
            continue;
        path_match = &routes_table[i];
        if (routes_method_is(r->method, path_match->method))
            route = path_match;
    }
    if (path_match) {
        /* A 405 counts under the path's last route, as it always has. */
        r->route = path_match->metric;
        if (strstr(path_match->pattern, "{id}"))
            r->job_id = id_buf;
        if (strstr(path_match->pattern, "{name}") || strstr(path_match->pattern, "{path}"))
            r->name = name_buf;
    }
    enum MHD_Result ret;
    if (r->body_too_large)
        ret = api_reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                              "request body over the limit of %ld bytes", r->d->cfg.max_body);
    else if (!path_match)
        ret = api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no such route: %s %.200s",
                              r->method, r->path);
    else if (!route)
        ret = routes_reply_405(r, path_match->pattern);
    else
        ret = routes_call(r, route);
    r->job_id = NULL; /* it points into this frame */
    r->name = NULL;
    return ret;
}

routes_stream_open_result routes_stream_open(api_request *r, api_stream **out)
{
    *out = NULL;
    char id_buf[STORE_ID_LEN + 1], name_buf[ROUTES_PATH_MAX + 1];
    const routes_stream_entry *e = NULL;
    for (size_t i = 0; i < sizeof routes_streams / sizeof routes_streams[0] && !e; i++)
        if (strcmp(r->method, routes_streams[i].method) == 0 &&
            routes_match(routes_streams[i].pattern, r->path, id_buf, name_buf))
            e = &routes_streams[i];
    if (!e)
        return ROUTES_BUFFER;
    /* Only an identified caller may make the daemon write: anyone else is
     * answered (401, by routes_dispatch) before the body is read. */
    const char *secret = routes_bearer(
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
    if (!secret)
        secret = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "secret");
    if (!secret || !auth_identify(r->d->au, secret, strlen(secret), &r->caller))
        return ROUTES_ANSWER_NOW;
    r->name = name_buf;
    r->job_id = strstr(e->pattern, "{id}") ? id_buf : NULL;
    *out = e->open(r);
    r->name = NULL;
    r->job_id = NULL;
    if (!*out || api_stream_refused(*out))
        return ROUTES_ANSWER_NOW;
    return ROUTES_STREAM;
}
