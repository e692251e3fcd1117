/* remote.c — the /api/v1 routes on top of httpc.c, with HTTP statuses
 * turned into exit codes and messages naming the job and the next step. */
#include "remote.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "busy.h"
#include "jobstate/jobstate.h"

bool remote_state_is_known(const char *state)
{
    job_state s;
    return job_state_parse(state, &s);
}

bool remote_state_is_final(const char *state)
{
    job_state s;
    return job_state_parse(state, &s) && job_state_is_final(s);
}

int remote_state_exit_code(const char *state)
{
    job_state s;
    if (!job_state_parse(state, &s))
        return PUNCH_EXIT_JOB_FAILED;
    switch (s) {
    case JOB_SUCCEEDED: return PUNCH_EXIT_OK;
    case JOB_CANCELLED: return PUNCH_EXIT_CANCELLED;
    case JOB_TIMEOUT: return PUNCH_EXIT_TIMEOUT;
    default: return PUNCH_EXIT_JOB_FAILED;
    }
}

httpc_client *remote_open(const cli_ctx *ctx, cli_error *err)
{
    if (ctx->secret == NULL) {
        cli_fail(err, PUNCH_EXIT_AUTH,
                 "no secret configured for %s — set PUNCH_SECRET, pass --secret, or add "
                 "`secret = ...` to ~/.config/punch/config (an admin creates one with "
                 "punch keygen)", ctx->url);
        return NULL;
    }
    if (strncmp(ctx->url, "http://", 7) == 0 && !ctx->insecure &&
        !remote_url_is_loopback(ctx->url)) {
        cli_fail(err, PUNCH_EXIT_USAGE,
                 "refusing to send your secret in clear text to %s: use an https:// URL "
                 "(the server's tls_cert), or pass --insecure if this network is trusted",
                 ctx->url);
        return NULL;
    }
    httpc_client *c = httpc_client_new(ctx->url, ctx->secret, err);
    if (c != NULL && httpc_client_trust(c, ctx->cacert, err) != 0) {
        httpc_client_free(c);
        return NULL;
    }
    return c;
}

bool remote_url_is_loopback(const char *url)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return false;
    p += 3;
    const char *at = strpbrk(p, "@/"); /* skip user:password@ */
    if (at != NULL && *at == '@')
        p = at + 1;
    char host[256];
    size_t n;
    if (*p == '[') { /* [v6]:port */
        const char *close = strchr(p, ']');
        if (close == NULL)
            return false;
        n = (size_t)(close - p - 1);
        p++;
    } else {
        n = strcspn(p, ":/?#");
    }
    if (n == 0 || n >= sizeof host)
        return false;
    memcpy(host, p, n);
    host[n] = '\0';
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    struct in6_addr a6;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* The server's {"error": ..., "field": ...} message, or the raw status. */
static void remote_server_message(const httpc_response *r, char *buf, size_t len)
{
    json_t *root = json_loadb(r->body, r->len, 0, NULL);
    const char *msg = json_string_value(json_object_get(root, "error"));
    const char *field = json_string_value(json_object_get(root, "field"));
    if (msg != NULL && field != NULL && strncmp(msg, field, strlen(field)) != 0)
        snprintf(buf, len, "%s: %s", field, msg);
    else if (msg != NULL)
        snprintf(buf, len, "%s", msg);
    else
        snprintf(buf, len, "HTTP %ld", r->status);
    json_decref(root);
}

/* Map a non-success status to an exit code. what names the request for
 * the message ("the job list", "cancelling job X"); notfound is the whole
 * 404 message (NULL: a generic one). */
static int remote_status_error(httpc_client *c, const httpc_response *r, const char *what,
                               const char *notfound, cli_error *err)
{
    char msg[3072];
    remote_server_message(r, msg, sizeof msg);
    const char *url = httpc_client_url(c);
    switch (r->status) {
    case 401:
        return cli_fail(err, PUNCH_EXIT_AUTH,
                        "%s refused the secret (%s) — check PUNCH_SECRET, --secret or "
                        "~/.config/punch/config", url, msg);
    case 404:
        if (notfound != NULL)
            return cli_fail(err, PUNCH_EXIT_NOT_FOUND, "%s (server: %s)", notfound, msg);
        return cli_fail(err, PUNCH_EXIT_NOT_FOUND, "%s: not found on %s (%s)", what, url, msg);
    case 400:
    case 413:
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s refused %s: %s", url, what, msg);
    case 409:
        return cli_fail(err, PUNCH_EXIT_SERVER, "%s: %s", what, msg);
    case 429:
        return cli_fail(err, PUNCH_EXIT_SERVER,
                        "%s refused %s: %s — wait for one of your jobs to finish", url, what,
                        msg);
    default:
        return cli_fail(err, PUNCH_EXIT_SERVER, "%s failed on %s: %s", what, url, msg);
    }
}

/* The 404 message for a job route. */
static void remote_notfound(httpc_client *c, const char *id, const char *missing, char *buf,
                            size_t len)
{
    if (missing == NULL)
        snprintf(buf, len, "no job %s on %s — check the id with punch list", id,
                 httpc_client_url(c));
    else
        snprintf(buf, len, "job %s has no %s on %s", id, missing, httpc_client_url(c));
}

/* Parse a 2xx JSON body into *out. */
static int remote_parse(httpc_client *c, const httpc_response *r, const char *what, json_t **out,
                        cli_error *err)
{
    json_error_t jerr;
    *out = json_loadb(r->body, r->len, 0, &jerr);
    if (*out == NULL)
        return cli_fail(err, PUNCH_EXIT_SERVER,
                        "%s sent %s that is not JSON (%s) — is this really punchcardd?",
                        httpc_client_url(c), what, jerr.text);
    return 0;
}

/* One JSON request: send, check the status, parse. */
static int remote_json(httpc_client *c, const char *method, const char *path, const char *body,
                       size_t len, long want, const char *what, json_t **out, cli_error *err)
{
    httpc_response r;
    int rc = httpc_request(c, method, path, body, len, NULL, &r, err);
    if (rc == 0 && r.status != want)
        rc = remote_status_error(c, &r, what, NULL, err);
    if (rc == 0)
        rc = remote_parse(c, &r, what, out, err);
    httpc_response_free(&r);
    return rc;
}

/* "/api/v1/jobs/ID" + suffix with the id percent-encoded: ids are opaque. */
static char *remote_job_path(const char *id, const char *suffix)
{
    char *escaped = httpc_escape(id);
    if (escaped == NULL)
        return NULL;
    char *path = NULL;
    if (asprintf(&path, "/api/v1/jobs/%s%s", escaped, suffix) < 0)
        path = NULL;
    free(escaped);
    return path;
}

int remote_job_submit(httpc_client *c, const char *spec, size_t len, json_t **reply,
                      cli_error *err)
{
    int rc = remote_json(c, "POST", "/api/v1/jobs", spec, len, 201, "the job", reply, err);
    if (rc == 0 && json_string_value(json_object_get(*reply, "id")) == NULL) {
        json_decref(*reply);
        *reply = NULL;
        return cli_fail(err, PUNCH_EXIT_SERVER, "%s accepted the job but sent no id",
                        httpc_client_url(c));
    }
    return rc;
}

int remote_job_page(httpc_client *c, const char *state, const char *name, int limit,
                    const char *after, json_t **jobs, char **next, cli_error *err)
{
    char *escaped_state = state ? httpc_escape(state) : NULL;
    char *escaped_name = name ? httpc_escape(name) : NULL;
    char *escaped_after = after ? httpc_escape(after) : NULL;
    char *path = NULL;
    int n = -1;
    if ((!state || escaped_state) && (!name || escaped_name) && (!after || escaped_after))
        n = asprintf(&path, "/api/v1/jobs?limit=%d%s%s%s%s%s%s", limit, state ? "&state=" : "",
                     state ? escaped_state : "", name ? "&name=" : "", name ? escaped_name : "",
                     after ? "&after=" : "", after ? escaped_after : "");
    free(escaped_state);
    free(escaped_name);
    free(escaped_after);
    if (n < 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    json_t *root = NULL;
    int rc = remote_json(c, "GET", path, NULL, 0, 200, "the job list", &root, err);
    free(path);
    if (rc != 0)
        return rc;
    json_t *array = json_object_get(root, "jobs");
    if (!json_is_array(array)) {
        json_decref(root);
        return cli_fail(err, PUNCH_EXIT_SERVER, "%s sent a job list without \"jobs\"",
                        httpc_client_url(c));
    }
    /* A server from before pagination sends no "next": its list is whole. */
    const char *cursor = json_string_value(json_object_get(root, "next"));
    if (next) {
        *next = cursor ? strdup(cursor) : NULL;
        if (cursor && !*next) {
            json_decref(root);
            return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
        }
    }
    *jobs = json_incref(array);
    json_decref(root);
    return 0;
}

/* One request on a job's route, "/api/v1/jobs/ID" + suffix, into *resp
 * (its body streamed to sink when sink is not NULL). Any status but 200
 * becomes the error for `what`, whose 404 message says the job is not there,
 * or names what it lacks (missing; NULL: the job itself). On failure *resp
 * is freed. */
static int remote_job_request(httpc_client *c, const char *method, const char *id,
                              const char *suffix, FILE *sink, const char *what,
                              const char *missing, httpc_response *resp, cli_error *err)
{
    char *path = remote_job_path(id, suffix);
    if (path == NULL) {
        *resp = (httpc_response){.log_offset = -1};
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    }
    int rc = httpc_request(c, method, path, NULL, 0, sink, resp, err);
    free(path);
    if (rc == 0 && resp->status != 200) {
        char notfound[1024];
        remote_notfound(c, id, missing, notfound, sizeof notfound);
        rc = remote_status_error(c, resp, what, notfound, err);
    }
    if (rc != 0)
        httpc_response_free(resp);
    return rc;
}

/* A JSON route of one job, parsed into *out. */
bool remote_id_matched(const char *given, const json_t *job, char *full, size_t cap)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    size_t n = strlen(given);
    if (!id || n == 0 || n >= strlen(id) || strncmp(id, given, n) != 0)
        return false;
    snprintf(full, cap, "%s", id);
    return true;
}

static int remote_job_json(httpc_client *c, const char *method, const char *id,
                           const char *suffix, const char *what, const char *missing,
                           json_t **out, cli_error *err)
{
    /* Said once per run: punch wait asks again every interval. */
    static bool said;
    httpc_response r;
    if (remote_job_request(c, method, id, suffix, NULL, what, missing, &r, err) != 0)
        return err->code;
    int rc = remote_parse(c, &r, what, out, err);
    httpc_response_free(&r);
    char full[96];
    if (rc == 0 && !said && remote_id_matched(id, *out, full, sizeof full)) {
        said = true;
        fprintf(stderr, "punch: %s is job %s\n", id, full);
    }
    return rc;
}

int remote_job_get(httpc_client *c, const char *id, json_t **job, cli_error *err)
{
    return remote_job_json(c, "GET", id, "", "getting the job", NULL, job, err);
}

int remote_job_cancel(httpc_client *c, const char *id, json_t **job, cli_error *err)
{
    char what[200];
    snprintf(what, sizeof what, "cannot cancel job %s", id);
    return remote_job_json(c, "POST", id, "/cancel", what, NULL, job, err);
}

int remote_job_spec(httpc_client *c, const char *id, char **text, size_t *len, cli_error *err)
{
    httpc_response r;
    if (remote_job_request(c, "GET", id, "/spec", NULL, "getting the job's spec", NULL, &r,
                           err) != 0)
        return err->code;
    *text = r.body;
    *len = r.len;
    r.body = NULL;
    httpc_response_free(&r);
    return 0;
}

int remote_job_delete(httpc_client *c, const char *id, json_t **answer, cli_error *err)
{
    char what[200];
    snprintf(what, sizeof what, "cannot delete job %s", id);
    return remote_job_json(c, "DELETE", id, "", what, NULL, answer, err);
}

int remote_job_history(httpc_client *c, const char *id, json_t **history, cli_error *err)
{
    return remote_job_json(c, "GET", id, "/history", "getting the history",
                           "history yet (it appears after the first epoch)", history, err);
}

/* GET a job's file (the path after its id: suffix) into sink. */
static int remote_job_download(httpc_client *c, const char *id, const char *suffix, FILE *sink,
                               const char *what, const char *none, cli_error *err)
{
    httpc_response r;
    if (remote_job_request(c, "GET", id, suffix, sink, what, none, &r, err) != 0)
        return err->code;
    httpc_response_free(&r);
    return 0;
}

int remote_job_weights(httpc_client *c, const char *id, const char *format, FILE *sink,
                       cli_error *err)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/weights?format=%s", format);
    return remote_job_download(c, id, suffix, sink, "downloading the weights",
                               "weights yet (they are written when training ends)", err);
}

int remote_job_export(httpc_client *c, const char *id, FILE *sink, cli_error *err)
{
    return remote_job_download(c, id, "/export?format=onnx", sink, "exporting the model",
                               "trained model yet (it is exported when training ends)", err);
}

int remote_job_resume(httpc_client *c, const char *id, json_t **job, cli_error *err)
{
    char what[200];
    snprintf(what, sizeof what, "cannot resume job %s", id);
    return remote_job_json(c, "POST", id, "/resume", what, NULL, job, err);
}

/* "/api/v1/datasets/NAME", the name percent-encoded. */
static char *remote_dataset_path(const char *name)
{
    char *escaped = httpc_escape(name), *path = NULL;
    if (escaped == NULL || asprintf(&path, "/api/v1/datasets/%s", escaped) < 0)
        path = NULL;
    free(escaped);
    return path;
}

int remote_dataset_push(httpc_client *c, const char *name, FILE *src, long long size,
                        void (*progress)(void *ctx, long long done, long long total), void *ctx,
                        json_t **out, cli_error *err)
{
    char *path = remote_dataset_path(name);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    httpc_response r;
    int rc = httpc_upload(c, path, src, size, progress, ctx, &r, err);
    free(path);
    if (rc == 0 && r.status != 200 && r.status != 201) {
        if (r.status == 507) {
            char msg[3072];
            remote_server_message(&r, msg, sizeof msg);
            rc = cli_fail(err, PUNCH_EXIT_SERVER, "uploading %s: %s", name, msg);
        } else
            rc = remote_status_error(c, &r, "the upload", NULL, err);
    }
    if (rc == 0)
        rc = remote_parse(c, &r, "the upload's answer", out, err);
    httpc_response_free(&r);
    return rc;
}

int remote_dataset_list(httpc_client *c, json_t **out, cli_error *err)
{
    return remote_json(c, "GET", "/api/v1/datasets", NULL, 0, 200, "listing datasets", out,
                       err);
}

int remote_dataset_list_site(httpc_client *c, json_t **out, cli_error *err)
{
    return remote_json(c, "GET", "/api/v1/datasets?site=1", NULL, 0, 200,
                       "listing the site's datasets", out, err);
}

int remote_dataset_delete(httpc_client *c, const char *name, json_t **out, cli_error *err)
{
    char *path = remote_dataset_path(name);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    char what[200];
    snprintf(what, sizeof what, "deleting dataset %s", name);
    int rc = remote_json(c, "DELETE", path, NULL, 0, 200, what, out, err);
    free(path);
    return rc;
}

/* POST body to a job's predict or generate route, waiting and retrying
 * while the server is busy (busy.h); a status other than 200 becomes the
 * error. The response is the caller's to free, whatever the result. */
static int remote_job_engine(httpc_client *c, const char *id, const char *route,
                             const void *body, size_t len, FILE *sink, const char *what,
                             httpc_response *r, cli_error *err)
{
    memset(r, 0, sizeof *r);
    char *path = remote_job_path(id, route);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    busy_budget busy = {0};
    int rc;
    while ((rc = httpc_request(c, "POST", path, body, len, sink, r, err)) == 0 &&
           busy_wait(r, &busy))
        httpc_response_free(r);
    free(path);
    if (rc == 0 && r->status != 200) {
        char notfound[1024];
        remote_notfound(c, id, NULL, notfound, sizeof notfound);
        rc = remote_status_error(c, r, what, notfound, err);
    }
    return rc;
}

int remote_job_predict(httpc_client *c, const char *id, const void *input, size_t len,
                       FILE *sink, cli_error *err)
{
    httpc_response r;
    int rc = remote_job_engine(c, id, "/predict", input, len, sink, "predicting", &r, err);
    httpc_response_free(&r);
    return rc;
}

int remote_job_generate(httpc_client *c, const char *id, const char *request, json_t **out,
                        cli_error *err)
{
    httpc_response r;
    int rc = remote_job_engine(c, id, "/generate", request, strlen(request), NULL,
                               "generating", &r, err);
    if (rc == 0)
        rc = remote_parse(c, &r, "generating", out, err);
    httpc_response_free(&r);
    return rc;
}

int remote_job_files(httpc_client *c, const char *id, json_t **files, cli_error *err)
{
    return remote_job_json(c, "GET", id, "/files", "listing the run directory", NULL, files,
                           err);
}

int remote_job_file(httpc_client *c, const char *id, const char *path, FILE *sink,
                    cli_error *err)
{
    char *escaped = httpc_escape(path);
    char *suffix = NULL;
    if (escaped == NULL || asprintf(&suffix, "/files/%s", escaped) < 0) {
        free(escaped);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    }
    free(escaped);
    char what[1200];
    snprintf(what, sizeof what, "downloading %s", path);
    httpc_response r;
    int rc = remote_job_request(c, "GET", id, suffix, sink, what, "such file", &r, err);
    free(suffix);
    if (rc != 0)
        return err->code;
    httpc_response_free(&r);
    return 0;
}

int remote_job_logs(httpc_client *c, const char *id, long long offset, httpc_response *resp,
                    cli_error *err)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/logs?offset=%lld", offset);
    return remote_job_request(c, "GET", id, suffix, NULL, "getting the logs", NULL, resp, err);
}

int remote_sweep(httpc_client *c, const char *method, const char *id, const char *body,
                 size_t len, long want, json_t **out, cli_error *err)
{
    char *escaped = id ? httpc_escape(id) : NULL, *path = NULL;
    if ((id && !escaped) ||
        asprintf(&path, "/api/v1/sweeps%s%s", id ? "/" : "", id ? escaped : "") < 0)
        path = NULL;
    free(escaped);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    char what[200];
    snprintf(what, sizeof what, id ? "sweep %s" : "the sweeps%s", id ? id : "");
    int rc = remote_json(c, method, path, body, len, want, what, out, err);
    free(path);
    return rc;
}
