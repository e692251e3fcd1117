/* cmd_list.c — `punch list`: the caller's jobs (an admin's: everyone's),
 * newest first, as a table or as JSON for scripts. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "jobstate/jobstate.h"
#include "jobtext.h"
#include "remote.h"

const char cmd_list_usage[] =
    "usage: punch list [--state S[,S...]] [--name PATTERN] [--limit N | --all] [--wide]\n"
    "                  [--json]\n"
    "\n"
    "List your jobs, newest first (an admin sees everyone's): the newest 100\n"
    "unless --limit or --all says otherwise.\n"
    "\n"
    "  -s, --state S   only jobs in state S: queued, starting, running, succeeded,\n"
    "                  failed, cancelled or timeout; several as a comma list or\n"
    "                  --state again (a job in any of them)\n"
    "  --name PATTERN  only jobs whose name matches PATTERN: a shell glob (*, ?,\n"
    "                  [...]) of the whole name, or without those a substring;\n"
    "                  the server filters both, so --limit N counts matches\n"
    "  -n, --limit N   at most the newest N jobs\n"
    "  --all           every job (fetched a page of 1000 at a time)\n"
    "  --wide          key hyperparameters (MODEL, OPT, LR, BATCH per worker,\n"
    "                  EPOCHS, TRAINER, RANKS; \"-\" for a job submitted before the\n"
    "                  server kept them), then final metrics: EPOCH, the last\n"
    "                  epoch's loss and metrics (val_ too) and the test results,\n"
    "                  one column each;\n"
    "                  a sweep's trials with their params (PARAMS, last); the\n"
    "                  SWEEP column shows whenever a listed job is a trial\n"
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

/* One state name of a --state list into the mask at dest. */
static int list_take_one_state(const char *cmd, const char *value, unsigned *mask, cli_error *err)
{
    job_state js;
    if (!remote_state_is_known(value) || !job_state_parse(value, &js)) {
        char names[256];
        list_state_names(names, sizeof names);
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: unknown state \"%s\"; expected %s", cmd,
                        value, names);
    }
    *mask |= 1u << (unsigned)js;
    return 0;
}

/* --state S or S,S,...; given again, the states add up. */
static int list_take_state(const char *cmd, const char *value, void *dest, cli_error *err)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", value) >= (int)sizeof buf)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: --state: list too long", cmd);
    char *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++)
        if (list_take_one_state(cmd, tok, dest, err) != 0)
            return err->code;
    if (n == 0)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: --state: expected a state, got \"%s\"", cmd,
                        value);
    return 0;
}

/* The server's page size: the most a request may ask for (openapi.yaml). */
enum { LIST_PAGE_MAX = 1000, LIST_DEFAULT = 100 };

static int list_take_limit(const char *cmd, const char *value, void *dest, cli_error *err)
{
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno || end == value || *end || n < 1)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: --limit: expected a number of jobs >= 1, got "
                        "\"%s\"", cmd, value);
    *(long *)dest = n;
    return 0;
}

int list_parse_args(int argc, char **argv, list_args *args, cli_error *err)
{
    *args = (list_args){0};
    const cli_option options[] = {
        {.name = "state", .letter = 's', .dest = &args->states, .take = list_take_state},
        {.name = "name", .dest = &args->name, .take = cli_take_string},
        {.name = "limit", .letter = 'n', .dest = &args->limit, .take = list_take_limit},
        {.name = "all", .dest = &args->all},
        {.name = "json", .dest = &args->json},
        {.name = "wide", .dest = &args->wide},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (args->all && args->limit > 0)
        return cli_fail(err, PUNCH_EXIT_USAGE, "list: --limit and --all exclude each other");
    if (optind < argc)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "list: unexpected argument \"%s\"; see punch list --help", argv[optind]);
    return 0;
}

bool list_job_matches(const list_args *args, const json_t *job)
{
    if (args->states) {
        job_state js;
        const char *state = json_string_value(json_object_get(job, "state"));
        if (!state || !job_state_parse(state, &js) || !(args->states & (1u << (unsigned)js)))
            return false;
    }
    if (args->name) {
        const char *name = json_string_value(json_object_get(job, "name"));
        if (!name)
            return false;
        /* As the server's GLOB: no backslash escapes. */
        if (strpbrk(args->name, "*?["))
            return fnmatch(args->name, name, FNM_NOESCAPE) == 0;
        return strstr(name, args->name) != NULL;
    }
    return true;
}

/* The --state mask as the API's comma list ("queued,running"); "" for
 * every state. */
static void list_state_query(unsigned states, char *buf, size_t len)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int s = 0; s < JOB_STATE_COUNT && pos < len; s++)
        if (states & (1u << (unsigned)s))
            pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", pos ? "," : "",
                                    job_state_name((job_state)s));
}

/* The jobs of page that pass args's filters, appended to jobs; at most
 * want in all (0: no limit). */
static void list_keep(const list_args *args, json_t *page, long want, json_t *jobs)
{
    size_t i;
    json_t *job;
    json_array_foreach(page, i, job) {
        if (want > 0 && (long)json_array_size(jobs) >= want)
            return;
        if (list_job_matches(args, job))
            json_array_append(jobs, job);
    }
}

/* Up to `want` jobs (0: all) that pass args's filters, page after page,
 * appended to *jobs; *more says whether the server holds older ones beyond
 * them (that may or may not pass). */
static int list_fetch(httpc_client *client, const list_args *args, long want, json_t *jobs,
                      bool *more, cli_error *err)
{
    char *cursor = NULL, states[128];
    list_state_query(args->states, states, sizeof states);
    *more = false;
    for (;;) {
        long left = want > 0 ? want - (long)json_array_size(jobs) : LIST_PAGE_MAX;
        int limit = left < LIST_PAGE_MAX ? (int)left : LIST_PAGE_MAX;
        json_t *page = NULL;
        char *next = NULL;
        int rc = remote_job_page(client, states[0] ? states : NULL, args->name, limit, cursor,
                                 &page, &next, err);
        free(cursor);
        if (rc != 0)
            return rc;
        list_keep(args, page, want, jobs);
        json_decref(page);
        cursor = next;
        if (!cursor)
            return 0;
        if (want > 0 && (long)json_array_size(jobs) >= want) {
            free(cursor);
            *more = true;
            return 0;
        }
    }
}

int cmd_list(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    list_args args;
    if (list_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *jobs = json_array();
    bool more = false;
    long want = args.all ? 0 : args.limit > 0 ? args.limit : LIST_DEFAULT;
    int rc = jobs ? list_fetch(client, &args, want, jobs, &more, err)
                  : cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    if (rc == 0) {
        if (args.json) {
            json_dumpf(jobs, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
        } else {
            jobtext_print_table_wide(jobs, (double)time(NULL), args.wide, stdout);
        }
        if (more && !args.limit)
            fprintf(stderr, "(the newest %ld; older jobs: punch list --all, or --limit N)\n",
                    want);
    }
    json_decref(jobs);
    httpc_client_free(client);
    return rc;
}
