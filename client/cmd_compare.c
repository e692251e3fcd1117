/* cmd_compare.c — `punch compare ID ID...`: two to eight jobs side by side,
 * the fields of their specs (as their users wrote them) that differ, as
 * flattened JSON paths, then each job's state and final metrics (the last
 * epoch of its history.json, and its test results). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "jobtext.h"
#include "remote.h"
#include "safetext.h"

const char cmd_compare_usage[] =
    "usage: punch compare ID ID [ID...]\n"
    "\n"
    "Compare 2 to 8 jobs (a short prefix of an id will do): the spec fields that\n"
    "differ between them, one row per flattened path (training.optimizer.\n"
    "learning_rate, model.layers[0].units; \"-\" where a spec lacks it), then each\n"
    "job's state and final metrics: the last epoch's loss, accuracy and val_*,\n"
    "and the test set's results (\"-\" before the first epoch).\n"
    "\n"
    "exit: 0 compared, 2 usage, 3 unreachable, 4 auth, 5 unknown job.\n";

/* A cell is cut to this many bytes, so one long value keeps the table readable. */
enum { COMPARE_CELL_MAX = 40 };
/* Per-epoch series that are not results. */
static const char *const compare_not_metrics[] = {"lr", "epoch_time_s", "samples_per_s", NULL};

int compare_parse_args(int argc, char **argv, compare_args *args, cli_error *err)
{
    *args = (compare_args){0};
    const cli_option options[] = {{0}};
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    int n = argc - optind;
    if (n < COMPARE_MIN || n > COMPARE_MAX)
        return cli_fail(err, PUNCH_EXIT_USAGE, "compare: expected %d to %d job ids, got %d; see "
                        "punch compare --help", COMPARE_MIN, COMPARE_MAX, n);
    for (int i = 0; i < n; i++) {
        if (argv[optind + i][0] == '\0')
            return cli_fail(err, PUNCH_EXIT_USAGE, "compare: empty job id");
        args->ids[i] = argv[optind + i];
    }
    args->n = n;
    return 0;
}

/* One compared job: its API object, written spec and history (NULL: none yet). */
typedef struct compare_job {
    json_t *job;
    json_t *spec;
    json_t *history;
    json_t *flat; /* path → leaf value of spec */
} compare_job;

static void compare_job_clear(compare_job *j)
{
    json_decref(j->job);
    json_decref(j->spec);
    json_decref(j->history);
    json_decref(j->flat);
    *j = (compare_job){0};
}

/* Every leaf of v (a scalar, or an empty object or array) into flat under
 * its path: "a.b", "a[2].c". */
static bool compare_flatten(const json_t *v, const char *path, json_t *flat)
{
    char sub[512];
    if (json_is_object(v) && json_object_size(v) > 0) {
        const char *key;
        json_t *child;
        json_object_foreach((json_t *)v, key, child) {
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
            if (!compare_flatten(child, sub, flat))
                return false;
        }
        return true;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *child;
        json_array_foreach(v, i, child) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!compare_flatten(child, sub, flat))
                return false;
        }
        return true;
    }
    return json_object_set(flat, path, (json_t *)v) == 0;
}

/* The job (a prefix resolved by the server), its spec and its history. */
static int compare_fetch(httpc_client *c, const char *given, compare_job *j, cli_error *err)
{
    if (remote_job_get(c, given, &j->job, err) != 0)
        return err->code;
    const char *id = json_string_value(json_object_get(j->job, "id"));
    if (!id)
        return cli_fail(err, PUNCH_EXIT_SERVER, "job %s: the server sent no id", given);
    char *text = NULL;
    size_t len = 0;
    if (remote_job_spec(c, id, &text, &len, err) != 0)
        return err->code;
    json_error_t jerr;
    j->spec = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!json_is_object(j->spec))
        return cli_fail(err, PUNCH_EXIT_SERVER, "job %s: its spec is not a JSON object (%s)", id,
                        jerr.text);
    j->flat = json_object();
    if (!j->flat || !compare_flatten(j->spec, "", j->flat))
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    cli_error none = {0};
    /* No history yet (queued, or before its first epoch): no metrics, not an error. */
    if (remote_job_history(c, id, &j->history, &none) != 0 && none.code != PUNCH_EXIT_NOT_FOUND) {
        *err = none;
        return err->code;
    }
    return 0;
}

/* A leaf as a cell: strings bare (made safe for a terminal), the rest as
 * compact JSON, "-" when absent; cut to COMPARE_CELL_MAX. */
static void compare_cell(const json_t *v, char *buf, size_t len)
{
    if (!v) {
        snprintf(buf, len, "-");
    } else if (json_is_string(v)) {
        snprintf(buf, len, "%s", json_string_value(v));
    } else if (json_is_real(v)) {
        snprintf(buf, len, "%.6g", json_real_value(v));
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(buf, len, "%s", s ? s : "?");
        free(s);
    }
    safetext_clean(buf);
    if (strlen(buf) > COMPARE_CELL_MAX)
        snprintf(buf + COMPARE_CELL_MAX - 3, len - (COMPARE_CELL_MAX - 3), "...");
}

/* A table: rows[r][0] the label, rows[r][1..n] the cells. */
typedef struct compare_table {
    char (*cells)[COMPARE_MAX + 1][COMPARE_CELL_MAX + 1];
    size_t n_rows, cap;
    int n_cols;
} compare_table;

static char (*compare_row(compare_table *t))[COMPARE_CELL_MAX + 1]
{
    if (t->n_rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        void *grown = realloc(t->cells, cap * sizeof *t->cells);
        if (!grown)
            return NULL;
        t->cells = grown;
        t->cap = cap;
    }
    memset(t->cells[t->n_rows], 0, sizeof t->cells[0]);
    return t->cells[t->n_rows++];
}

/* The label column padded to the widest, each job's column too. */
static void compare_print(const compare_table *t, size_t from, size_t to, FILE *out)
{
    int width[COMPARE_MAX + 1] = {0};
    for (size_t r = 0; r < t->n_rows; r++)
        for (int c = 0; c <= t->n_cols; c++) {
            int w = (int)strlen(t->cells[r][c]);
            width[c] = w > width[c] ? w : width[c];
        }
    for (size_t r = from; r < to; r++) {
        for (int c = 0; c < t->n_cols; c++)
            fprintf(out, "%-*s  ", width[c], t->cells[r][c]);
        fprintf(out, "%s\n", t->cells[r][t->n_cols]);
    }
}

/* The rows of the spec paths whose values differ (or are missing in some). */
static bool compare_spec_rows(const compare_job *jobs, int n, compare_table *t)
{
    json_t *paths = json_object(); /* union, in first-seen order */
    if (!paths)
        return false;
    for (int i = 0; i < n; i++) {
        const char *path;
        json_t *v;
        json_object_foreach(jobs[i].flat, path, v)
            json_object_set_new(paths, path, json_null());
    }
    const char *path;
    json_t *unused;
    bool ok = true;
    json_object_foreach(paths, path, unused) {
        const json_t *first = json_object_get(jobs[0].flat, path);
        bool same = true;
        for (int i = 1; i < n && same; i++) {
            const json_t *v = json_object_get(jobs[i].flat, path);
            same = first && v && json_equal((json_t *)first, (json_t *)v);
        }
        if (same)
            continue;
        char (*row)[COMPARE_CELL_MAX + 1] = compare_row(t);
        if (!(ok = row != NULL))
            break;
        snprintf(row[0], sizeof row[0], "%s", path);
        safetext_clean(row[0]);
        for (int i = 0; i < n; i++)
            compare_cell(json_object_get(jobs[i].flat, path), row[i + 1], sizeof row[i + 1]);
    }
    json_decref(paths);
    return ok;
}

/* A history's final value of a per-epoch series (NULL: none). */
static const json_t *compare_last(const json_t *history, const char *key)
{
    const json_t *a = json_object_get(history, key);
    size_t n = json_array_size(a);
    const json_t *v = n ? json_array_get(a, n - 1) : NULL;
    return json_is_number(v) ? v : NULL;
}

static bool compare_is_metric(const char *key, const json_t *series)
{
    for (const char *const *k = compare_not_metrics; *k; k++)
        if (strcmp(*k, key) == 0)
            return false;
    return json_is_array(series) && json_is_number(json_array_get(series, 0));
}

/* One row of a result: label, then each job's value from get. */
static bool compare_metric_row(const compare_job *jobs, int n, compare_table *t, const char *label,
                               const json_t *(*get)(const compare_job *, const char *),
                               const char *key)
{
    char (*row)[COMPARE_CELL_MAX + 1] = compare_row(t);
    if (!row)
        return false;
    snprintf(row[0], sizeof row[0], "%s", label);
    safetext_clean(row[0]);
    for (int i = 0; i < n; i++)
        compare_cell(get(&jobs[i], key), row[i + 1], sizeof row[i + 1]);
    return true;
}

static const json_t *compare_get_job(const compare_job *j, const char *key)
{
    return json_object_get(j->job, key);
}

static const json_t *compare_get_last(const compare_job *j, const char *key)
{
    return compare_last(j->history, key);
}

static const json_t *compare_get_test(const compare_job *j, const char *key)
{
    const json_t *v = json_object_get(json_object_get(j->history, "test"), key);
    return json_is_number(v) ? v : NULL;
}

/* The result rows: state, epochs run, each metric series' last value (in
 * the first history's order), then test_*. */
static bool compare_result_rows(const compare_job *jobs, int n, compare_table *t)
{
    bool ok = compare_metric_row(jobs, n, t, "state", compare_get_job, "state");
    char (*row)[COMPARE_CELL_MAX + 1] = ok ? compare_row(t) : NULL;
    if (!(ok = row != NULL))
        return false;
    snprintf(row[0], sizeof row[0], "epochs");
    for (int i = 0; i < n; i++) {
        const json_t *loss = json_object_get(jobs[i].history, "loss");
        if (json_is_array(loss))
            snprintf(row[i + 1], sizeof row[i + 1], "%zu", json_array_size(loss));
        else
            snprintf(row[i + 1], sizeof row[i + 1], "-");
    }
    json_t *keys = json_object(), *tests = json_object();
    ok = keys && tests;
    for (int i = 0; ok && i < n; i++) {
        const char *key;
        json_t *v;
        json_object_foreach(jobs[i].history, key, v)
            if (compare_is_metric(key, v))
                json_object_set_new(keys, key, json_null());
        json_object_foreach(json_object_get(jobs[i].history, "test"), key, v)
            if (json_is_number(v) && strcmp(key, "samples") != 0)
                json_object_set_new(tests, key, json_null());
    }
    const char *key;
    json_t *unused;
    json_object_foreach(keys, key, unused)
        ok = ok && compare_metric_row(jobs, n, t, key, compare_get_last, key);
    json_object_foreach(tests, key, unused) {
        char label[COMPARE_CELL_MAX + 1];
        snprintf(label, sizeof label, "test_%s", key);
        ok = ok && compare_metric_row(jobs, n, t, label, compare_get_test, key);
    }
    json_decref(keys);
    json_decref(tests);
    return ok;
}

static int compare_report(const compare_job *jobs, int n, cli_error *err)
{
    compare_table t = {.n_cols = n};
    char (*head)[COMPARE_CELL_MAX + 1] = compare_row(&t);
    bool ok = head != NULL;
    if (ok) {
        snprintf(head[0], sizeof head[0], "FIELD");
        for (int i = 0; i < n; i++)
            compare_cell(json_object_get(jobs[i].job, "id"), head[i + 1], sizeof head[i + 1]);
    }
    ok = ok && compare_spec_rows(jobs, n, &t);
    size_t spec_end = t.n_rows;
    ok = ok && compare_result_rows(jobs, n, &t);
    if (ok) {
        compare_print(&t, 0, spec_end, stdout);
        if (spec_end == 1)
            fputs("(the specs are the same)\n", stdout);
        fputc('\n', stdout);
        snprintf(t.cells[0][0], sizeof t.cells[0][0], "RESULT");
        compare_print(&t, 0, 1, stdout);
        compare_print(&t, spec_end, t.n_rows, stdout);
    }
    free(t.cells);
    return ok ? 0 : cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
}

int cmd_compare(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    compare_args args;
    if (compare_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    compare_job jobs[COMPARE_MAX] = {0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < args.n; i++)
        rc = compare_fetch(client, args.ids[i], &jobs[i], err);
    if (rc == 0)
        rc = compare_report(jobs, args.n, err);
    for (int i = 0; i < args.n; i++)
        compare_job_clear(&jobs[i]);
    httpc_client_free(client);
    return rc;
}
