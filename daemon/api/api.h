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

#include "http/auth.h"
#include "daemon.h"
#include "http/metrics.h"

/* A request body written to a file as it arrives, for routes that take
 * large bodies (routes.c opens one before the body is read; http.c feeds
 * it; the route's handler finishes it; http.c frees it). */
typedef struct api_stream api_stream;

typedef struct api_request {
    struct MHD_Connection *conn;
    daemon_ctx *d;
    const char *method;
    const char *path;
    const char *job_id;      /* the {id} of /api/v1/jobs/{id}/..., else NULL */
    const char *body;        /* NUL-terminated; body_len bytes */
    size_t body_len;
    bool body_too_large;     /* over cfg.max_body: answered 413 */
    bool close_connection;   /* the reply says "Connection: close" and the
                                connection ends after it */
    auth_caller caller;      /* set when the route needs a caller */
    store_job *job;          /* the route's job, visible to the caller; owned
                                by the dispatcher; NULL when it needs none */
    metrics_route route;
    int status;              /* set by the reply */
    const char *name;        /* the {name} of /api/v1/datasets/{name} or the {path}
                                of /api/v1/jobs/{id}/files/{path}, else NULL */
    api_stream *stream;      /* the body, for a streaming route; else NULL */
    int retry_after;         /* > 0: the reply carries "Retry-After: N" (seconds) */
    struct enginepool *engines; /* predictions' threads (http.c's); NULL: none */
    /* Set by http.c while the request's connection is suspended (its handler
     * runs on a writer thread): how a handler that answers from another
     * thread ends the request (api_engine.c); the handler then sets
     * answered_later and http.c leaves the end to resume. */
    void (*resume)(void *ctx, const struct api_request *r, enum MHD_Result ret);
    void *resume_ctx;
    bool answered_later;
} api_request;

/* Replies. api_reply_json takes ownership of body. */
enum MHD_Result api_reply_json(api_request *r, int status, json_t *body);
enum MHD_Result api_reply_error(api_request *r, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
enum MHD_Result api_reply_response(api_request *r, int status, struct MHD_Response *resp);
/* 410 Gone for r->job, whose run directory retention removed while keeping
 * its record (retention_keep_records; the job's files_removed). */
enum MHD_Result api_reply_files_removed(api_request *r);
/* The paths of r->job's job.json and final weights (buffers of 4096) when
 * it has them; otherwise false with the reply queued in *reply: 410 when
 * retention removed its files, 409 saying it has no final weights to `use`
 * ("predict with") and its state. */
bool api_job_final_weights(api_request *r, char *spec, char *weights, const char *use,
                           enum MHD_Result *reply);

/* body (ownership taken) as a response: compact JSON with a trailing
 * newline (curl output stays readable) and its Content-Type, for a caller
 * that adds headers before api_reply_response. NULL if it cannot be built. */
struct MHD_Response *api_json_response(json_t *body);
/* The text api_json_response() sends for body (ownership taken; the caller
 * frees the text; its length in *len), or NULL; and the response for such a
 * text (ownership taken, also on failure). */
char *api_json_text(json_t *body, size_t *len);
struct MHD_Response *api_text_response(char *text, size_t len);

/* Validate and enqueue spec_text (a JSON job spec) for r->caller; replies
 * 201 with {id, state, queue_position, ranks} and Location, or the error. */
enum MHD_Result api_submit_spec(api_request *r, const char *spec_text, size_t len);

/* What api_submit_job did: the job's id, ranks and place in the queue, or
 * the refusal's HTTP status, field ("" for none) and message. */
typedef struct api_submitted {
    char id[STORE_ID_LEN + 1];
    int ranks;
    int position;
    int status;
    char field[200];
    char msg[3072];
} api_submitted;
/* The submit of api_submit_spec without a request, for owner (a sweep's
 * trials): the same validation, "@NAME" and init_from resolution,
 * admission, limits and store. dry_run checks everything and stores
 * nothing. false with out's refusal filled. */
bool api_submit_job(daemon_ctx *d, const char *owner, const char *spec_text, size_t len,
                    bool dry_run, api_submitted *out);

/* Streamed bodies (api_datasets.c). Open the stream of a PUT
 * /api/v1/datasets/{name} for r->caller (authenticated): a temporary file
 * beside the dataset, or a refusal to answer at once (bad name, declared
 * length over the upload limit or the quota). NULL: out of memory. */
api_stream *api_datasets_stream_open(api_request *r);
/* Open the stream of a POST /api/v1/jobs/{id}/predict (api_predict.c):
 * its .npy input to DATA_DIR/tmp, under predict_max. */
api_stream *api_predict_stream_open(api_request *r);

/* The stream itself (api_stream.c). New: nothing open yet, body limit
 * `limit`; NULL when out of memory. */
api_stream *api_stream_new(long long limit);
/* Create its temporary file in dir (made if missing); limit_name is the
 * config key a 413 names. false (and refused) on failure. */
bool api_stream_open_in(api_stream *s, const char *dir, const char *limit_name);
/* Refuse with status and message (the first refusal stays); the file is
 * removed and the rest of the body dropped. */
void api_stream_refuse(api_stream *s, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append n body bytes: hashed and written, or counted and dropped after a
 * refusal. false when the client should be cut off (far over the limit). */
bool api_stream_write(api_stream *s, const char *data, size_t n);
/* Whether the stream was refused already (answer without reading more);
 * the refusal's status (0: none) and message. */
bool api_stream_refused(const api_stream *s);
int api_stream_status(const api_stream *s, const char **error);
/* The temporary file: descriptor, path, bytes written, SHA-256 (hex; call
 * once, when the body has ended). */
int api_stream_fd(const api_stream *s);
const char *api_stream_path(const api_stream *s);
long long api_stream_bytes(const api_stream *s);
void api_stream_sha256(api_stream *s, char hex[65]);
/* fsync the file and rename it to final (then fsync its directory). */
bool api_stream_place(api_stream *s, const char *final);
/* Remove the temporary file unless it was put in place. */
void api_stream_free(api_stream *s);

/* A punch-train run for a request on r->job (api_engine.c): `ENGINE spec
 * --out dir --weights weights mode input --threads N` (N the job's
 * threads) under a time limit; dir is the request's temporary directory
 * (removed once answered, in every case); reply answers once the engine
 * ended (rc and msg as engine_run's), with dir's files still there. */
typedef struct api_engine_run {
    const char *spec, *weights;
    const char *mode, *input; /* "--predict" INPUT.npy, "--generate" REQUEST.json */
    const char *dir;
    int timeout_s;
    enum MHD_Result (*reply)(api_request *r, const char *dir, int rc, const char *msg);
} api_engine_run;
/* Run e on the engine pool (predict_threads) and answer r from there while
 * its connection stays suspended; or refuse at once with Retry-After: 503
 * when predict_queue requests wait already or the server is stopping, 429
 * when the caller has predict_per_user in the pool. Without a pool (r not
 * suspended) it runs here. */
enum MHD_Result api_engine_submit(api_request *r, const api_engine_run *e);
/* Append the pool's gauges (predictions running, waiting) to the metrics
 * text *text of *len bytes (reallocated); false when out of memory. */
bool api_engine_metrics(struct enginepool *p, char **text, size_t *len);

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
/* DELETE of r->job: a finished job is forgotten (row, events and run
 * directory; 200 with the bytes freed), any other is cancelled as by
 * api_job_cancel. */
enum MHD_Result api_job_delete(api_request *r);
enum MHD_Result api_job_history(api_request *r);
enum MHD_Result api_job_weights(api_request *r);
enum MHD_Result api_job_logs(api_request *r);
enum MHD_Result api_job_events(api_request *r);
/* r->job's spec as its user wrote it (application/json), resubmittable as
 * it is; with ?resolved=1 the spec that runs ("@NAME" resolved to paths). */
enum MHD_Result api_job_spec(api_request *r);
/* The hosts, their slots, GPUs and state (admins only: routes.c). */
enum MHD_Result api_cluster(api_request *r);
enum MHD_Result api_whoami(api_request *r);
/* The seed's submit: a spec with "secret", or {"secret", "job": spec}, plus
 * the seed's job_name, num_executors, num_processes and data_path mapped
 * onto the spec; its pickled "trainer" refused (400); 403, as the seed,
 * while the caller's current job is queued or running. */
enum MHD_Result api_seed_submit(api_request *r);
/* r->job's run directory: every regular file (path, bytes, mtime), and
 * one of them by its relative path (symlinks and escapes refused: 404). */
enum MHD_Result api_job_files(api_request *r);
/* r->job (failed, cancelled or timeout; else 409) back in the queue under
 * its id, to continue from its last checkpoint; replies with the job. */
enum MHD_Result api_job_resume(api_request *r);
/* r->job's (succeeded; else 409) model applied to the .npy body (raw
 * inputs): 200 with an .npy float32 [N, outputs]; 400 when the input does
 * not fit the model, 413 over predict_max. */
enum MHD_Result api_job_predict(api_request *r);
/* r->job's (succeeded, data.format "text"; else 409) language model
 * continuing a prompt: {"prompt", "max_new_tokens", "temperature", "top_k",
 * "seed"} -> 200 {"text", "tokens"}; 400 naming a bad field
 * (api_generate.c). */
enum MHD_Result api_job_generate(api_request *r);
enum MHD_Result api_job_file(api_request *r);
/* r->job's (succeeded; else 409) model as ONNX (?format=onnx, the only
 * format): its run directory's model.onnx, or for a job that ended without
 * one, built from its spec and final weights by punch-train --export-onnx;
 * 409 naming the layer when the model cannot be exported. */
enum MHD_Result api_job_export(api_request *r);
/* /api/v1/datasets[/{name}]: the caller's uploads (admins see all). */
enum MHD_Result api_datasets_list(api_request *r);
enum MHD_Result api_dataset_get(api_request *r);
enum MHD_Result api_dataset_put(api_request *r);
enum MHD_Result api_dataset_delete(api_request *r);
/* r->job as the job object plus the seed's job_name and running. */
enum MHD_Result api_seed_state(api_request *r);
/* The caller's current job (finished) as {model, history, architecture,
 * job_name}, then forgotten with its run directory; 400, as the seed, when
 * there is none or it has not finished. Loads the job itself (routes.c
 * gives it none): "no job" is the seed's 400 here, not a 404. */
enum MHD_Result api_seed_destroy(api_request *r);
/* The seed's cancel: 200 in every case, as the seed. The caller's current
 * job, when queued or running, is cancelled as the v1 DELETE does and the
 * reply is the job; a finished one is left as it is and answered; with no
 * job the reply is {"cancelled": false}. */
enum MHD_Result api_seed_cancel(api_request *r);
/* /api/v1/sweeps[/{id}] (api_sweeps.c): submit {"name", "job", "search"}
 * (201 {"id"}; 400 naming a trial's parameters and the field), the
 * caller's sweeps (admins: all), one sweep with its trials and best, and
 * DELETE, which cancels every queued and running trial. */
enum MHD_Result api_sweeps_submit(api_request *r);
enum MHD_Result api_sweeps_list(api_request *r);
enum MHD_Result api_sweep_get(api_request *r);
enum MHD_Result api_sweep_cancel(api_request *r);

#endif
