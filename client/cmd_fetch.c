/* cmd_fetch.c — `punch fetch ID`: download a job's weights and history into
 * a directory and draw its training curves (curves.svg). Every file is
 * written to a temporary name and renamed, so an interrupted fetch never
 * leaves a truncated weights file behind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "remote.h"
#include "svg.h"

const char cmd_fetch_usage[] =
    "usage: punch fetch ID [-o DIR] [--format safetensors|npz|both] [--onnx] [--all]\n"
    "\n"
    "Download the job's results into DIR (default: ./ID):\n"
    "  weights.safetensors, weights.npz   final weights (float32; keys like\n"
    "                                     0.dense.weight [in, out], 0.dense.bias)\n"
    "  history.json                       loss and metrics per epoch, test results\n"
    "  curves.svg                         loss and each metric per epoch, train and\n"
    "                                     validation (open it in a browser)\n"
    "\n"
    "  -o, --output DIR      where to write (created if missing)\n"
    "  -f, --format F        safetensors, npz or both (default both)\n"
    "      --onnx            also model.onnx: the model as ONNX, taking the raw inputs\n"
    "                        /predict takes and giving its outputs\n"
    "  -a, --all             also every other file of the run directory, under\n"
    "                        the same relative paths (checkpoints/, ensemble\n"
    "                        members, train.log, progress.jsonl, ...)\n"
    "\n"
    "A job still running has history but no weights yet: fetch writes what exists\n"
    "and exits 5. exit: 0 all fetched, 5 no such job or no results yet,\n"
    "9 cannot write DIR, 3/4 as usual.\n";

/* -o DIR: any path but an empty one. */
static int fetch_take_dir(const char *cmd, const char *value, void *dest, cli_error *err)
{
    if (value[0] == '\0')
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: -o wants a directory", cmd);
    *(const char **)dest = value;
    return 0;
}

static int fetch_take_format(const char *cmd, const char *value, void *dest, cli_error *err)
{
    fetch_format *format = dest;
    if (strcmp(value, "safetensors") == 0)
        *format = FETCH_SAFETENSORS;
    else if (strcmp(value, "npz") == 0)
        *format = FETCH_NPZ;
    else if (strcmp(value, "both") == 0)
        *format = FETCH_BOTH;
    else
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "%s: unknown format \"%s\"; expected safetensors, npz or both", cmd,
                        value);
    return 0;
}

int fetch_parse_args(int argc, char **argv, fetch_args *args, cli_error *err)
{
    *args = (fetch_args){.format = FETCH_BOTH};
    const cli_option options[] = {
        {.name = "output", .letter = 'o', .dest = &args->dir, .take = fetch_take_dir},
        {.name = "format", .letter = 'f', .dest = &args->format, .take = fetch_take_format},
        {.name = "all", .letter = 'a', .dest = &args->all},
        {.name = "onnx", .dest = &args->onnx},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

/* mkdir -p */
static int fetch_mkdirs(const char *dir, cli_error *err)
{
    char *path = strdup(dir);
    if (path == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    int rc = 0;
    for (char *p = path + 1; rc == 0; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot create %s: %s", path, strerror(errno));
        *p = saved;
        if (saved == '\0')
            break;
    }
    free(path);
    return rc;
}

/* A file being written: a temporary in the target directory, renamed onto
 * its final name by fetch_commit. */
typedef struct fetch_file {
    char *final_path;
    char *tmp_path;
    FILE *f;
} fetch_file;

static int fetch_open(const char *dir, const char *name, fetch_file *out, cli_error *err)
{
    *out = (fetch_file){0};
    if (asprintf(&out->final_path, "%s/%s", dir, name) < 0) {
        out->final_path = NULL;
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    }
    if (asprintf(&out->tmp_path, "%s/.%s.XXXXXX", dir, name) < 0) {
        out->tmp_path = NULL;
        free(out->final_path);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    }
    int fd = mkstemp(out->tmp_path);
    if (fd < 0 || fchmod(fd, 0644) != 0 || (out->f = fdopen(fd, "wb")) == NULL) {
        int saved = errno;
        if (fd >= 0) {
            close(fd);
            unlink(out->tmp_path);
        }
        free(out->final_path);
        free(out->tmp_path);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write in %s: %s", dir, strerror(saved));
    }
    return 0;
}

/* Finish the file: on ok, flush, sync and rename; otherwise (or if that
 * fails) remove the temporary. Returns ok's verdict, or the write error. */
static int fetch_close(fetch_file *file, int ok, cli_error *err)
{
    int rc = ok;
    if (rc == 0 && (fflush(file->f) != 0 || fsync(fileno(file->f)) != 0))
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", file->final_path,
                      strerror(errno));
    if (fclose(file->f) != 0 && rc == 0)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", file->final_path,
                      strerror(errno));
    if (rc == 0 && rename(file->tmp_path, file->final_path) != 0)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot rename onto %s: %s", file->final_path,
                      strerror(errno));
    if (rc != 0)
        unlink(file->tmp_path);
    free(file->final_path);
    free(file->tmp_path);
    return rc;
}

static int fetch_weights(httpc_client *c, const fetch_args *args, const char *dir,
                         const char *format, cli_error *err)
{
    char name[64];
    snprintf(name, sizeof name, "weights.%s", format);
    fetch_file file;
    if (fetch_open(dir, name, &file, err) != 0)
        return err->code;
    int rc = remote_job_weights(c, args->id, format, file.f, err);
    return fetch_close(&file, rc, err);
}

static int fetch_onnx(httpc_client *c, const fetch_args *args, const char *dir,
                      cli_error *err)
{
    fetch_file file;
    if (fetch_open(dir, "model.onnx", &file, err) != 0)
        return err->code;
    int rc = remote_job_export(c, args->id, file.f, err);
    return fetch_close(&file, rc, err);
}

static int fetch_history(const json_t *history, const char *dir, cli_error *err)
{
    fetch_file file;
    if (fetch_open(dir, "history.json", &file, err) != 0)
        return err->code;
    int rc = 0;
    if (json_dumpf(history, file.f, JSON_INDENT(2)) != 0 || fputc('\n', file.f) == EOF)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", file.final_path,
                      strerror(errno));
    return fetch_close(&file, rc, err);
}

static int fetch_curves(const json_t *history, const json_t *job, const char *dir,
                        cli_error *err)
{
    fetch_file file;
    if (fetch_open(dir, "curves.svg", &file, err) != 0)
        return err->code;
    char title[256];
    const char *name = json_string_value(json_object_get(job, "name"));
    const char *id = json_string_value(json_object_get(job, "id"));
    snprintf(title, sizeof title, "%s (%s)", name ? name : "job", id ? id : "?");
    int rc = 0;
    if (svg_write_curves(history, title, file.f) != 0)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", file.final_path,
                      strerror(errno));
    return fetch_close(&file, rc, err);
}

/* "  weights.npz  (1.2 MB)" */
static void fetch_report_file(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    double size = (double)st.st_size;
    if (size >= 1e6)
        printf("  %-20s %.1f MB\n", name, size / 1e6);
    else if (size >= 1e3)
        printf("  %-20s %.1f kB\n", name, size / 1e3);
    else
        printf("  %-20s %.0f B\n", name, size);
}

/* A path the server listed, safe to create under DIR: relative, no empty,
 * "." or ".." components (the server never lists such, but the client
 * does not write outside DIR on a server's word). */
static bool fetch_path_ok(const char *p)
{
    if (p[0] == '\0' || p[0] == '/')
        return false;
    for (const char *c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += n;
        if (*c == '/')
            c++;
    }
    return true;
}

/* --all: every listed file into DIR/PATH, each written atomically. */
static int fetch_all(httpc_client *c, const fetch_args *args, const char *dir, cli_error *err)
{
    json_t *listing = NULL;
    if (remote_job_files(c, args->id, &listing, err) != 0)
        return err->code;
    size_t i;
    json_t *f;
    int rc = 0, count = 0;
    json_array_foreach(json_object_get(listing, "files"), i, f) {
        const char *path = json_string_value(json_object_get(f, "path"));
        if (path == NULL || !fetch_path_ok(path)) {
            fprintf(stderr, "punch: fetch: skipping unsafe path \"%s\"\n", path ? path : "");
            continue;
        }
        char *sub = NULL, *full = NULL;
        const char *slash = strrchr(path, '/');
        if (asprintf(&full, "%s/%s", dir, path) < 0 ||
            asprintf(&sub, "%s/%.*s", dir, slash ? (int)(slash - path) : 0, path) < 0) {
            free(full);
            json_decref(listing);
            return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
        }
        char *last = strrchr(full, '/');
        rc = fetch_mkdirs(sub, err);
        fetch_file file;
        if (rc == 0 && (rc = fetch_open(sub, last + 1, &file, err)) == 0)
            rc = fetch_close(&file, remote_job_file(c, args->id, path, file.f, err), err);
        free(sub);
        free(full);
        if (rc != 0)
            break;
        count++;
    }
    if (rc == 0)
        printf("  %d files of the run directory\n", count);
    json_decref(listing);
    return rc;
}

static int fetch_run(httpc_client *c, const fetch_args *args, const char *dir, cli_error *err)
{
    json_t *job = NULL;
    if (remote_job_get(c, args->id, &job, err) != 0)
        return err->code;
    const char *state = json_string_value(json_object_get(job, "state"));
    int rc = fetch_mkdirs(dir, err);

    json_t *history = NULL;
    bool have_history = false;
    if (rc == 0) {
        rc = remote_job_history(c, args->id, &history, err);
        have_history = rc == 0;
        if (rc == PUNCH_EXIT_NOT_FOUND)
            rc = 0; /* no epoch finished; weights decide */
    }
    if (rc == 0 && have_history)
        rc = fetch_history(history, dir, err);
    if (rc == 0 && have_history)
        rc = fetch_curves(history, job, dir, err);

    static const char *const formats[] = {"safetensors", "npz"};
    bool have_weights = false;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!(args->format & (1 << i)))
            continue;
        rc = fetch_weights(c, args, dir, formats[i], err);
        have_weights = rc == 0;
    }
    if (rc == 0 && args->onnx)
        rc = fetch_onnx(c, args, dir, err);
    if (rc == PUNCH_EXIT_NOT_FOUND && state != NULL && !remote_state_is_final(state))
        cli_fail(err, rc, "job %s is %s: no weights yet%s — run punch wait %s, then fetch "
                 "again", args->id, state,
                 have_history ? " (fetched history.json and curves.svg so far)" : "",
                 args->id);
    else if (rc == PUNCH_EXIT_NOT_FOUND && state != NULL && strcmp(state, "succeeded") != 0)
        cli_fail(err, rc, "job %s ended %s and has no weights (they are written when training "
                 "ends normally)%s", args->id, state,
                 have_history ? "; fetched history.json and curves.svg" : "");
    if (args->all && (rc == 0 || rc == PUNCH_EXIT_NOT_FOUND)) {
        cli_error all_err = {0};
        int all_rc = fetch_all(c, args, dir, &all_err);
        if (all_rc != 0) {
            rc = all_rc;
            *err = all_err;
        }
    }
    if (rc == 0 || have_history) {
        printf("job %s (%s) into %s/:\n", args->id, state ? state : "?", dir);
        if (have_weights || rc == 0) {
            if (args->format & FETCH_SAFETENSORS)
                fetch_report_file(dir, "weights.safetensors");
            if (args->format & FETCH_NPZ)
                fetch_report_file(dir, "weights.npz");
            if (args->onnx)
                fetch_report_file(dir, "model.onnx");
        }
        if (have_history) {
            fetch_report_file(dir, "history.json");
            fetch_report_file(dir, "curves.svg");
        }
        const json_t *test = json_object_get(history, "test");
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)test, key, v) {
            if (json_is_integer(v)) /* "samples": a count, not a metric */
                printf("  test %s %" JSON_INTEGER_FORMAT "\n", key, json_integer_value(v));
            else if (json_is_real(v))
                printf("  test %s %.4f\n", key, json_real_value(v));
        }
    }
    json_decref(history);
    json_decref(job);
    return rc;
}

int cmd_fetch(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    fetch_args args;
    if (fetch_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    /* The default directory is the id; an id with a slash (ids are opaque)
     * must not walk elsewhere. */
    if (args.dir == NULL && (strchr(args.id, '/') != NULL || args.id[0] == '.'))
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "fetch: \"%s\" cannot name a directory; pass -o DIR", args.id);
    /* "-o results/" is results: its trailing slashes would double in every
     * path printed ("results//weights.npz"). */
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", args.dir ? args.dir : args.id) >= (int)sizeof dir)
        return cli_fail(err, PUNCH_EXIT_USAGE, "fetch: -o: directory name too long");
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
        dir[n - 1] = '\0';
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    int rc = fetch_run(client, &args, dir, err);
    httpc_client_free(client);
    return rc;
}
