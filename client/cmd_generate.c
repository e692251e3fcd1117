/* cmd_generate.c — `punch generate ID PROMPT [...]`: a language model's
 * continuation of PROMPT (POST /api/v1/jobs/ID/generate). The numbers are
 * checked for form here; their bounds (max_new_tokens against the
 * server's generate_max_tokens, ...) are the server's, which names the
 * field it refuses. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "remote.h"

const char cmd_generate_usage[] =
    "usage: punch generate ID PROMPT [--max-new-tokens N] [--temperature T]\n"
    "                      [--top-k K] [--seed S] [--json]\n"
    "\n"
    "Continue PROMPT with job ID's language model (a job trained on data.format\n"
    "\"text\"), one token at a time, and print PROMPT followed by the new text.\n"
    "Bytes a byte-level model makes that are not UTF-8 print as U+FFFD.\n"
    "\n"
    "  --max-new-tokens N    tokens to generate (default 64; the server's\n"
    "                        generate_max_tokens bounds it, 512 by default)\n"
    "  --temperature T       0 picks the most probable token every step; above 1\n"
    "                        flattens the distribution, below 1 sharpens it (default 1)\n"
    "  --top-k K             draw among the K most probable tokens (default 0: all)\n"
    "  --seed S              the same seed gives the same text (default 0)\n"
    "  --json                print the server's reply: {\"text\", \"tokens\"}\n"
    "\n"
    "exit: 0 printed, 2 a bad option or a prompt the model cannot read (a character\n"
    "outside its vocabulary), 5 no such job, 6 not a finished language model, 3/4 as\n"
    "usual.\n";

typedef struct generate_args {
    const char *max_new, *temperature, *top_k, *seed;
    bool json;
} generate_args;

/* A non-negative integer option into *out (kept when the option was not
 * given). */
static int generate_integer(const char *name, const char *v, long long *out, cli_error *err)
{
    if (!v)
        return 0;
    errno = 0;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < 0)
        return cli_fail(err, PUNCH_EXIT_USAGE, "generate: --%s wants a whole number >= 0, "
                        "got \"%s\"", name, v);
    *out = n;
    return 0;
}

/* The request's JSON text, or NULL after a usage error in *err. */
static char *generate_request(const char *prompt, const generate_args *a, cli_error *err)
{
    long long max_new = -1, top_k = -1, seed = -1;
    double temp = -1.0;
    if (generate_integer("max-new-tokens", a->max_new, &max_new, err) != 0 ||
        generate_integer("top-k", a->top_k, &top_k, err) != 0 ||
        generate_integer("seed", a->seed, &seed, err) != 0)
        return NULL;
    if (a->temperature) {
        char *end = NULL;
        errno = 0;
        temp = strtod(a->temperature, &end);
        if (errno || end == a->temperature || *end || !isfinite(temp) || temp < 0) {
            cli_fail(err, PUNCH_EXIT_USAGE, "generate: --temperature wants a number >= 0, "
                     "got \"%s\"", a->temperature);
            return NULL;
        }
    }
    json_t *o = json_pack("{s:s}", "prompt", prompt);
    if (o && max_new >= 0)
        json_object_set_new(o, "max_new_tokens", json_integer(max_new));
    if (o && top_k >= 0)
        json_object_set_new(o, "top_k", json_integer(top_k));
    if (o && seed >= 0)
        json_object_set_new(o, "seed", json_integer(seed));
    if (o && temp >= 0)
        json_object_set_new(o, "temperature", json_real(temp));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        cli_fail(err, PUNCH_EXIT_USAGE, "generate: the prompt is not valid UTF-8");
    return text;
}

int cmd_generate(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    generate_args a = {0};
    const cli_option options[] = {
        {.name = "max-new-tokens", .dest = &a.max_new, .take = cli_take_string},
        {.name = "temperature", .dest = &a.temperature, .take = cli_take_string},
        {.name = "top-k", .dest = &a.top_k, .take = cli_take_string},
        {.name = "seed", .dest = &a.seed, .take = cli_take_string},
        {.name = "json", .dest = &a.json},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (argc - optind != 2 || argv[optind + 1][0] == '\0')
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "generate: want a job id and a non-empty prompt (see punch generate "
                        "--help)");
    const char *id = argv[optind], *prompt = argv[optind + 1];
    char *request = generate_request(prompt, &a, err);
    if (!request)
        return err->code;
    json_t *reply = NULL;
    httpc_client *client = remote_open(ctx, err);
    int rc = client ? remote_job_generate(client, id, request, &reply, err) : err->code;
    const char *text = json_string_value(json_object_get(reply, "text"));
    if (rc == 0 && !text)
        rc = cli_fail(err, PUNCH_EXIT_SERVER, "generating: the reply has no \"text\"");
    if (rc == 0 && a.json) {
        char *doc = json_dumps(reply, JSON_COMPACT);
        if (doc)
            puts(doc);
        free(doc);
    } else if (rc == 0) {
        size_t n = json_string_length(json_object_get(reply, "text"));
        fputs(prompt, stdout);
        fwrite(text, 1, n, stdout);
        if (n == 0 || text[n - 1] != '\n')
            putchar('\n');
    }
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write the text: %s", strerror(errno));
    json_decref(reply);
    free(request);
    httpc_client_free(client);
    return rc;
}
