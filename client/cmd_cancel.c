/* cmd_cancel.c — `punch cancel ID`: a queued job is cancelled at once; a
 * running one is sent SIGTERM and becomes "cancelled" when it stops. */
#include <getopt.h>
#include <string.h>

#include "api.h"
#include "commands.h"

const char cmd_cancel_usage[] =
    "usage: punch cancel ID\n"
    "\n"
    "Cancel a queued or running job. A queued job is cancelled at once; a running\n"
    "one is stopped (SIGTERM to its processes) and reads \"cancelled\" once it has.\n"
    "\n"
    "exit: 0 cancelled or stopping, 5 no such job, 6 already finished, 3/4 as usual.\n";

int cancel_parse_args(int argc, char **argv, cancel_args *args, cli_error *err)
{
    static const struct option longopts[] = {{NULL, 0, NULL, 0}};
    *args = (cancel_args){0};
    optind = 0;
    int c;
    while ((c = cli_getopt(argc, argv, "", longopts, err)) != -1)
        return err->code;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

int cmd_cancel(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    cancel_args args;
    if (cancel_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    http_client *client = api_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *job = NULL;
    int rc = api_job_cancel(client, args.id, &job, err);
    if (rc == 0) {
        const char *state = json_string_value(json_object_get(job, "state"));
        if (state != NULL && strcmp(state, "cancelled") == 0)
            printf("job %s cancelled\n", args.id);
        else
            printf("job %s is stopping (was %s); punch wait %s follows it to the end\n",
                   args.id, state ? state : "running", args.id);
    }
    json_decref(job);
    http_client_free(client);
    return rc;
}
