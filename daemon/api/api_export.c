/* api_export.c — GET /api/v1/jobs/{id}/export?format=onnx: the trained
 * model as ONNX (docs/interchange.md).
 *
 * Every job that succeeds since the export landed has model.onnx in its
 * run directory (the engine writes it after the weights), served as it
 * is. For an older job (or one whose export failed) the daemon builds it
 * on request as /predict computes: `punch-train RUNDIR/job.json --weights
 * RUNDIR/weights.safetensors --export-onnx TMPDIR/model.onnx`, served from
 * its descriptor and removed; the run directory, which belongs to the
 * job's engine, is never written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/engine_run.h"
#include "run/rundir.h"

#define API_EXPORT_TIMEOUT_S 300

static enum MHD_Result api_export_send(api_request *r, int fd, const struct stat *st)
{
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st->st_size, fd);
    if (!resp) {
        close(fd);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    char disposition[96];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s-model.onnx\"",
             r->job->id);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
    return api_reply_response(r, MHD_HTTP_OK, resp);
}

/* The run directory's model.onnx, opened without following a symlink;
 * -1 when there is none. */
static int api_export_open_rundir(api_request *r, struct stat *st)
{
    char path[4096];
    if (!rundir_path(path, sizeof path, r->d->cfg.data_dir, r->job->id, "model.onnx"))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size == 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Build the model with punch-train into a temporary directory. */
static enum MHD_Result api_export_build(api_request *r)
{
    daemon_ctx *d = r->d;
    const store_job *job = r->job;
    char spec[4096], weights[4096], dir[4096], out[4200];
    struct stat st;
    if (!rundir_path(spec, sizeof spec, d->cfg.data_dir, job->id, "job.json") ||
        !rundir_path(weights, sizeof weights, d->cfg.data_dir, job->id, "weights.safetensors"))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    if (stat(weights, &st) != 0)
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job %s has no final weights to export", job->id);
    /* DATA_DIR/tmp, as the uploads and /predict make it. */
    snprintf(dir, sizeof dir, "%s/tmp", d->cfg.data_dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s: %s", dir,
                               strerror(errno));
    snprintf(dir, sizeof dir, "%s/tmp/export-XXXXXX", d->cfg.data_dir);
    if (!mkdtemp(dir))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "cannot make a directory for the export: %s", strerror(errno));
    snprintf(out, sizeof out, "%s/model.onnx", dir);
    char *argv[] = {d->engine, spec, (char *)"--weights", weights, (char *)"--export-onnx", out,
                    NULL};
    char msg[1024];
    int rc = engine_run(argv, API_EXPORT_TIMEOUT_S, msg, sizeof msg);
    int fd = rc == 0 ? open(out, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    unlink(out);
    rmdir(dir);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        if (rc == 1)
            return api_reply_error(r, MHD_HTTP_CONFLICT, NULL, "job %s cannot be exported: %s",
                                   job->id, msg);
        log_error("job %s (%s): ONNX export failed: %s", job->id, job->owner, msg);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "export failed: %s",
                               msg);
    }
    return api_export_send(r, fd, &st);
}

enum MHD_Result api_job_export(api_request *r)
{
    const char *format = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "format");
    if (format && format[0] && strcmp(format, "onnx") != 0)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "format",
                               "format: expected onnx, got \"%.40s\"", format);
    if (r->job->files_removed)
        return api_reply_files_removed(r);
    if (r->job->state != JOB_SUCCEEDED)
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job %s has no trained model to export (it is %s)", r->job->id,
                               job_state_name(r->job->state));
    struct stat st;
    int fd = api_export_open_rundir(r, &st);
    if (fd >= 0)
        return api_export_send(r, fd, &st);
    return api_export_build(r);
}
