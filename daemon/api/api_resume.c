/* api_resume.c — POST /api/v1/jobs/{id}/resume: a failed, cancelled or
 * timed-out job back in the queue under the same id. Its run directory is
 * kept (checkpoints, progress.jsonl, history.json); only the files that say
 * how the last run ended (exit.json, supervisor.json) are removed, so the
 * monitor does not settle the new run from them. When the job starts again
 * the launcher sees checkpoints/ckpt.bin and runs punch-train --resume,
 * which continues from the last checkpoint (an epoch's end, or the step a
 * cancel's SIGTERM stopped at); a job that never wrote one starts over. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/jobview.h"
#include "log.h"
#include "run/rundir.h"

enum MHD_Result api_job_resume(api_request *r)
{
    daemon_ctx *d = r->d;
    const store_job *job = r->job;
    if (job->state != JOB_FAILED && job->state != JOB_CANCELLED && job->state != JOB_TIMEOUT)
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job %s is %s; only a failed, cancelled or timed-out job can "
                               "be resumed", job->id, job_state_name(job->state));
    if (job->files_removed)
        return api_reply_files_removed(r);
    static const char *const ended[] = {"exit.json", "supervisor.json"};
    for (size_t i = 0; i < sizeof ended / sizeof ended[0]; i++) {
        char path[4096];
        if (!rundir_path(path, sizeof path, d->cfg.data_dir, job->id, ended[i]))
            return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
        if (unlink(path) != 0 && errno != ENOENT)
            return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                   "cannot clear the last run's %s: %s", ended[i],
                                   strerror(errno));
    }
    /* Say now, in the events, whether the run continues or starts over: a
     * job cancelled before its first checkpoint trains from the start. */
    char ckpt[4096], detail[200];
    bool from_checkpoint = rundir_path(ckpt, sizeof ckpt, d->cfg.data_dir, job->id,
                                       "checkpoints/ckpt.bin") &&
                           access(ckpt, F_OK) == 0;
    snprintf(detail, sizeof detail, "resumed by %s: %s", r->caller.identity,
             from_checkpoint ? "continues from its last checkpoint"
                             : "no checkpoint was written, it starts over");
    store_status rs = store_job_resume(d->st, job->id, d->cfg.max_queued, detail, daemon_now());
    if (rs == STORE_CONFLICT)
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL, "job %s is no longer resumable",
                               job->id);
    if (rs == STORE_LIMIT)
        return api_reply_error(r, MHD_HTTP_TOO_MANY_REQUESTS, NULL,
                               "%s already has %d queued jobs (the limit)", job->owner,
                               d->cfg.max_queued);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    log_info("job %s (%s): resumed by %s", job->id, job->owner, r->caller.identity);
    daemon_wake();
    store_job fresh;
    if (store_job_get(d->st, job->id, &fresh) != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    json_t *o = jobview_json(d, &fresh);
    store_job_clear(&fresh);
    if (!o)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    return api_reply_json(r, MHD_HTTP_OK, o);
}
