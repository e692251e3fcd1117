/* cmd_sweep.c — `punch sweep submit FILE | list | status ID | cancel ID |
 * best ID`: hyperparameter sweeps (/api/v1/sweeps; docs/sweeps.md). status
 * prints the trials sorted by metric under a progress bar for the sweep. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "io/io_file.h"
#include "remote.h"

/* A sweep request is a job spec and a search: a megabyte is plenty. */
#define SWEEP_FILE_MAX (1 << 20)

const char cmd_sweep_usage[] =
    "usage: punch sweep submit FILE\n"
    "       punch sweep list\n"
    "       punch sweep status ID\n"
    "       punch sweep cancel ID\n"
    "       punch sweep best ID\n"
    "\n"
    "Hyperparameter sweeps: one id for many trials, each an ordinary job of yours.\n"
    "FILE is {\"name\", \"job\": SPEC, \"search\": {\"method\": grid|random|asha|pbt,\n"
    "\"parameters\": {PATH: {\"values\": [...]} | {\"uniform\"|\"loguniform\"|\"int\": [a, b]}},\n"
    "\"metric\", \"mode\", \"max_concurrent\", ...}} (docs/sweeps.md).\n"
    "  submit  check every trial's spec on the server and start the sweep\n"
    "  list    your sweeps: id, state, method, trials done, best metric\n"
    "  status  a progress bar, then the trials sorted by metric (best first);\n"
    "          under pbt, FROM: the generation and job of a trial's last exploit\n"
    "  cancel  cancel the sweep and every queued or running trial\n"
    "  best    the best trial: its job, metric and parameters\n"
    "\n"
    "exit: 0 done, 2 usage or the server refused the request, 5 no such sweep,\n"
    "6 refused (already ended), 9 cannot read FILE, 3/4 as usual.\n";

static int sweep_submit(const cli_ctx *ctx, const char *file, cli_error *err)
{
    unsigned char *text = NULL;
    size_t len = 0;
    char why[512];
    if (io_read_file_or_pipe(file, SWEEP_FILE_MAX, &text, &len, why, sizeof why) != 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "%s", why);
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL) {
        free(text);
        return err->code;
    }
    json_t *o = NULL;
    int rc = remote_sweep(client, "POST", NULL, (const char *)text, len, 201, &o, err);
    free(text);
    httpc_client_free(client);
    if (rc == 0)
        printf("sweep %s submitted; punch sweep status %s follows it\n",
               json_string_value(json_object_get(o, "id")),
               json_string_value(json_object_get(o, "id")));
    json_decref(o);
    return rc;
}

/* A metric for a table cell: "-" when there is none. */
static void sweep_metric(const json_t *m, char *buf, size_t cap)
{
    if (json_is_number(m))
        snprintf(buf, cap, "%.6g", json_number_value(m));
    else
        snprintf(buf, cap, "-");
}

static int sweep_list(const cli_ctx *ctx, cli_error *err)
{
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *o = NULL;
    int rc = remote_sweep(client, "GET", NULL, NULL, 0, 200, &o, err);
    httpc_client_free(client);
    if (rc == 0) {
        printf("%-12s  %-10s  %-6s  %-9s  %-12s  %s\n", "ID", "STATE", "METHOD", "TRIALS",
               "BEST", "NAME");
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(o, "sweeps"), i, s) {
            char trials[32], best[32];
            snprintf(trials, sizeof trials, "%lld/%lld",
                     (long long)json_integer_value(json_object_get(s, "trials_done")),
                     (long long)json_integer_value(json_object_get(s, "trials_total")));
            sweep_metric(json_object_get(json_object_get(s, "best"), "metric"), best,
                         sizeof best);
            printf("%-12s  %-10s  %-6s  %-9s  %-12s  %s\n",
                   json_string_value(json_object_get(s, "id")),
                   json_string_value(json_object_get(s, "state")),
                   json_string_value(json_object_get(s, "method")), trials, best,
                   json_string_value(json_object_get(s, "name")));
        }
    }
    json_decref(o);
    return rc;
}

static bool sweep_maximize;

/* Trials with a metric first, best first (more epochs first under ASHA). */
static int sweep_cmp(const void *pa, const void *pb)
{
    const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
    const json_t *ma = json_object_get(a, "metric"), *mb = json_object_get(b, "metric");
    if (json_is_number(ma) != json_is_number(mb))
        return json_is_number(ma) ? -1 : 1;
    json_int_t ea = json_integer_value(json_object_get(a, "epochs_run"));
    json_int_t eb = json_integer_value(json_object_get(b, "epochs_run"));
    if (ea != eb)
        return ea > eb ? -1 : 1;
    double x = json_number_value(ma), y = json_number_value(mb);
    if (x == y)
        return 0;
    return (x > y) == sweep_maximize ? -1 : 1;
}

/* PBT: "G:JOB" of a trial's last exploit (generation and donor), or "-". */
static void sweep_last_exploit(const json_t *lineage, char *buf, size_t cap)
{
    snprintf(buf, cap, "-");
    size_t i;
    const json_t *x;
    json_array_foreach(lineage, i, x) {
        const char *from = json_string_value(json_object_get(x, "from_job"));
        if (from)
            snprintf(buf, cap, "%lld:%.12s",
                     (long long)json_integer_value(json_object_get(x, "generation")), from);
    }
}

static void sweep_print_status(const json_t *s)
{
    long long total = json_integer_value(json_object_get(s, "trials_total"));
    long long done = json_integer_value(json_object_get(s, "trials_done"));
    int width = 30, fill = total > 0 ? (int)(done * width / total) : 0;
    printf("sweep %s (%s): %s, %s on %s (%s)\n", json_string_value(json_object_get(s, "id")),
           json_string_value(json_object_get(s, "name")),
           json_string_value(json_object_get(s, "state")),
           json_string_value(json_object_get(s, "method")),
           json_string_value(json_object_get(s, "metric")),
           json_string_value(json_object_get(s, "mode")));
    printf("[%.*s%*s] %lld/%lld trials done, %lld running\n", fill,
           "##############################", width - fill, "", done, total,
           (long long)json_integer_value(json_object_get(s, "trials_running")));
    json_t *trials = json_object_get(s, "trials");
    size_t n = json_array_size(trials);
    const json_t **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(trials, i);
    const char *mode = json_string_value(json_object_get(s, "mode"));
    sweep_maximize = mode && strcmp(mode, "max") == 0;
    qsort(v, n, sizeof *v, sweep_cmp);
    const char *method = json_string_value(json_object_get(s, "method"));
    bool pbt = method && strcmp(method, "pbt") == 0;
    printf("%-12s  %-10s  %6s  %-12s  %s%s\n", "JOB", "STATE", "EPOCHS", "METRIC",
           pbt ? "FROM             " : "", "PARAMS");
    for (size_t i = 0; i < n; i++) {
        char metric[32];
        sweep_metric(json_object_get(v[i], "metric"), metric, sizeof metric);
        char *params = json_dumps(json_object_get(v[i], "params"), JSON_COMPACT | JSON_REAL_PRECISION(6));
        const char *job = json_string_value(json_object_get(v[i], "job"));
        printf("%-12s  %-10s  %6lld  %-12s  ", job ? job : "-",
               json_string_value(json_object_get(v[i], "state")),
               (long long)json_integer_value(json_object_get(v[i], "epochs_run")), metric);
        if (pbt) {
            char from[32];
            sweep_last_exploit(json_object_get(v[i], "pbt"), from, sizeof from);
            printf("%-17s", from);
        }
        printf("%s\n", params ? params : "");
        free(params);
    }
    free(v);
}

static int sweep_one(const cli_ctx *ctx, const char *method, const char *id, const char *what,
                     cli_error *err)
{
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *s = NULL;
    int rc = remote_sweep(client, method, id, NULL, 0, 200, &s, err);
    httpc_client_free(client);
    if (rc == 0 && strcmp(what, "best") == 0) {
        const json_t *best = json_object_get(s, "best");
        if (!json_is_object(best)) {
            rc = cli_fail(err, PUNCH_EXIT_NOT_FOUND, "sweep %s has no trial with a metric yet",
                          id);
        } else {
            char metric[32];
            sweep_metric(json_object_get(best, "metric"), metric, sizeof metric);
            char *params = json_dumps(json_object_get(best, "params"), JSON_COMPACT | JSON_REAL_PRECISION(6));
            printf("job %s  %s %s  params %s\n", json_string_value(json_object_get(best, "job")),
                   json_string_value(json_object_get(s, "metric")), metric, params ? params : "");
            free(params);
        }
    } else if (rc == 0 && strcmp(what, "cancel") == 0) {
        printf("sweep %s cancelled\n", id);
    } else if (rc == 0) {
        sweep_print_status(s);
    }
    json_decref(s);
    return rc;
}

int cmd_sweep(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    const cli_option no_options[] = {{0}};
    if (cli_parse_options(argc, argv, no_options, err) != 0)
        return err->code;
    int n = argc - optind;
    const char *sub = n > 0 ? argv[optind] : "";
    const char *arg = n == 2 ? argv[optind + 1] : NULL;
    if (strcmp(sub, "submit") == 0 && arg)
        return sweep_submit(ctx, arg, err);
    if (strcmp(sub, "list") == 0 && n == 1)
        return sweep_list(ctx, err);
    if (strcmp(sub, "status") == 0 && arg)
        return sweep_one(ctx, "GET", arg, "status", err);
    if (strcmp(sub, "best") == 0 && arg)
        return sweep_one(ctx, "GET", arg, "best", err);
    if (strcmp(sub, "cancel") == 0 && arg)
        return sweep_one(ctx, "DELETE", arg, "cancel", err);
    return cli_fail(err, PUNCH_EXIT_USAGE, "sweep: want submit FILE, list, status ID, cancel ID "
                                           "or best ID (see punch sweep --help)");
}
