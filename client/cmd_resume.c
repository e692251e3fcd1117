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

int cmd_resume(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    cancel_args args;
    if (cancel_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *job = NULL;
    int rc = remote_job_resume(client, args.id, &job, err);
    if (rc == 0) {
        json_t *pos = json_object_get(job, "queue_position");
        if (json_is_integer(pos))
            printf("job %s queued again (position %" JSON_INTEGER_FORMAT "); punch wait %s "
                   "follows it\n", args.id, json_integer_value(pos), args.id);
        else
            printf("job %s queued again; punch wait %s follows it\n", args.id, args.id);
    }
    json_decref(job);
    httpc_client_free(client);
    return rc;
}
