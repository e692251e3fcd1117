/* cmd_profile.c — `punch profile ID`: the profile.json a job with
 * training.profile writes at the end of training (engine/model/profile.c:
 * per layer forward and backward times, per step phase), fetched through
 * the run-directory file route and printed as a table, or as it is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "remote.h"

const char cmd_profile_usage[] =
    "usage: punch profile ID [--json]\n"
    "\n"
    "Show where a job's training steps spent their time: the profile.json it\n"
    "wrote when it was submitted with \"training\": {\"profile\": true}. Per layer\n"
    "(index and type) the forward and backward time of a step (mean, max and total\n"
    "in ms; backward includes the layer's optimizer update), then the step's phases\n"
    "(load, forward, loss, backward).\n"
    "\n"
    "  --json    print profile.json as the job wrote it\n"
    "\n"
    "exit: 0 shown, 5 no such job or no profile.json (not profiled, or still\n"
    "running), 3/4 as usual.\n";

int profile_parse_args(int argc, char **argv, profile_args *args, cli_error *err)
{
    *args = (profile_args){0};
    const cli_option options[] = {
        {.name = "json", .dest = &args->json},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

/* One "mean max total" triple of milliseconds; dashes where the file has
 * none (a profile written by another version). */
static void profile_print_stat(const json_t *stat, FILE *out)
{
    static const char *const keys[] = {"mean", "max", "total"};
    for (int k = 0; k < 3; k++) {
        const json_t *v = json_object_get(stat, keys[k]);
        if (json_is_number(v))
            fprintf(out, " %10.3f", json_number_value(v));
        else
            fprintf(out, " %10s", "-");
    }
}

int profile_print_table(const char *id, const json_t *profile, FILE *out)
{
    const json_t *layers = json_object_get(profile, "layers");
    const json_t *steps = json_object_get(profile, "step_ms");
    if (!json_is_array(layers) || !json_is_object(steps))
        return -1;
    const json_t *n = json_object_get(profile, "steps");
    fprintf(out, "job %s: ", id);
    if (json_is_integer(n))
        fprintf(out, "%" JSON_INTEGER_FORMAT " training steps profiled; ",
                json_integer_value(n));
    fprintf(out, "times in ms\n\n");
    fprintf(out, "%5s  %-10s %10s %10s %10s %10s %10s %10s\n", "layer", "type", "fwd mean",
            "fwd max", "fwd total", "bwd mean", "bwd max", "bwd total");
    size_t i;
    const json_t *layer;
    json_array_foreach(layers, i, layer) {
        const json_t *index = json_object_get(layer, "index");
        const char *type = json_string_value(json_object_get(layer, "type"));
        fprintf(out, "%5" JSON_INTEGER_FORMAT "  %-10s",
                json_is_integer(index) ? json_integer_value(index) : (json_int_t)i,
                type ? type : "?");
        profile_print_stat(json_object_get(layer, "forward_ms"), out);
        profile_print_stat(json_object_get(layer, "backward_ms"), out);
        fputc('\n', out);
    }
    fprintf(out, "\n%-17s %10s %10s %10s\n", "step phase", "mean", "max", "total");
    const char *phase;
    const json_t *stat;
    json_object_foreach((json_t *)steps, phase, stat) {
        fprintf(out, "%-17s", phase);
        profile_print_stat(stat, out);
        fputc('\n', out);
    }
    return ferror(out) ? -1 : 0;
}

/* profile.json into a buffer (*text, *len; the caller frees *text). A 404
 * is the job's lack of a profile (the job itself was found before), said
 * so with what to do. */
static int profile_download(httpc_client *c, const char *id, const json_t *job, char **text,
                            size_t *len, cli_error *err)
{
    *text = NULL;
    FILE *sink = open_memstream(text, len);
    if (sink == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory: %s", strerror(errno));
    int rc = remote_job_file(c, id, "profile.json", sink, err);
    if (fclose(sink) != 0 && rc == 0)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory: %s", strerror(errno));
    if (rc == PUNCH_EXIT_NOT_FOUND) {
        const char *state = json_string_value(json_object_get(job, "state"));
        if (state && !remote_state_is_final(state))
            cli_fail(err, rc, "job %s is %s: profile.json is written when training ends "
                     "(if it was submitted with training.profile: true) — run punch wait %s, "
                     "then punch profile %s", id, state, id, id);
        else
            cli_fail(err, rc, "job %s has no profile.json: submit it with "
                     "training.profile: true", id);
    }
    if (rc != 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

static int profile_show(httpc_client *c, const profile_args *args, cli_error *err)
{
    json_t *job = NULL;
    if (remote_job_get(c, args->id, &job, err) != 0)
        return err->code;
    char *text = NULL;
    size_t len = 0;
    int rc = profile_download(c, args->id, job, &text, &len, err);
    json_decref(job);
    if (rc != 0)
        return rc;
    if (args->json) {
        if (fwrite(text, 1, len, stdout) != len)
            rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write: %s", strerror(errno));
        free(text);
        return rc;
    }
    json_error_t jerr;
    json_t *profile = json_loadb(text, len, 0, &jerr);
    free(text);
    if (profile == NULL || profile_print_table(args->id, profile, stdout) != 0)
        rc = cli_fail(err, PUNCH_EXIT_SERVER, "job %s's profile.json is not a profile (%s)",
                      args->id, profile ? "no layers or step_ms" : jerr.text);
    json_decref(profile);
    return rc;
}

int cmd_profile(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    profile_args args;
    if (profile_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    int rc = profile_show(client, &args, err);
    httpc_client_free(client);
    return rc;
}
