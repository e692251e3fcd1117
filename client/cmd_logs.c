/* cmd_logs.c — `punch logs [-f] ID`: the job's train.log (stdout and stderr
 * of its MPI run). -f follows it with ?offset= until the job has ended. */

#include "commands.h"
#include "remote.h"

const char cmd_logs_usage[] =
    "usage: punch logs [-f] [--interval SECONDS] ID\n"
    "\n"
    "Print the job's train.log (the output of its MPI processes).\n"
    "\n"
    "  -f, --follow          keep printing new output until the job ends\n"
    "  --interval SECONDS    with -f, how often to poll (default 1)\n"
    "\n"
    "exit: 0 printed, 3 unreachable, 4 auth, 5 no such job.\n";

int logs_parse_args(int argc, char **argv, logs_args *args, cli_error *err)
{
    *args = (logs_args){.interval_s = 1.0};
    const cli_option options[] = {
        {.name = "follow", .letter = 'f', .dest = &args->follow},
        {.name = "interval", .dest = &args->interval_s, .take = cli_take_interval},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

/* Fetch from *offset, print it, advance *offset; *state gets the job's
 * state as of this read. */
static int logs_chunk(httpc_client *c, const char *id, long long *offset, char *state,
                      size_t state_len, cli_error *err)
{
    httpc_response r;
    if (remote_job_logs(c, id, *offset, &r, err) != 0)
        return err->code;
    if (r.len > 0 && fwrite(r.body, 1, r.len, stdout) != r.len) {
        httpc_response_free(&r);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write the log to stdout");
    }
    fflush(stdout);
    /* The server says where the next read starts; without the header,
     * count what came. */
    *offset = r.log_offset >= 0 ? r.log_offset : *offset + (long long)r.len;
    snprintf(state, state_len, "%s", r.job_state);
    httpc_response_free(&r);
    return 0;
}

int cmd_logs(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    logs_args args;
    if (logs_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    long long offset = 0;
    char state[32] = "";
    int rc = logs_chunk(client, args.id, &offset, state, sizeof state, err);
    while (rc == 0 && args.follow) {
        /* A job that has ended writes no more; one last read after the final
         * state was seen catches what came in between. */
        if (state[0] == '\0' || remote_state_is_final(state)) {
            rc = logs_chunk(client, args.id, &offset, state, sizeof state, err);
            break;
        }
        cli_sleep(args.interval_s, NULL);
        rc = logs_chunk(client, args.id, &offset, state, sizeof state, err);
    }
    httpc_client_free(client);
    return rc;
}
