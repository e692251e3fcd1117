/* cmd_list.c — `punch list`: the caller's jobs (an admin's: everyone's),
 * newest first, as a table or as JSON for scripts. */
#include <getopt.h>
#include <time.h>

#include "commands.h"
#include "jobstate/jobstate.h"
#include "jobtext.h"
#include "remote.h"

const char cmd_list_usage[] =
    "usage: punch list [--state S] [--json]\n"
    "\n"
    "List your jobs, newest first (an admin sees everyone's).\n"
    "\n"
    "  -s, --state S   only jobs in state S: queued, starting, running, succeeded,\n"
    "                  failed, cancelled or timeout\n"
    "  --json          print a JSON array of job objects (as the API returns them)\n"
    "\n"
    "exit: 0 listed (even if empty), 2 unknown state, 3 unreachable, 4 auth.\n";

/* "queued, starting, ... or timeout": every state the API has. */
static void list_state_names(char *buf, size_t len)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int s = 0; s < JOB_STATE_COUNT && pos < len; s++) {
        const char *sep = s == 0 ? "" : s == JOB_STATE_COUNT - 1 ? " or " : ", ";
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", sep, job_state_name((job_state)s));
    }
}

static int list_take_state(const char *cmd, const char *value, void *dest, cli_error *err)
{
    if (!remote_state_is_known(value)) {
        char names[256];
        list_state_names(names, sizeof names);
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: unknown state \"%s\"; expected %s", cmd,
                        value, names);
    }
    *(const char **)dest = value;
    return 0;
}

int list_parse_args(int argc, char **argv, list_args *args, cli_error *err)
{
    *args = (list_args){0};
    const cli_option options[] = {
        {.name = "state", .letter = 's', .dest = &args->state, .take = list_take_state},
        {.name = "json", .dest = &args->json},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (optind < argc)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "list: unexpected argument \"%s\"; see punch list --help", argv[optind]);
    return 0;
}

int cmd_list(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    list_args args;
    if (list_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *jobs = NULL;
    int rc = remote_job_list(client, args.state, &jobs, err);
    if (rc == 0) {
        if (args.json) {
            json_dumpf(jobs, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
        } else {
            jobtext_print_table(jobs, (double)time(NULL), stdout);
        }
    }
    json_decref(jobs);
    httpc_client_free(client);
    return rc;
}
