/* cmd_state.c — `punch state [ID]`: one job in detail, by default the
 * caller's most recent one (the seed's /api/state meaning). */
#include <getopt.h>
#include <time.h>

#include "commands.h"
#include "jobtext.h"
#include "remote.h"

const char cmd_state_usage[] =
    "usage: punch state [ID] [--json]\n"
    "\n"
    "Show a job: state, owner, trainer, times, live progress, result or error.\n"
    "Without ID, your most recently submitted job.\n"
    "\n"
    "  --json    print the job object as the API returns it\n"
    "\n"
    "exit: 0 shown, 3 unreachable, 4 auth, 5 no such job (or you have none).\n";

int state_parse_args(int argc, char **argv, state_args *args, cli_error *err)
{
    *args = (state_args){0};
    const cli_option options[] = {
        {.name = "json", .dest = &args->json},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (optind == argc)
        return 0;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

/* The caller's newest job (the list is newest first). */
static int state_latest(httpc_client *c, json_t **job, cli_error *err)
{
    json_t *jobs = NULL;
    if (remote_job_page(c, NULL, 1, NULL, &jobs, NULL, err) != 0)
        return err->code;
    json_t *first = json_array_get(jobs, 0);
    if (first == NULL) {
        json_decref(jobs);
        return cli_fail(err, PUNCH_EXIT_NOT_FOUND,
                        "you have no jobs on %s yet — submit one with punch submit JOB.json",
                        httpc_client_url(c));
    }
    *job = json_incref(first);
    json_decref(jobs);
    return 0;
}

int cmd_state(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    state_args args;
    if (state_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *job = NULL;
    int rc = args.id ? remote_job_get(client, args.id, &job, err) : state_latest(client, &job, err);
    if (rc == 0) {
        if (args.json) {
            json_dumpf(job, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
        } else {
            jobtext_print_detail(job, (double)time(NULL), stdout);
        }
    }
    json_decref(job);
    httpc_client_free(client);
    return rc;
}
