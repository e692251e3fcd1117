/* cmd_cancel.c — `punch cancel ID`: a queued job is cancelled at once; a
 * running one is sent SIGTERM and becomes "cancelled" when it stops. */
#include <string.h>

#include "commands.h"
#include "remote.h"

const char cmd_cancel_usage[] =
    "usage: punch cancel ID\n"
    "\n"
    "Cancel a queued or running job. A queued job is cancelled at once; a running\n"
    "one is stopped (SIGTERM to its processes) and reads \"cancelled\" once it has.\n"
    "\n"
    "exit: 0 cancelled or stopping, 5 no such job, 6 already finished, 3/4 as usual.\n";

int cancel_parse_args(int argc, char **argv, cancel_args *args, cli_error *err)
{
    *args = (cancel_args){0};
    const cli_option no_options[] = {{0}};
    if (cli_parse_options(argc, argv, no_options, err) != 0)
        return err->code;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

int cmd_on_job(const cli_ctx *ctx, int argc, char **argv, job_call_fn call,
               void (*report)(const char *id, const json_t *job), cli_error *err)
{
    cancel_args args;
    if (cancel_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *job = NULL;
    int rc = call(client, args.id, &job, err);
    if (rc == 0)
        report(args.id, job);
    json_decref(job);
    httpc_client_free(client);
    return rc;
}

static void cancel_report(const char *id, const json_t *job)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    if (state != NULL && strcmp(state, "cancelled") == 0)
        printf("job %s cancelled\n", id);
    else
        printf("job %s is stopping (was %s); punch wait %s follows it to the end\n", id,
               state ? state : "running", id);
}

int cmd_cancel(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    return cmd_on_job(ctx, argc, argv, remote_job_cancel, cancel_report, err);
}
