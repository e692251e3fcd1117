/* api_predict.c — POST /api/v1/jobs/{id}/predict: the trained model's
 * outputs for an .npy of new raw inputs.
 *
 * Why a subprocess: the model, its layers and the input scaling live in
 * the engine (engine/), which links MPI, BLAS and the CUDA backend; the
 * daemon links none of them and stays small. So the body is streamed to
 * DATA_DIR/tmp (predict_max bytes at most, never held in memory), and
 * `punch-train RUNDIR/job.json --weights RUNDIR/weights.safetensors
 * --predict INPUT --out TMPDIR` writes predictions.npy there (engine_run.c:
 * a time limit, its reason on failure), which is served from its
 * descriptor and removed. The run goes to the engine pool (api_engine.c,
 * predict_threads), never a thread that serves submits. The cost per request is the engine's start
 * (process, BLAS threads, model build, weights read) plus the forward
 * passes; docs/api.md gives a measurement. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/rundir.h"

#define API_PREDICT_TIMEOUT_S 300

api_stream *api_predict_stream_open(api_request *r)
{
    long long limit = r->d->cfg.predict_max;
    api_stream *s = api_stream_new(limit);
    if (!s)
        return NULL;
    /* Nothing is written for a job the caller cannot see: the dispatcher
     * answers 404 for it at once. */
    store_job job;
    store_status rs = store_job_get(r->d->st, r->job_id, &job);
    bool visible = rs == STORE_OK && (r->caller.role == AUTH_ROLE_ADMIN ||
                                      strcmp(job.owner, r->caller.identity) == 0);
    if (rs == STORE_OK)
        store_job_clear(&job);
    if (!visible) {
        api_stream_refuse(s, MHD_HTTP_NOT_FOUND, "no job %s", r->job_id);
        return s;
    }
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    long long declared = cl ? strtoll(cl, NULL, 10) : -1;
    if (declared > limit) {
        api_stream_refuse(s, MHD_HTTP_CONTENT_TOO_LARGE,
                          "input of %lld bytes is over %lld bytes (predict_max); for more, "
                          "upload the inputs and run a job", declared, limit);
        return s;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tmp", r->d->cfg.data_dir);
    api_stream_open_in(s, dir, "predict_max");
    return s;
}

/* The engine's predictions.npy in dir as the reply (api_engine_run). */
static enum MHD_Result api_predict_reply(api_request *r, const char *dir, int rc, const char *msg)
{
    char result[4200];
    struct stat st;
    snprintf(result, sizeof result, "%s/predictions.npy", dir);
    int fd = rc == 0 ? open(result, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    if (rc == 2)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "%s", msg);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        log_error("job %s (for %s): predictions failed: %s", r->job_id, r->caller.identity,
                  msg);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "predictions failed: %s", msg);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "application/octet-stream") != MHD_YES) {
        MHD_destroy_response(resp);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    return api_reply_response(r, MHD_HTTP_OK, resp);
}

enum MHD_Result api_job_predict(api_request *r)
{
    daemon_ctx *d = r->d;
    api_stream *s = r->stream;
    if (!s)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "no input stream");
    const char *refusal;
    int status = api_stream_status(s, &refusal);
    if (status)
        return api_reply_error(r, status, NULL, "%s", refusal);
    char spec[4096], weights[4096], out[4096];
    enum MHD_Result reply;
    if (!api_job_final_weights(r, spec, weights, "predict with", &reply))
        return reply;
    snprintf(out, sizeof out, "%s/tmp/predict-XXXXXX", d->cfg.data_dir);
    if (!mkdtemp(out))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "cannot make a directory for the predictions: %s",
                               strerror(errno));
    api_engine_run run = {spec, weights, "--predict", api_stream_path(s), out,
                          API_PREDICT_TIMEOUT_S, api_predict_reply};
    return api_engine_submit(r, &run);
}
