/* cmd_state.c — `punch state [ID]`: one job in detail, by default the
 * caller's most recent one (the seed's /api/state meaning). */
#include <getopt.h>
#include <stdio.h>
#include <time.h>

#include "commands.h"
#include "jobtext.h"
#include "remote.h"

const char cmd_state_usage[] =
    "usage: punch state [ID] [--json]\n"
    "\n"
    "Show a job: state, owner, trainer, times, live progress, result or error,\n"
    "and (with ID) its resource use: CPU time, peak memory, run directory size.\n"
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

/* "12.3 MB" for bytes, into buf. */
static void state_bytes(double bytes, char *buf, size_t len)
{
    if (bytes >= 1e9)
        snprintf(buf, len, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6)
        snprintf(buf, len, "%.1f MB", bytes / 1e6);
    else if (bytes >= 1e3)
        snprintf(buf, len, "%.1f kB", bytes / 1e3);
    else
        snprintf(buf, len, "%.0f B", bytes);
}

/* "resources: CPU 12.3 s, peak memory 150.2 MB, run directory 1.4 MB",
 * "?" for what the server does not know; nothing when it says nothing. */
static void state_print_resources(const json_t *job, FILE *out)
{
    const json_t *r = json_object_get(job, "resources_used");
    if (!json_is_object(r))
        return;
    const json_t *cpu = json_object_get(r, "cpu_s"), *peak = json_object_get(r, "peak_rss_bytes"),
                 *disk = json_object_get(r, "rundir_bytes");
    if (!json_is_number(cpu) && !json_is_number(peak) && !json_is_number(disk))
        return;
    char c[32] = "?", p[32] = "?", k[32] = "?";
    if (json_is_number(cpu))
        snprintf(c, sizeof c, "%.1f s", json_number_value(cpu));
    if (json_is_number(peak))
        state_bytes(json_number_value(peak), p, sizeof p);
    if (json_is_number(disk))
        state_bytes(json_number_value(disk), k, sizeof k);
    fprintf(out, "resources: CPU %s, peak memory %s, run directory %s\n", c, p, k);
}

/* The caller's newest job (the list is newest first). */
static int state_latest(httpc_client *c, json_t **job, cli_error *err)
{
    json_t *jobs = NULL;
    if (remote_job_page(c, NULL, NULL, 1, NULL, &jobs, NULL, err) != 0)
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
            state_print_resources(job, stdout);
        }
    }
    json_decref(job);
    httpc_client_free(client);
    return rc;
}
