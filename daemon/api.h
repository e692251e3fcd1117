/* api.h — the HTTP API's request handlers and the helpers they share
 * (schema/openapi.yaml is the reference). http.c accumulates a request;
 * routes.c finds its handler, authenticates the caller and loads the job the
 * route names before calling it; a handler answers with exactly one
 * api_reply_*() call. */
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
    bool body_too_large;     /* over cfg.max_body: answered 413 */
    auth_caller caller;      /* set when the route needs a caller */
    store_job *job;          /* the route's job, visible to the caller; owned
                                by the dispatcher; NULL when it needs none */
    metrics_route route;
    int status;              /* set by the reply */
} api_request;

/* Replies. api_reply_json takes ownership of body. */
enum MHD_Result api_reply_json(api_request *r, int status, json_t *body);
enum MHD_Result api_reply_error(api_request *r, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
enum MHD_Result api_reply_response(api_request *r, int status, struct MHD_Response *resp);

/* body (ownership taken) as a response: compact JSON with a trailing
 * newline (curl output stays readable) and its Content-Type, for a caller
 * that adds headers before api_reply_response. NULL if it cannot be built. */
struct MHD_Response *api_json_response(json_t *body);

/* Validate and enqueue spec_text (a JSON job spec) for r->caller; replies
 * 201 with {id, state, queue_position, ranks} and Location, or the error. */
enum MHD_Result api_submit_spec(api_request *r, const char *spec_text, size_t len);

/* Route handlers (routes.c says which needs a caller and which a job). */
enum MHD_Result api_healthz(api_request *r);
enum MHD_Result api_metrics(api_request *r);
enum MHD_Result api_jobs_submit(api_request *r);
enum MHD_Result api_jobs_list(api_request *r);
/* r->job as the job object. */
enum MHD_Result api_job_get(api_request *r);
/* Cancel r->job: queued -> cancelled now; starting or running -> stop
 * requested; finished -> 409. Replies with the job. */
enum MHD_Result api_job_cancel(api_request *r);
enum MHD_Result api_job_history(api_request *r);
enum MHD_Result api_job_weights(api_request *r);
enum MHD_Result api_job_logs(api_request *r);
enum MHD_Result api_job_events(api_request *r);
/* r->job's spec exactly as submitted (application/json). */
enum MHD_Result api_job_spec(api_request *r);
/* The hosts, their slots, GPUs and state (admins only: routes.c). */
enum MHD_Result api_cluster(api_request *r);
enum MHD_Result api_seed_submit(api_request *r);
/* r->job (finished) as {model, history}, then forgotten with its run directory. */
enum MHD_Result api_seed_destroy(api_request *r);

#endif
