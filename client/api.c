/* api.c — the /api/v1 routes on top of http.c, with HTTP statuses turned
 * into exit codes and messages naming the job and the next step. */
#include "api.h"

#include <stdlib.h>
#include <string.h>

#include "jobstate/jobstate.h"

bool api_state_is_known(const char *state)
{
    job_state s;
    return job_state_parse(state, &s);
}

bool api_state_is_final(const char *state)
{
    job_state s;
    return job_state_parse(state, &s) && job_state_is_final(s);
}

int api_state_exit_code(const char *state)
{
    if (strcmp(state, "succeeded") == 0)
        return PUNCH_EXIT_OK;
    if (strcmp(state, "cancelled") == 0)
        return PUNCH_EXIT_CANCELLED;
    if (strcmp(state, "timeout") == 0)
        return PUNCH_EXIT_TIMEOUT;
    return PUNCH_EXIT_JOB_FAILED;
}

http_client *api_open(const cli_ctx *ctx, cli_error *err)
{
    if (ctx->secret == NULL) {
        cli_fail(err, PUNCH_EXIT_AUTH,
                 "no secret configured for %s — set PUNCH_SECRET, pass --secret, or add "
                 "`secret = ...` to ~/.config/punch/config (an admin creates one with "
                 "punch keygen)", ctx->url);
        return NULL;
    }
    return http_client_new(ctx->url, ctx->secret, err);
}

/* The server's {"error": ..., "field": ...} message, or the raw status. */
static void api_server_message(const http_response *r, char *buf, size_t len)
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
static int api_status_error(http_client *c, const http_response *r, const char *what,
                            const char *notfound, cli_error *err)
{
    char msg[1024];
    api_server_message(r, msg, sizeof msg);
    const char *url = http_client_url(c);
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
static void api_notfound(http_client *c, const char *id, const char *missing, char *buf,
                         size_t len)
{
    if (missing == NULL)
        snprintf(buf, len, "no job %s on %s — check the id with punch list", id,
                 http_client_url(c));
    else
        snprintf(buf, len, "job %s has no %s on %s", id, missing, http_client_url(c));
}

/* Parse a 2xx JSON body into *out. */
static int api_parse(http_client *c, const http_response *r, const char *what, json_t **out,
                     cli_error *err)
{
    json_error_t jerr;
    *out = json_loadb(r->body, r->len, 0, &jerr);
    if (*out == NULL)
        return cli_fail(err, PUNCH_EXIT_SERVER,
                        "%s sent %s that is not JSON (%s) — is this really punchcardd?",
                        http_client_url(c), what, jerr.text);
    return 0;
}

/* One JSON request: send, check the status, parse. */
static int api_json(http_client *c, const char *method, const char *path, const char *body,
                    size_t len, long want, const char *what, const char *notfound,
                    json_t **out, cli_error *err)
{
    http_response r;
    int rc = http_request(c, method, path, body, len, NULL, &r, err);
    if (rc == 0 && r.status != want)
        rc = api_status_error(c, &r, what, notfound, err);
    if (rc == 0)
        rc = api_parse(c, &r, what, out, err);
    http_response_free(&r);
    return rc;
}

/* "/api/v1/jobs/ID" + suffix with the id percent-encoded: ids are opaque. */
static char *api_job_path(const char *id, const char *suffix)
{
    char *escaped = http_escape(id);
    if (escaped == NULL)
        return NULL;
    char *path = NULL;
    if (asprintf(&path, "/api/v1/jobs/%s%s", escaped, suffix) < 0)
        path = NULL;
    free(escaped);
    return path;
}

int api_job_submit(http_client *c, const char *spec, size_t len, json_t **reply,
                   cli_error *err)
{
    int rc = api_json(c, "POST", "/api/v1/jobs", spec, len, 201, "the job", NULL, reply, err);
    if (rc == 0 && json_string_value(json_object_get(*reply, "id")) == NULL) {
        json_decref(*reply);
        *reply = NULL;
        return cli_fail(err, PUNCH_EXIT_SERVER, "%s accepted the job but sent no id",
                        http_client_url(c));
    }
    return rc;
}

int api_job_list(http_client *c, const char *state, json_t **jobs, cli_error *err)
{
    char *path = NULL;
    int n;
    if (state != NULL) {
        char *escaped = http_escape(state);
        n = escaped ? asprintf(&path, "/api/v1/jobs?state=%s", escaped) : -1;
        free(escaped);
    } else {
        n = asprintf(&path, "/api/v1/jobs");
    }
    if (n < 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    json_t *root = NULL;
    int rc = api_json(c, "GET", path, NULL, 0, 200, "the job list", NULL, &root, err);
    free(path);
    if (rc != 0)
        return rc;
    json_t *array = json_object_get(root, "jobs");
    if (!json_is_array(array)) {
        json_decref(root);
        return cli_fail(err, PUNCH_EXIT_SERVER, "%s sent a job list without \"jobs\"",
                        http_client_url(c));
    }
    *jobs = json_incref(array);
    json_decref(root);
    return 0;
}

/* A JSON route of one job; missing names what a 404 lacks (NULL: the job). */
static int api_job_json(http_client *c, const char *method, const char *id, const char *suffix,
                        const char *what, const char *missing, json_t **out, cli_error *err)
{
    char notfound[1024];
    api_notfound(c, id, missing, notfound, sizeof notfound);
    char *path = api_job_path(id, suffix);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    int rc = api_json(c, method, path, NULL, 0, 200, what, notfound, out, err);
    free(path);
    return rc;
}

int api_job_get(http_client *c, const char *id, json_t **job, cli_error *err)
{
    return api_job_json(c, "GET", id, "", "getting the job", NULL, job, err);
}

int api_job_cancel(http_client *c, const char *id, json_t **job, cli_error *err)
{
    char what[200];
    snprintf(what, sizeof what, "cannot cancel job %s", id);
    return api_job_json(c, "DELETE", id, "", what, NULL, job, err);
}

int api_job_history(http_client *c, const char *id, json_t **history, cli_error *err)
{
    return api_job_json(c, "GET", id, "/history", "getting the history",
                        "history yet (it appears after the first epoch)", history, err);
}

int api_job_weights(http_client *c, const char *id, const char *format, FILE *sink,
                    cli_error *err)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/weights?format=%s", format);
    char *path = api_job_path(id, suffix);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    http_response r;
    int rc = http_request(c, "GET", path, NULL, 0, sink, &r, err);
    free(path);
    if (rc == 0 && r.status != 200) {
        char notfound[1024];
        api_notfound(c, id, "weights yet (they are written when training ends)", notfound,
                     sizeof notfound);
        rc = api_status_error(c, &r, "downloading the weights", notfound, err);
    }
    http_response_free(&r);
    return rc;
}

int api_job_logs(http_client *c, const char *id, long long offset, http_response *resp,
                 cli_error *err)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/logs?offset=%lld", offset);
    char *path = api_job_path(id, suffix);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    int rc = http_request(c, "GET", path, NULL, 0, NULL, resp, err);
    free(path);
    if (rc == 0 && resp->status != 200) {
        char notfound[1024];
        api_notfound(c, id, NULL, notfound, sizeof notfound);
        rc = api_status_error(c, resp, "getting the logs", notfound, err);
        http_response_free(resp);
    }
    return rc;
}
