/* cmd_data.c — `punch data push FILE [NAME] | list | rm NAME`: the caller's
 * uploaded datasets (/api/v1/datasets). push streams the file (never read
 * whole into memory), with a progress bar on a terminal for large files,
 * and compares the SHA-256 it computed with the server's. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "crypto/sha256.h"
#include "io/io_file.h"
#include "remote.h"

/* Files under this many bytes go up without a progress bar. */
#define DATA_BAR_MIN (1LL << 20)

const char cmd_data_usage[] =
    "usage: punch data push FILE [NAME]\n"
    "       punch data list [--site]\n"
    "       punch data rm NAME\n"
    "\n"
    "Your datasets on the server, for jobs to name as \"@NAME\" (data.train,\n"
    "data.test, data.validation; training.init_from.dataset).\n"
    "  push   upload FILE as NAME (default: FILE's base name; [A-Za-z0-9._-], up to\n"
    "         64): .npz (np.savez), CSV, IDX (gzipped or not), CIFAR-10 batches,\n"
    "         .safetensors/.npz weights, or an ONNX model NAME.onnx (\"model\":\n"
    "         \"@NAME.onnx\"). The server checks the format; the same name\n"
    "         replaces the old upload. Prints the SHA-256 computed here and the\n"
    "         server's (exit 6 if they differ).\n"
    "  list   your uploads: name, format, size, records, SHA-256, and your quota;\n"
    "         --site: the datasets the admin installed, as a job names them\n"
    "         (\"fashion-mnist/train\"), with their format, records and shapes\n"
    "  rm     delete one (refused while a queued or running job uses it)\n"
    "\n"
    "exit: 0 done, 2 usage or the server refused the file, 5 no such dataset, 6\n"
    "refused (in use, quota) or SHA-256 mismatch, 9 cannot read FILE, 3/4 as usual.\n";

static void data_size(long long bytes, char *buf, size_t len)
{
    if (bytes >= 1000000000LL)
        snprintf(buf, len, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1000000)
        snprintf(buf, len, "%.1f MB", bytes / 1e6);
    else if (bytes >= 1000)
        snprintf(buf, len, "%.1f kB", bytes / 1e3);
    else
        snprintf(buf, len, "%lld B", bytes);
}

typedef struct data_bar {
    const char *name;
    int last_pct;
} data_bar;

static void data_progress(void *ctx, long long done, long long total)
{
    data_bar *b = ctx;
    int pct = total > 0 ? (int)(done * 100 / total) : 0;
    if (pct == b->last_pct)
        return;
    b->last_pct = pct;
    char d[32], t[32], bar[41];
    data_size(done, d, sizeof d);
    data_size(total, t, sizeof t);
    int fill = pct * 40 / 100;
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(40 - fill));
    bar[40] = 0;
    fprintf(stderr, "\r%s [%s] %3d%% %s / %s", b->name, bar, pct, d, t);
    if (done >= total)
        fputc('\n', stderr);
    fflush(stderr);
}

static int data_sha256_file(FILE *f, char hex[65], cli_error *err, const char *path)
{
    sha256_ctx ctx;
    if (!sha256_init(&ctx))
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot hash %s: GnuTLS has no SHA-256", path);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sha256_update(&ctx, buf, n);
    if (ferror(f)) {
        sha256_discard(&ctx);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot read %s: %s", path, strerror(errno));
    }
    uint8_t digest[SHA256_DIGEST_LEN];
    sha256_final(&ctx, digest);
    sha256_hex(digest, hex);
    rewind(f);
    return 0;
}

static int data_push(const cli_ctx *ctx, const char *file, const char *name, cli_error *err)
{
    if (name == NULL)
        name = io_basename(file);
    FILE *f = fopen(file, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        int saved = errno;
        if (f)
            fclose(f);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot read %s: %s", file,
                        f ? "not a regular file" : strerror(saved));
    }
    char local[65];
    if (data_sha256_file(f, local, err, file) != 0) {
        fclose(f);
        return err->code;
    }
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL) {
        fclose(f);
        return err->code;
    }
    data_bar bar = {name, -1};
    bool show = isatty(fileno(stderr)) && st.st_size >= DATA_BAR_MIN;
    json_t *o = NULL;
    int rc = remote_dataset_push(client, name, f, (long long)st.st_size,
                                 show ? data_progress : NULL, &bar, &o, err);
    fclose(f);
    httpc_client_free(client);
    if (rc != 0)
        return rc;
    const char *server = json_string_value(json_object_get(o, "sha256"));
    const char *format = json_string_value(json_object_get(o, "format"));
    json_t *records = json_object_get(o, "records");
    char size[32];
    data_size((long long)st.st_size, size, sizeof size);
    printf("%s: %s, %s", name, format ? format : "?", size);
    if (json_is_integer(records))
        printf(", %" JSON_INTEGER_FORMAT " records", json_integer_value(records));
    printf("\n  sha256 here:   %s\n  sha256 server: %s\n", local, server ? server : "?");
    if (server == NULL || strcmp(server, local) != 0)
        rc = cli_fail(err, PUNCH_EXIT_SERVER, "%s: the server's SHA-256 differs from the file's: "
                      "the upload was damaged; push it again", name);
    else
        printf("  match; name it \"@%s\" in a job\n", name);
    json_decref(o);
    return rc;
}

static int data_list(const cli_ctx *ctx, cli_error *err)
{
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *o = NULL;
    int rc = remote_dataset_list(client, &o, err);
    httpc_client_free(client);
    if (rc != 0)
        return rc;
    json_t *list = json_object_get(o, "datasets");
    bool owners = false;
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d) owners |= json_object_get(d, "owner") != NULL;
    printf("%s%-24s %-12s %10s  %s\n", owners ? "OWNER            " : "", "NAME", "FORMAT",
           "SIZE", "SHA-256");
    json_array_foreach(list, i, d) {
        char size[32];
        data_size((long long)json_integer_value(json_object_get(d, "bytes")), size, sizeof size);
        const char *sha = json_string_value(json_object_get(d, "sha256"));
        if (owners)
            printf("%-16.16s ", json_string_value(json_object_get(d, "owner")));
        printf("%-24s %-12s %10s  %s\n", json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(d, "format")), size, sha ? sha : "");
    }
    char used[32], quota[32];
    data_size((long long)json_integer_value(json_object_get(o, "used_bytes")), used, sizeof used);
    data_size((long long)json_integer_value(json_object_get(o, "quota_bytes")), quota,
              sizeof quota);
    printf("%zu datasets; %s of your %s quota used\n", json_array_size(list), used, quota);
    json_decref(o);
    return 0;
}

/* "images [60000,28,28] labels [60000]": every part's shape, or "-". */
static void data_shapes(const json_t *shapes, char *buf, size_t len)
{
    const char *key;
    json_t *shape;
    size_t used = 0;
    buf[0] = '\0';
    json_object_foreach((json_t *)shapes, key, shape) {
        char *dims = json_dumps(shape, JSON_COMPACT);
        int n = snprintf(buf + used, len - used, "%s%s %s", used ? " " : "", key,
                         dims ? dims : "?");
        free(dims);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(buf, len, "-");
}

static int data_list_site(const cli_ctx *ctx, cli_error *err)
{
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *o = NULL;
    int rc = remote_dataset_list_site(client, &o, err);
    httpc_client_free(client);
    if (rc != 0)
        return rc;
    json_t *list = json_object_get(o, "datasets");
    printf("%-32s %-8s %10s  %s\n", "NAME", "FORMAT", "RECORDS", "SHAPES");
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d) {
        char records[32], shapes[256];
        json_t *r = json_object_get(d, "records");
        if (json_is_integer(r))
            snprintf(records, sizeof records, "%" JSON_INTEGER_FORMAT, json_integer_value(r));
        else
            snprintf(records, sizeof records, "-");
        data_shapes(json_object_get(d, "shapes"), shapes, sizeof shapes);
        printf("%-32s %-8s %10s  %s\n", json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(d, "format")), records, shapes);
    }
    printf("%zu site datasets%s\n", json_array_size(list),
           json_is_true(json_object_get(o, "truncated")) ? " (more not listed: the server's limit)"
                                                         : "");
    json_decref(o);
    return 0;
}

static int data_rm(const cli_ctx *ctx, const char *name, cli_error *err)
{
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    json_t *o = NULL;
    int rc = remote_dataset_delete(client, name, &o, err);
    httpc_client_free(client);
    if (rc == 0)
        printf("deleted %s\n", name);
    json_decref(o);
    return rc;
}

int cmd_data(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    bool site = false;
    const cli_option options[] = {{.name = "site", .dest = &site}, {0}};
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    int n = argc - optind;
    const char *sub = n > 0 ? argv[optind] : "";
    if (strcmp(sub, "push") == 0 && (n == 2 || n == 3))
        return data_push(ctx, argv[optind + 1], n == 3 ? argv[optind + 2] : NULL, err);
    if (strcmp(sub, "list") == 0 && n == 1)
        return site ? data_list_site(ctx, err) : data_list(ctx, err);
    if (site)
        return cli_fail(err, PUNCH_EXIT_USAGE, "data: --site goes with list only");
    if (strcmp(sub, "rm") == 0 && n == 2)
        return data_rm(ctx, argv[optind + 1], err);
    return cli_fail(err, PUNCH_EXIT_USAGE,
                    "data: want push FILE [NAME], list [--site] or rm NAME (see punch data --help)");
}
