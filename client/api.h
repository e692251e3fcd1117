/* api.h — punchcardd's REST API (/api/v1, see schema/openapi.yaml) as C
 * calls. Each call maps the HTTP outcome onto punch's exit codes with a
 * message that says what to do: 401 → PUNCH_EXIT_AUTH, 404 →
 * PUNCH_EXIT_NOT_FOUND, 400/413 → PUNCH_EXIT_USAGE, anything else →
 * PUNCH_EXIT_SERVER. JSON results are new references the caller decrefs. */
#ifndef PUNCH_CLIENT_API_H
#define PUNCH_CLIENT_API_H

#include <jansson.h>

#include "cli.h"
#include "http.h"

/* A client for ctx's server. Fails with PUNCH_EXIT_AUTH (saying how to set
 * one) when no secret is configured: every /api/v1 route needs it. */
http_client *api_open(const cli_ctx *ctx, cli_error *err);

/* The job states, terminal or not, and their exit codes. */
bool api_state_is_known(const char *state);
bool api_state_is_final(const char *state);
int api_state_exit_code(const char *state);

/* POST /api/v1/jobs with the spec text as given. */
int api_job_submit(http_client *c, const char *spec, size_t len, json_t **reply,
                   cli_error *err);
/* GET /api/v1/jobs[?state=S]: the "jobs" array, newest first. */
int api_job_list(http_client *c, const char *state, json_t **jobs, cli_error *err);
int api_job_get(http_client *c, const char *id, json_t **job, cli_error *err);
/* DELETE /api/v1/jobs/ID; 409 (already finished) says so. */
int api_job_cancel(http_client *c, const char *id, json_t **job, cli_error *err);
int api_job_history(http_client *c, const char *id, json_t **history, cli_error *err);
/* GET /api/v1/jobs/ID/weights?format=F streamed into sink. */
int api_job_weights(http_client *c, const char *id, const char *format, FILE *sink,
                    cli_error *err);
/* GET /api/v1/jobs/ID/logs?offset=N: resp->body holds the bytes,
 * resp->log_offset the next offset, resp->job_state the job's state. */
int api_job_logs(http_client *c, const char *id, long long offset, http_response *resp,
                 cli_error *err);

#endif
