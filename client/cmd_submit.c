/* cmd_submit.c — `punch submit JOB.json`: validate the spec with the same
 * library the daemon and engine use (a typo fails here, before any network
 * traffic), then queue it as written. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "io/io_file.h"
#include "jobspec/spec.h"
#include "remote.h"

const char cmd_submit_usage[] =
    "usage: punch submit JOB.json [--wait] [--quiet] [--dry-run] [--interval SECONDS]\n"
    "       punch submit --from ID [--set PATH=VALUE ...] [options]\n"
    "\n"
    "Check the job spec locally, then queue it on punchcardd and print the job id.\n"
    "\n"
    "  --from ID             start from job ID's spec as it was written (a clone)\n"
    "  --set PATH=VALUE      change one field first: training.epochs=10,\n"
    "                        name=\"run 2\" (VALUE is JSON, else a string); repeatable\n"
    "  -w, --wait            then follow the job like `punch wait` and exit with its result\n"
    "  -q, --quiet           print only the job id (for scripts); with --wait, nothing more\n"
    "  -n, --dry-run         only validate: print the model summary, submit nothing\n"
    "  --interval SECONDS    with --wait, how often to poll (default 1)\n"
    "\n"
    "exit: 0 queued (with --wait: succeeded), 2 invalid spec, 3 unreachable, 4 auth,\n"
    "      6 refused (e.g. queue limit); with --wait also 1 failed, 7 cancelled, 8 timeout,\n"
    "      130 interrupted (Ctrl-C stops waiting; the job goes on).\n";

/* cli_take_fn for --set: PATH=VALUE appended to ((submit_args *)dest)->sets. */
static int submit_take_set(const char *cmd, const char *value, void *dest, cli_error *err)
{
    submit_args *args = dest;
    const char *eq = strchr(value, '=');
    if (eq == NULL || eq == value)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: --set %s: expected PATH=VALUE "
                        "(e.g. training.epochs=10)", cmd, value);
    if (args->n_sets == SUBMIT_MAX_SETS)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: more than %d --set", cmd, SUBMIT_MAX_SETS);
    args->sets[args->n_sets++] = value;
    return 0;
}

int submit_parse_args(int argc, char **argv, submit_args *args, cli_error *err)
{
    *args = (submit_args){.interval_s = 1.0};
    const cli_option options[] = {
        {.name = "wait", .letter = 'w', .dest = &args->wait},
        {.name = "quiet", .letter = 'q', .dest = &args->quiet},
        {.name = "dry-run", .letter = 'n', .dest = &args->dry_run},
        {.name = "interval", .dest = &args->interval_s, .take = cli_take_interval},
        {.name = "from", .dest = &args->from, .take = cli_take_string},
        {.name = "set", .dest = args, .take = submit_take_set},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (args->from == NULL && args->n_sets > 0)
        return cli_fail(err, PUNCH_EXIT_USAGE, "submit: --set needs --from ID; see punch "
                        "submit --help");
    if (args->from != NULL && optind < argc)
        return cli_fail(err, PUNCH_EXIT_USAGE, "submit: give JOB.json or --from ID, not both");
    if (args->from != NULL)
        return 0;
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

/* Set PATH (dot-separated keys; objects made as needed) of root to VALUE:
 * JSON when it parses as JSON, else the text as a string. */
static int submit_apply_set(json_t *root, const char *set, cli_error *err)
{
    const char *eq = strchr(set, '=');
    char path[512];
    if ((size_t)(eq - set) >= sizeof path)
        return cli_fail(err, PUNCH_EXIT_USAGE, "submit: --set %s: path too long", set);
    memcpy(path, set, (size_t)(eq - set));
    path[eq - set] = '\0';
    json_t *value = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    if (value == NULL)
        value = json_string(eq + 1);
    if (value == NULL)
        return cli_fail(err, PUNCH_EXIT_USAGE, "submit: --set %s: not UTF-8 text", set);
    json_t *obj = root;
    char *save = NULL;
    char *key = strtok_r(path, ".", &save);
    for (char *next; key != NULL && (next = strtok_r(NULL, ".", &save)) != NULL; key = next) {
        json_t *child = json_object_get(obj, key);
        if (child == NULL) {
            child = json_object();
            if (child == NULL || json_object_set_new(obj, key, child) != 0)
                break;
        }
        if (!json_is_object(child)) {
            json_decref(value);
            return cli_fail(err, PUNCH_EXIT_USAGE, "submit: --set %s: %s is not an object",
                            set, key);
        }
        obj = child;
    }
    if (key == NULL || json_object_set_new(obj, key, value) != 0)
        return cli_fail(err, PUNCH_EXIT_USAGE, "submit: --set %s: cannot set it", set);
    return 0;
}

/* Job `from`'s spec as written, with args' --set changes, into *text.
 * Unchanged, the text is the server's byte for byte; changed, it is dumped
 * again, its numbers with 15 significant digits so 0.2 stays 0.2. */
static int submit_fetch_spec(const cli_ctx *ctx, const submit_args *args, char **text,
                             size_t *len, cli_error *err)
{
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    int rc = remote_job_spec(client, args->from, text, len, err);
    httpc_client_free(client);
    if (rc != 0 || args->n_sets == 0)
        return rc;
    json_t *root = json_loadb(*text, *len, 0, NULL);
    free(*text);
    *text = NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        return cli_fail(err, PUNCH_EXIT_SERVER, "job %s's spec is not a JSON object", args->from);
    }
    for (int i = 0; i < args->n_sets && rc == 0; i++)
        rc = submit_apply_set(root, args->sets[i], err);
    if (rc == 0 && (*text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15))) == NULL)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    if (rc == 0)
        *len = strlen(*text);
    json_decref(root);
    return rc;
}

static bool submit_names_upload_model(const char *text, size_t len)
{
    json_t *root = json_loadb(text, len, 0, NULL);
    const char *m = json_string_value(json_object_get(root, "model"));
    size_t n = m ? strlen(m) : 0;
    bool yes = n > 6 && m[0] == '@' && m[1] != '/' && strcmp(m + n - 5, ".onnx") == 0;
    json_decref(root);
    return yes;
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
                   : spec                     ? spec_ranks_needed(spec)
                                              : 1;
    printf("submitted job %s (%s, %ld rank%s", id, spec ? spec->name : "uploaded model", n_ranks,
           n_ranks == 1 ? "" : "s");
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
    char from_name[64];
    if (args.from != NULL) {
        if (submit_fetch_spec(ctx, &args, &text, &len, err) != 0)
            return err->code;
        snprintf(from_name, sizeof from_name, "job %.40s's spec", args.from);
        args.file = from_name;
    } else if (submit_read_spec(args.file, &text, &len, err) != 0) {
        return err->code;
    }

    spec_error serr;
    job_spec *spec = spec_parse(text, len, &serr);
    /* "model": "@NAME.onnx" names an upload only the server can import: the
     * server checks the whole spec. */
    if (spec == NULL && !args.dry_run && submit_names_upload_model(text, len)) {
        serr.path[0] = '\0';
    } else if (spec == NULL) {
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
