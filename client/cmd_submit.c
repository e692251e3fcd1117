/* cmd_submit.c — `punch submit JOB.json`: validate the spec with the same
 * library the daemon and engine use (a typo fails here, before any network
 * traffic), then queue it as written. */
#include <stdlib.h>
#include <sys/stat.h>

#include "commands.h"
#include "io/io_file.h"
#include "jobspec/spec.h"
#include "remote.h"

const char cmd_submit_usage[] =
    "usage: punch submit JOB.json [--wait] [--quiet] [--dry-run] [--interval SECONDS]\n"
    "\n"
    "Check the job spec locally, then queue it on punchcardd and print the job id.\n"
    "\n"
    "  -w, --wait            then follow the job like `punch wait` and exit with its result\n"
    "  -q, --quiet           print only the job id (for scripts); with --wait, nothing more\n"
    "  -n, --dry-run         only validate: print the model summary, submit nothing\n"
    "  --interval SECONDS    with --wait, how often to poll (default 1)\n"
    "\n"
    "exit: 0 queued (with --wait: succeeded), 2 invalid spec, 3 unreachable, 4 auth,\n"
    "      6 refused (e.g. queue limit); with --wait also 1 failed, 7 cancelled, 8 timeout,\n"
    "      130 interrupted (Ctrl-C stops waiting; the job goes on).\n";

int submit_parse_args(int argc, char **argv, submit_args *args, cli_error *err)
{
    *args = (submit_args){.interval_s = 1.0};
    const cli_option options[] = {
        {.name = "wait", .letter = 'w', .dest = &args->wait},
        {.name = "quiet", .letter = 'q', .dest = &args->quiet},
        {.name = "dry-run", .letter = 'n', .dest = &args->dry_run},
        {.name = "interval", .dest = &args->interval_s, .take = cli_take_interval},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    return cli_one_operand(argc, argv, "the job file (JOB.json)", &args->file, err);
}

/* Far above the largest spec the job-spec library accepts, so a spec that
 * is merely too big is read and refused by spec_parse with its own message;
 * a file beyond this is not read into memory at all. */
#define SUBMIT_MAX_FILE_BYTES ((size_t)64 << 20)

/* The job file's text, NUL-terminated, for spec_parse and the request body.
 * A file too large to be a job spec is an invalid spec (PUNCH_EXIT_USAGE,
 * as spec_parse says of a smaller oversized one); any other failure to read
 * it (missing, a directory, unreadable) is PUNCH_EXIT_LOCAL. */
static int submit_read_spec(const char *path, char **text, size_t *len, cli_error *err)
{
    unsigned char *data = NULL;
    char why[1024];
    if (io_read_file_or_pipe(path, SUBMIT_MAX_FILE_BYTES, &data, len, why, sizeof why) == 0) {
        *text = (char *)data;
        return 0;
    }
    struct stat st;
    bool too_large = stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                     (unsigned long long)st.st_size > SUBMIT_MAX_FILE_BYTES;
    return cli_fail(err, too_large ? PUNCH_EXIT_USAGE : PUNCH_EXIT_LOCAL, "%s", why);
}

static void submit_report(const submit_args *args, const json_t *reply, const job_spec *spec)
{
    const char *id = json_string_value(json_object_get(reply, "id"));
    if (args->quiet) {
        printf("%s\n", id);
        fflush(stdout);
        return;
    }
    const json_t *pos = json_object_get(reply, "queue_position");
    const json_t *ranks = json_object_get(reply, "ranks");
    long n_ranks = json_is_integer(ranks) ? (long)json_integer_value(ranks)
                                          : spec_ranks_needed(spec);
    printf("submitted job %s (%s, %ld rank%s", id, spec->name, n_ranks, n_ranks == 1 ? "" : "s");
    if (json_is_number(pos))
        printf(", queue position %.0f", json_number_value(pos));
    printf(")\n");
    if (!args->wait)
        printf("follow it with: punch wait %s\n", id);
    fflush(stdout);
}

int cmd_submit(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    submit_args args;
    if (submit_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    char *text = NULL;
    size_t len = 0;
    if (submit_read_spec(args.file, &text, &len, err) != 0)
        return err->code;

    spec_error serr;
    job_spec *spec = spec_parse(text, len, &serr);
    if (spec == NULL) {
        char msg[SPEC_ERROR_STR_MAX];
        free(text);
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: %s", args.file,
                        spec_error_str(&serr, msg, sizeof msg));
    }
    if (args.dry_run) {
        spec_print_summary(spec, stdout);
        printf("%s is valid (not submitted: --dry-run)\n", args.file);
        spec_free(spec);
        free(text);
        return PUNCH_EXIT_OK;
    }

    int rc;
    json_t *reply = NULL;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        rc = err->code;
    else
        rc = remote_job_submit(client, text, len, &reply, err);
    free(text);
    if (rc == 0) {
        submit_report(&args, reply, spec);
        if (args.wait) {
            wait_options opts = {.interval_s = args.interval_s, .quiet = args.quiet,
                                 .tty = ctx->stdout_tty};
            rc = wait_follow(client, json_string_value(json_object_get(reply, "id")), &opts,
                             err);
        }
    }
    json_decref(reply);
    httpc_client_free(client);
    spec_free(spec);
    return rc;
}
