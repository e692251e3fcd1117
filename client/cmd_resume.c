/* cmd_resume.c — `punch resume ID`: a failed, cancelled or timed-out job
 * back in the queue under the same id, continuing from its last checkpoint
 * (POST /api/v1/jobs/ID/resume). */
#include "commands.h"
#include "remote.h"

const char cmd_resume_usage[] =
    "usage: punch resume ID\n"
    "\n"
    "Queue a failed, cancelled or timed-out job again under the same id. It goes\n"
    "on from its last checkpoint (the end of an epoch, or the step a cancel stopped\n"
    "it at) with its history so far; a job that never wrote one starts over.\n"
    "\n"
    "exit: 0 queued, 5 no such job, 6 not resumable (queued, running or succeeded)\n"
    "or queue limit, 3/4 as usual.\n";

static void resume_report(const char *id, const json_t *job)
{
    json_t *pos = json_object_get(job, "queue_position");
    if (json_is_integer(pos))
        printf("job %s queued again (position %" JSON_INTEGER_FORMAT "); punch wait %s "
               "follows it\n", id, json_integer_value(pos), id);
    else
        printf("job %s queued again; punch wait %s follows it\n", id, id);
}

int cmd_resume(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    return cmd_on_job(ctx, argc, argv, remote_job_resume, resume_report, err);
}
