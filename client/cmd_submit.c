/* cmd_submit.c — `punch submit JOB.json`: validate the spec with the same
 * library the daemon and engine use (a typo fails here, before any network
 * traffic), then queue it as written. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "commands.h"
#include "jobspec/spec.h"

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
    static const struct option longopts[] = {
        {"wait", no_argument, NULL, 'w'},
        {"quiet", no_argument, NULL, 'q'},
        {"dry-run", no_argument, NULL, 'n'},
        {"interval", required_argument, NULL, 'i'},
        {NULL, 0, NULL, 0},
    };
    *args = (submit_args){.interval_s = 1.0};
    optind = 0;
    int c;
    while ((c = cli_getopt(argc, argv, "wqn", longopts, err)) != -1) {
        switch (c) {
        case 'w': args->wait = true; break;
        case 'q': args->quiet = true; break;
        case 'n': args->dry_run = true; break;
        case 'i':
            if (cli_parse_interval(argv[0], optarg, &args->interval_s, err) != 0)
                return err->code;
            break;
        default: return err->code;
        }
    }
    return cli_one_operand(argc, argv, "the job file (JOB.json)", &args->file, err);
}

/* Read the whole file into a NUL-terminated heap buffer. */
static int submit_read_file(const char *path, char **text, size_t *len, cli_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *grown = realloc(buf, cap * 2);
        if (grown == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int failed = ferror(f);
    int saved = errno;
    fclose(f);
    if (buf == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot read %s: out of memory", path);
    if (failed) {
        free(buf);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot read %s: %s", path, strerror(saved));
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
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
    if (submit_read_file(args.file, &text, &len, err) != 0)
        return err->code;

    spec_error serr;
    job_spec *spec = spec_parse(text, len, &serr);
    if (spec == NULL) {
        char msg[600];
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
    http_client *client = api_open(ctx, err);
    if (client == NULL)
        rc = err->code;
    else
        rc = api_job_submit(client, text, len, &reply, err);
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
    http_client_free(client);
    spec_free(spec);
    return rc;
}
