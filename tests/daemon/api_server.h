/* api_server.h — the HTTP API served in-process for a C unit test: a daemon
 * context over a scratch data directory (secrets.json, runs/, the store in
 * punchcard.db, one host of 4 slots), its server on a free port of
 * 127.0.0.1, and a libcurl handle to call it. Header-only, as each test
 * program is a single file. */
#ifndef PUNCH_TEST_API_SERVER_H
#define PUNCH_TEST_API_SERVER_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "daemon.h"
#include "http/http.h"
#include "scratch.h"

/* A test's server: its scratch data directory, the store's path, the
 * daemon context, the server and its port, and the client handle. */
typedef struct api_server {
    char dir[SCRATCH_DIR_LEN];
    char db[128];
    daemon_ctx d;
    http_server *http;
    int port;
    CURL *curl;
} api_server;

/* d over the existing directory dir with the callers of secrets_json, the
 * store's path into db (db_cap bytes), served on *port by *http and called
 * with *curl. max_running is 2 so
 * that a queued job's view asks the store for its owner's active jobs. */
static inline bool api_server_start(daemon_ctx *d, const char *dir, const char *secrets_json,
                                    char *db, size_t db_cap, http_server **http, int *port,
                                    CURL **curl)
{
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/secrets.json", dir);
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(secrets_json, fp) < 0 || fclose(fp) != 0)
        return false;
    config_defaults(&d->cfg);
    snprintf(d->cfg.data_dir, sizeof d->cfg.data_dir, "%s", dir);
    d->cfg.max_running = 2;
    d->total_slots = 4;
    if (!(d->cl = cluster_open(NULL, 4, 0, err, sizeof err)))
        return false;
    d->hosts = 1;
    if (!(d->au = auth_open(path, err, sizeof err)))
        return false;
    snprintf(path, sizeof path, "%s/runs", dir);
    if (mkdir(path, 0700) != 0)
        return false;
    snprintf(db, db_cap, "%s/punchcard.db", dir);
    if (!(d->st = store_open(db, d->cfg.http_threads + 1, err, sizeof err)))
        return false;
    int fd = http_listen("127.0.0.1:0", port, err, sizeof err);
    if (fd < 0 || !(*http = http_start(d, fd, err, sizeof err)))
        return false;
    return curl_global_init(CURL_GLOBAL_DEFAULT) == 0 && (*curl = curl_easy_init());
}

/* Stop what api_server_start started (the directory stays); clears any
 * store fault a test left set. */
static inline void api_server_stop(daemon_ctx *d, http_server *http, CURL *curl)
{
    store_fault_sim(NULL, NULL);
    curl_easy_cleanup(curl);
    curl_global_cleanup();
    http_stop(http);
    store_close(d->st);
    cluster_close(d->cl);
    auth_close(d->au);
}

/* A cmocka setup: a new api_server in *state over a fresh scratch
 * directory /tmp/punch-NAME-XXXXXX, serving the callers of secrets_json. */
static inline int api_server_setup(void **state, const char *name, const char *secrets_json)
{
    api_server *s = calloc(1, sizeof *s);
    if (!s || !scratch_create(s->dir, name))
        return -1;
    *state = s;
    return api_server_start(&s->d, s->dir, secrets_json, s->db, sizeof s->db, &s->http,
                            &s->port, &s->curl)
               ? 0
               : -1;
}

/* The cmocka teardown of api_server_setup: all stopped and removed. */
static inline int api_server_teardown(void **state)
{
    api_server *s = *state;
    api_server_stop(&s->d, s->http, s->curl);
    bool removed = scratch_remove(s->dir);
    free(s);
    return removed ? 0 : -1;
}

#endif
