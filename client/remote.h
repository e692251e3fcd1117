/* remote.h — punchcardd's REST API (/api/v1, see schema/openapi.yaml) as C
 * calls: the jobs on the remote server, seen from punch. Each call maps the
 * HTTP outcome onto punch's exit codes with a message that says what to do:
 * 401 → PUNCH_EXIT_AUTH, 404 → PUNCH_EXIT_NOT_FOUND, 400/413 →
 * PUNCH_EXIT_USAGE, anything else → PUNCH_EXIT_SERVER. JSON results are new
 * references the caller decrefs. (The server side of these routes lives in
 * daemon/.) */
#ifndef PUNCH_CLIENT_REMOTE_H
#define PUNCH_CLIENT_REMOTE_H

#include <jansson.h>

#include "cli.h"
#include "httpc.h"

/* A client for ctx's server, verifying an https:// one against ctx->cacert
 * (or the system's CAs). Fails with PUNCH_EXIT_AUTH (saying how to set one)
 * when no secret is configured: every /api/v1 route needs it; and with
 * PUNCH_EXIT_USAGE when the secret would cross the network in clear (an
 * http:// URL whose host is not this machine) and ctx->insecure is not
 * set. */
httpc_client *remote_open(const cli_ctx *ctx, cli_error *err);

/* Whether url (http:// or https://) names this machine: localhost, an
 * address in 127.0.0.0/8, or ::1. */
bool remote_url_is_loopback(const char *url);

/* A state name as the API sends it (lib/jobstate's names): whether it is
 * one, whether a job in it has ended, and the exit code `punch wait` gives
 * a job that ended in it (PUNCH_EXIT_JOB_FAILED for any other name). */
bool remote_state_is_known(const char *state);
bool remote_state_is_final(const char *state);
int remote_state_exit_code(const char *state);

/* POST /api/v1/jobs with the spec text as given. */
int remote_job_submit(httpc_client *c, const char *spec, size_t len, json_t **reply,
                      cli_error *err);
/* GET /api/v1/jobs?limit=N[&state=S[,S...]][&name=PATTERN][&after=CURSOR]:
 * one page of at most limit jobs (1 to 1000) that pass the filters (NULL:
 * none), newest first, older than the page `after` ended (NULL: from the
 * newest). *jobs gets its "jobs" array; *next (when next is not NULL; the
 * caller frees it) the cursor of the following page, or NULL on the last. */
int remote_job_page(httpc_client *c, const char *state, const char *name, int limit,
                    const char *after, json_t **jobs, char **next, cli_error *err);
int remote_job_get(httpc_client *c, const char *id, json_t **job, cli_error *err);
/* Is given a short prefix of the job's whole id (the server accepts one
 * that matches a single job)? Then that id is written to full, which punch
 * prints to stderr ("punch: a25a5f is job a25a5f0c91d2"). */
bool remote_id_matched(const char *given, const json_t *job, char *full, size_t cap);
/* POST /api/v1/jobs/ID/cancel; 409 (already finished) says so. */
int remote_job_cancel(httpc_client *c, const char *id, json_t **job, cli_error *err);
/* GET /api/v1/jobs/ID/spec: the spec as its user wrote it, NUL-terminated
 * (*len bytes); the caller frees *text. */
int remote_job_spec(httpc_client *c, const char *id, char **text, size_t *len, cli_error *err);
/* DELETE /api/v1/jobs/ID: a finished job is forgotten, *answer holds
 * "bytes_freed". (The server cancels an unfinished one instead: callers
 * that mean only to delete check the state first.) */
int remote_job_delete(httpc_client *c, const char *id, json_t **answer, cli_error *err);
int remote_job_history(httpc_client *c, const char *id, json_t **history, cli_error *err);
/* GET /api/v1/jobs/ID/weights?format=F streamed into sink. */
int remote_job_weights(httpc_client *c, const char *id, const char *format, FILE *sink,
                       cli_error *err);
/* GET /api/v1/jobs/ID/export?format=onnx (the model as ONNX) into sink. */
int remote_job_export(httpc_client *c, const char *id, FILE *sink, cli_error *err);
/* GET /api/v1/jobs/ID/logs?offset=N: resp->body holds the bytes,
 * resp->log_offset the next offset, resp->job_state the job's state. On
 * success the caller frees *resp; on failure there is nothing to free. */
/* POST .../resume: the job, queued again. */
int remote_job_resume(httpc_client *c, const char *id, json_t **job, cli_error *err);
/* Datasets: PUT size bytes of src as NAME (progress may be NULL), the
 * server's answer (name, bytes, sha256, ...) in *out; the caller's list;
 * delete. */
int remote_dataset_push(httpc_client *c, const char *name, FILE *src, long long size,
                        void (*progress)(void *ctx, long long done, long long total), void *ctx,
                        json_t **out, cli_error *err);
int remote_dataset_list(httpc_client *c, json_t **out, cli_error *err);
/* The site's datasets under the server's `datasets` roots (?site=1). */
int remote_dataset_list_site(httpc_client *c, json_t **out, cli_error *err);
int remote_dataset_delete(httpc_client *c, const char *name, json_t **out, cli_error *err);
/* POST .../generate with a JSON request; the reply {"text", "tokens"}
 * into *out. */
int remote_job_generate(httpc_client *c, const char *id, const char *request, json_t **out,
                        cli_error *err);
/* POST .../predict with an .npy body; the .npy of outputs into sink. */
int remote_job_predict(httpc_client *c, const char *id, const void *input, size_t len,
                       FILE *sink, cli_error *err);
/* The job's run directory listing, {"files": [{path, bytes, mtime}], ...}. */
int remote_job_files(httpc_client *c, const char *id, json_t **files, cli_error *err);
/* One file of the run directory (relative path) into sink. */
int remote_job_file(httpc_client *c, const char *id, const char *path, FILE *sink,
                    cli_error *err);
int remote_job_logs(httpc_client *c, const char *id, long long offset, httpc_response *resp,
                    cli_error *err);

/* A sweeps request: method on /api/v1/sweeps (id NULL) or /api/v1/sweeps/ID,
 * body (may be NULL), expecting status want; the JSON answer in *out. */
int remote_sweep(httpc_client *c, const char *method, const char *id, const char *body,
                 size_t len, long want, json_t **out, cli_error *err);

#endif
