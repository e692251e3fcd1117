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

int cmd_cancel(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    cancel_args args;
    if (cancel_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *job = NULL;
    int rc = remote_job_cancel(client, args.id, &job, err);
    if (rc == 0) {
        const char *state = json_string_value(json_object_get(job, "state"));
        if (state != NULL && strcmp(state, "cancelled") == 0)
            printf("job %s cancelled\n", args.id);
        else
            printf("job %s is stopping (was %s); punch wait %s follows it to the end\n",
                   args.id, state ? state : "running", args.id);
    }
    json_decref(job);
    httpc_client_free(client);
    return rc;
}
