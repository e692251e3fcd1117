/* fuzz_http.c — punchcardd's request path after libmicrohttpd: the route
 * table (404/405, authentication, job visibility) and every handler, with
 * a real store in a temporary directory, on any request. Requests do not
 * go through a socket: the input is cut into method, URL, headers and body
 * and handed to routes_dispatch as http.c hands it a complete request;
 * the two libmicrohttpd calls that need a connection (a request's headers
 * and query arguments, queueing the reply) are linked to the wrappers
 * below (-Wl,--wrap), which read this request and check that exactly one
 * reply is queued, with a real HTTP status.
 *
 * Input framing, text like HTTP/1.1 but with LF line ends:
 *   METHOD SP TARGET LF         TARGET = path[?name=value&...], %-escaped
 *   (Name: value LF)*           matched case-insensitively, as MHD does
 *   LF
 *   body                        everything left
 * "{id}" in TARGET becomes the id of the job the last 201 created, so the
 * job routes are reached. The secrets are those of secrets_json below.
 * The daemon's state (its store, its jobs) carries over from one input to
 * the next, as a server's does, for FUZZ_GENERATION inputs; then it starts
 * afresh, so the store stays small and the inputs fast. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api/api.h"
#include "daemon.h"
#include "fuzz.h"
#include "log.h"
#include "run/rundir.h"
#include "http/routes.h"
#include "store/store.h"

#define FUZZ_MAX_FIELDS 32
#define FUZZ_GENERATION 4096

static const char secrets_json[] =
    "[{\"secret\": \"alice-secret\", \"identity\": \"alice\"},"
    " {\"secret\": \"bob-secret\", \"identity\": \"bob\"},"
    " {\"secret\": \"root-secret\", \"identity\": \"root\", \"role\": \"admin\"}]";

typedef struct fuzz_field {
    char *name, *value;
} fuzz_field;

/* The request being dispatched: what MHD_lookup_connection_value finds. */
typedef struct fuzz_conn {
    fuzz_field headers[FUZZ_MAX_FIELDS], args[FUZZ_MAX_FIELDS];
    int n_headers, n_args;
    int replies;
} fuzz_conn;

static char fuzz_dir[64];
static daemon_ctx fuzz_daemon;
static char fuzz_last_id[128] = "none";

static void fuzz_die(const char *what, const char *why)
{
    fprintf(stderr, "fuzz_http: %s: %s\n", what, why);
    abort();
}

static void fuzz_http_teardown(void)
{
    if (fuzz_daemon.st == NULL)
        return;
    store_close(fuzz_daemon.st);
    cluster_close(fuzz_daemon.cl);
    auth_close(fuzz_daemon.au);
    rundir_remove(fuzz_dir);
    fuzz_daemon = (daemon_ctx){0};
    snprintf(fuzz_last_id, sizeof fuzz_last_id, "none");
}

/* The daemon as test_api.c sets it up, without the HTTP server: a data
 * dir on tmpfs when there is one (the store fsyncs every submit). */
static void fuzz_http_setup(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/punch-fuzz-http-XXXXXX", base);
    if (!mkdtemp(fuzz_dir))
        fuzz_die(fuzz_dir, "cannot create");
    log_set_level(LOG_ERROR);
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/secrets.json", fuzz_dir);
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(secrets_json, fp) < 0 || fclose(fp) != 0)
        fuzz_die(path, "cannot write");
    daemon_ctx *d = &fuzz_daemon;
    config_defaults(&d->cfg);
    snprintf(d->cfg.data_dir, sizeof d->cfg.data_dir, "%s", fuzz_dir);
    d->total_slots = 4;
    d->hosts = 1;
    if (!(d->cl = cluster_open(NULL, 4, 0, err, sizeof err)))
        fuzz_die("cluster_open", err);
    if (!(d->au = auth_open(path, err, sizeof err)))
        fuzz_die("auth_open", err);
    snprintf(path, sizeof path, "%s/runs", fuzz_dir);
    if (mkdir(path, 0700) != 0)
        fuzz_die(path, "cannot create");
    snprintf(path, sizeof path, "%s/punchcard.db", fuzz_dir);
    if (!(d->st = store_open(path, 2, err, sizeof err)))
        fuzz_die("store_open", err);
    static bool cleanup_registered;
    if (!cleanup_registered && atexit(fuzz_http_teardown) != 0)
        fuzz_die("atexit", "cannot register the cleanup");
    cleanup_registered = true;
}

const char *__wrap_MHD_lookup_connection_value(struct MHD_Connection *connection,
                                               enum MHD_ValueKind kind, const char *key);
enum MHD_Result __wrap_MHD_queue_response(struct MHD_Connection *connection,
                                          unsigned int status_code,
                                          struct MHD_Response *response);

const char *__wrap_MHD_lookup_connection_value(struct MHD_Connection *connection,
                                               enum MHD_ValueKind kind, const char *key)
{
    fuzz_conn *c = (fuzz_conn *)connection;
    const fuzz_field *f = kind == MHD_HEADER_KIND ? c->headers : c->args;
    int n = kind == MHD_HEADER_KIND ? c->n_headers : kind == MHD_GET_ARGUMENT_KIND ? c->n_args : 0;
    for (int i = 0; i < n; i++) {
        bool same = kind == MHD_HEADER_KIND ? strcasecmp(f[i].name, key) == 0
                                            : strcmp(f[i].name, key) == 0;
        if (same)
            return f[i].value;
    }
    return NULL;
}

enum MHD_Result __wrap_MHD_queue_response(struct MHD_Connection *connection,
                                          unsigned int status_code,
                                          struct MHD_Response *response)
{
    fuzz_conn *c = (fuzz_conn *)connection;
    if (++c->replies > 1 || status_code < 100 || status_code > 599 || response == NULL)
        abort();
    const char *loc = MHD_get_response_header(response, MHD_HTTP_HEADER_LOCATION);
    const char *slash = loc ? strrchr(loc, '/') : NULL;
    if (status_code == MHD_HTTP_CREATED && slash)
        snprintf(fuzz_last_id, sizeof fuzz_last_id, "%s", slash + 1);
    return MHD_YES;
}

/* Split "name=value&..." (in place) into c->args, unescaped as MHD does. */
static void fuzz_parse_args(fuzz_conn *c, char *query)
{
    char *save = NULL;
    for (char *tok = strtok_r(query, "&", &save); tok && c->n_args < FUZZ_MAX_FIELDS;
         tok = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(tok, '=');
        char *value = eq ? eq + 1 : tok + strlen(tok);
        if (eq)
            *eq = '\0';
        MHD_http_unescape(tok);
        MHD_http_unescape(value);
        c->args[c->n_args++] = (fuzz_field){tok, value};
    }
}

/* The target with "{id}" replaced by the last created job's id; caller frees. */
static char *fuzz_target(const char *target)
{
    const char *at = strstr(target, "{id}");
    if (!at)
        return strdup(target);
    char *out;
    if (asprintf(&out, "%.*s%s%s", (int)(at - target), target, fuzz_last_id, at + 4) < 0)
        return NULL;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static long inputs;
    if (inputs++ % FUZZ_GENERATION == 0) {
        fuzz_http_teardown(); /* the previous generation's, if any */
        fuzz_http_setup();
    }
    /* Headers end at the first empty line; the body is the rest. */
    const char *text = (const char *)data;
    const char *end = memmem(text, size, "\n\n", 2);
    size_t head_len = end ? (size_t)(end - text) : size;
    size_t body_off = end ? head_len + 2 : size;
    char *head = strndup(text, head_len);
    char *body = malloc(size - body_off + 1);
    if (!head || !body)
        abort();
    memcpy(body, text + body_off, size - body_off);
    body[size - body_off] = '\0';

    fuzz_conn conn = {0};
    char *save = NULL;
    char *line = strtok_r(head, "\n", &save);
    char *method = line ? line : "";
    char *sp = line ? strchr(line, ' ') : NULL;
    char *target = fuzz_target(sp ? sp + 1 : "/");
    if (sp)
        *sp = '\0';
    if (!target)
        abort();
    char *query = strchr(target, '?');
    if (query) {
        *query++ = '\0';
        fuzz_parse_args(&conn, query);
    }
    MHD_http_unescape(target);
    while ((line = strtok_r(NULL, "\n", &save)) && conn.n_headers < FUZZ_MAX_FIELDS) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *value = colon + 1;
        value += strspn(value, " \t");
        conn.headers[conn.n_headers++] = (fuzz_field){line, value};
    }

    api_request r = {0};
    r.conn = (struct MHD_Connection *)&conn;
    r.d = &fuzz_daemon;
    r.method = method;
    r.path = target;
    r.body = body;
    r.body_len = size - body_off;
    r.route = ROUTE_OTHER;
    r.body_too_large = r.body_len > (size_t)fuzz_daemon.cfg.max_body;
    routes_dispatch(&r);
    /* Every request is answered once, and its status recorded for metrics. */
    if (conn.replies > 1 || (conn.replies == 1) != (r.status >= 100))
        abort();
    free(target);
    free(head);
    free(body);
    return 0;
}
