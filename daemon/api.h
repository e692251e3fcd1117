/* api.h — the HTTP API's request handlers and the helpers they share
 * (schema/openapi.yaml is the reference). http.c accumulates a request and
 * routes it here; a handler answers with exactly one api_reply_*() call. */
#ifndef PUNCH_API_H
#define PUNCH_API_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

#include "auth.h"
#include "daemon.h"
#include "metrics.h"

typedef struct api_request {
    struct MHD_Connection *conn;
    daemon_ctx *d;
    const char *method;
    const char *path;
    const char *job_id;      /* the {id} of /api/v1/jobs/{id}/..., else NULL */
    const char *body;        /* NUL-terminated; body_len bytes */
    size_t body_len;
    auth_caller caller;
    metrics_route route;
    int status;              /* set by the reply */
} api_request;

/* Replies. api_reply_json takes ownership of body. */
enum MHD_Result api_reply_json(api_request *r, int status, json_t *body);
enum MHD_Result api_reply_error(api_request *r, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
enum MHD_Result api_reply_response(api_request *r, int status, struct MHD_Response *resp);

/* Identify the caller from "Authorization: Bearer", ?secret= or, when
 * body_secret is given, a "secret" field of the JSON body. On failure the
 * 401 is already queued and the handler returns the result in *ret. */
bool api_authenticate(api_request *r, const char *body_secret, enum MHD_Result *ret);

/* Load the job named by r->job_id if the caller may see it (owner or admin);
 * otherwise queue a 404 (existence does not leak) and return false. */
bool api_load_visible_job(api_request *r, store_job *job, enum MHD_Result *ret);

/* Validate and enqueue spec_text (a JSON job spec) for r->caller; replies
 * 201 with {id, state, queue_position, ranks} and Location, or the error. */
enum MHD_Result api_submit_spec(api_request *r, const char *spec_text, size_t len);

/* Cancel a job the caller may see: queued -> cancelled now; starting or
 * running -> stop requested; finished -> 409. Replies with the job. */
enum MHD_Result api_cancel_job(api_request *r, store_job *job);

/* Route handlers. */
enum MHD_Result api_healthz(api_request *r);
enum MHD_Result api_metrics(api_request *r);
enum MHD_Result api_jobs_submit(api_request *r);
enum MHD_Result api_jobs_list(api_request *r);
enum MHD_Result api_job_get(api_request *r);
enum MHD_Result api_job_cancel(api_request *r);
enum MHD_Result api_job_history(api_request *r);
enum MHD_Result api_job_weights(api_request *r);
enum MHD_Result api_job_logs(api_request *r);
enum MHD_Result api_job_events(api_request *r);
enum MHD_Result api_seed_submit(api_request *r);
enum MHD_Result api_seed_state(api_request *r);
enum MHD_Result api_seed_cancel(api_request *r);
enum MHD_Result api_seed_destroy(api_request *r);

#endif
