/* cmd_list.c — `punch list`: the caller's jobs (an admin's: everyone's),
 * newest first, as a table or as JSON for scripts. */
#include <getopt.h>
#include <time.h>

#include "api.h"
#include "commands.h"
#include "jobview.h"

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

int list_parse_args(int argc, char **argv, list_args *args, cli_error *err)
{
    static const struct option longopts[] = {
        {"state", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    *args = (list_args){0};
    optind = 0;
    int c;
    while ((c = cli_getopt(argc, argv, "s:", longopts, err)) != -1) {
        switch (c) {
        case 's':
            if (!api_state_is_known(optarg))
                return cli_fail(err, PUNCH_EXIT_USAGE,
                                "list: unknown state \"%s\"; expected queued, starting, "
                                "running, succeeded, failed, cancelled or timeout", optarg);
            args->state = optarg;
            break;
        case 'j': args->json = true; break;
        default: return err->code;
        }
    }
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
    http_client *client = api_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *jobs = NULL;
    int rc = api_job_list(client, args.state, &jobs, err);
    if (rc == 0) {
        if (args.json) {
            json_dumpf(jobs, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
        } else {
            jobview_print_table(jobs, (double)time(NULL), stdout);
        }
    }
    json_decref(jobs);
    http_client_free(client);
    return rc;
}
