/* http.c — libmicrohttpd glue: listen socket, request bodies, routing and
 * per-route metrics. */
#include "http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "log.h"

struct http_server {
    struct MHD_Daemon *mhd;
    daemon_ctx *d;
    int listen_fd;
};

/* Per-request state, from the first call of the access handler to the
 * completion callback. */
typedef struct http_req {
    char *body;
    size_t len, cap;
    bool too_large;
    size_t discarded;
    struct timespec t0;
} http_req;

/* A client streaming past the cap gets its 413 once it stops; one that goes
 * on for this much more is cut off. */
#define HTTP_DISCARD_MAX (8u << 20)

int http_listen(const char *hostport, int *port, char *err, size_t errlen)
{
    char host[128];
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof host || !colon[1]) {
        snprintf(err, errlen, "--listen %s: expected HOST:PORT", hostport);
        return -1;
    }
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:8080 */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "--listen %s: %s", hostport, gai_strerror(gai));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        int saved = errno;
        snprintf(err, errlen, "--listen %s: %s%s", hostport, strerror(saved),
                 saved == EADDRINUSE ? " (is another punchcardd or server running there?)" : "");
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        char serv[16];
        if (getnameinfo((struct sockaddr *)&ss, sl, NULL, 0, serv, sizeof serv, NI_NUMERICSERV) == 0)
            *port = atoi(serv);
    }
    return fd;
}

/* ---- routing ----------------------------------------------------------------- */

typedef enum MHD_Result (*http_handler_fn)(api_request *r);

static bool http_is_job_id(const char *s, size_t n)
{
    if (n != STORE_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static bool http_method_is(const char *m, const char *want)
{
    return strcmp(m, want) == 0 || (strcmp(want, "GET") == 0 && strcmp(m, "HEAD") == 0);
}

/* Route r->path; returns the handler for r->method, or NULL with *allow set
 * (405) or *allow NULL (404). Sets r->route and r->job_id. */
static http_handler_fn http_route(api_request *r, char *id_buf, const char **allow)
{
    const char *p = r->path, *m = r->method;
    *allow = NULL;
    struct fixed {
        const char *path;
        const char *method;
        http_handler_fn fn;
        metrics_route route;
        const char *allow;
    } fixed[] = {
        {"/healthz", "GET", api_healthz, ROUTE_HEALTHZ, "GET, HEAD"},
        {"/metrics", "GET", api_metrics, ROUTE_METRICS, "GET, HEAD"},
        {"/api/v1/jobs", "GET", api_jobs_list, ROUTE_JOBS_LIST, "GET, HEAD, POST"},
        {"/api/v1/jobs", "POST", api_jobs_submit, ROUTE_JOBS_SUBMIT, "GET, HEAD, POST"},
        {"/api/submit", "POST", api_seed_submit, ROUTE_SEED_SUBMIT, "POST"},
        {"/api/state", "GET", api_seed_state, ROUTE_SEED_STATE, "GET, HEAD"},
        {"/api/cancel", "GET", api_seed_cancel, ROUTE_SEED_CANCEL, "GET, HEAD, POST"},
        {"/api/cancel", "POST", api_seed_cancel, ROUTE_SEED_CANCEL, "GET, HEAD, POST"},
        {"/api/destroy", "GET", api_seed_destroy, ROUTE_SEED_DESTROY, "GET, HEAD, POST"},
        {"/api/destroy", "POST", api_seed_destroy, ROUTE_SEED_DESTROY, "GET, HEAD, POST"},
    };
    bool path_known = false;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (strcmp(p, fixed[i].path) != 0)
            continue;
        path_known = true;
        r->route = fixed[i].route;
        *allow = fixed[i].allow;
        if (http_method_is(m, fixed[i].method))
            return fixed[i].fn;
    }
    if (path_known)
        return NULL;
    static const char prefix[] = "/api/v1/jobs/";
    if (strncmp(p, prefix, sizeof prefix - 1) != 0)
        return NULL;
    const char *id = p + sizeof prefix - 1;
    const char *slash = strchr(id, '/');
    size_t id_len = slash ? (size_t)(slash - id) : strlen(id);
    if (!http_is_job_id(id, id_len))
        return NULL;
    memcpy(id_buf, id, id_len);
    id_buf[id_len] = '\0';
    r->job_id = id_buf;
    if (!slash) {
        *allow = "GET, HEAD, DELETE";
        if (http_method_is(m, "GET")) {
            r->route = ROUTE_JOB_GET;
            return api_job_get;
        }
        r->route = ROUTE_JOB_CANCEL;
        return strcmp(m, "DELETE") == 0 ? api_job_cancel : NULL;
    }
    struct sub {
        const char *name;
        http_handler_fn fn;
        metrics_route route;
    } subs[] = {
        {"/history", api_job_history, ROUTE_JOB_HISTORY},
        {"/weights", api_job_weights, ROUTE_JOB_WEIGHTS},
        {"/logs", api_job_logs, ROUTE_JOB_LOGS},
        {"/events", api_job_events, ROUTE_JOB_EVENTS},
    };
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(slash, subs[i].name) != 0)
            continue;
        r->route = subs[i].route;
        *allow = "GET, HEAD";
        return http_method_is(m, "GET") ? subs[i].fn : NULL;
    }
    r->job_id = NULL;
    return NULL;
}

static double http_elapsed(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static enum MHD_Result http_dispatch(http_server *s, struct MHD_Connection *conn, const char *url,
                                     const char *method, http_req *req)
{
    api_request r = {0};
    r.conn = conn;
    r.d = s->d;
    r.method = method;
    r.path = url;
    r.body = req->body ? req->body : "";
    r.body_len = req->len;
    r.route = ROUTE_OTHER;
    char id_buf[STORE_ID_LEN + 1];
    const char *allow = NULL;
    http_handler_fn fn = http_route(&r, id_buf, &allow);
    enum MHD_Result ret;
    if (req->too_large) {
        ret = api_reply_error(&r, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                              "request body over the limit of %ld bytes", s->d->cfg.max_body);
    } else if (fn) {
        ret = fn(&r);
    } else if (allow) {
        struct MHD_Response *resp = NULL;
        json_t *body = json_pack("{s:s, s:n}", "error", "method not allowed", "field");
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (text) {
            resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
            if (!resp)
                free(text);
        }
        if (resp) {
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
            MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
        }
        ret = api_reply_response(&r, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
    } else {
        ret = api_reply_error(&r, MHD_HTTP_NOT_FOUND, NULL, "no such route: %s %.200s", method, url);
    }
    double elapsed = http_elapsed(&req->t0);
    metrics_record(r.route, r.status, elapsed);
    /* The path only: secrets may ride in the query string. */
    log_debug("http: %s %.200s -> %d in %.3f ms", method, url, r.status, elapsed * 1e3);
    return ret;
}

/* Append a body chunk, enforcing the cap on the running total. */
static bool http_append(http_req *req, const char *data, size_t n, long max_body)
{
    if (req->too_large || req->len + n > (size_t)max_body) {
        req->too_large = true;
        req->discarded += n;
        return req->discarded <= HTTP_DISCARD_MAX;
    }
    if (req->len + n + 1 > req->cap) {
        size_t cap = req->cap ? req->cap : 4096;
        while (cap < req->len + n + 1)
            cap *= 2;
        char *p = realloc(req->body, cap);
        if (!p)
            return false;
        req->body = p;
        req->cap = cap;
    }
    memcpy(req->body + req->len, data, n);
    req->len += n;
    req->body[req->len] = '\0';
    return true;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version,
                                   const char *upload_data, size_t *upload_data_size,
                                   void **con_cls)
{
    (void)version;
    http_server *s = cls;
    http_req *req = *con_cls;
    if (!req) {
        req = calloc(1, sizeof *req);
        if (!req)
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &req->t0);
        *con_cls = req;
        /* A declared length over the cap is refused before reading a byte. */
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > (unsigned long long)s->d->cfg.max_body) {
            req->too_large = true;
            return http_dispatch(s, conn, url, method, req);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        bool ok = http_append(req, upload_data, *upload_data_size, s->d->cfg.max_body);
        *upload_data_size = 0;
        if (!ok) {
            log_warn("http: %s %.100s: body far over the limit; connection closed", method, url);
            metrics_record(ROUTE_OTHER, MHD_HTTP_CONTENT_TOO_LARGE, http_elapsed(&req->t0));
            return MHD_NO;
        }
        return MHD_YES;
    }
    return http_dispatch(s, conn, url, method, req);
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    http_req *req = *con_cls;
    if (req) {
        free(req->body);
        free(req);
        *con_cls = NULL;
    }
}

static void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_debug("libmicrohttpd: %s", msg);
}

http_server *http_start(daemon_ctx *d, int listen_fd, char *err, size_t errlen)
{
    http_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->d = d;
    s->listen_fd = listen_fd;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    s->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, http_access, s,
        MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, s,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)d->cfg.http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)d->cfg.connection_timeout,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)d->cfg.connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)d->cfg.per_ip_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
        MHD_OPTION_END);
    if (!s->mhd) {
        snprintf(err, errlen, "libmicrohttpd failed to start (see the log above)");
        free(s);
        return NULL;
    }
    return s;
}

void http_quiesce(http_server *s)
{
    MHD_socket fd = MHD_quiesce_daemon(s->mhd);
    if (fd != MHD_INVALID_SOCKET) {
        close(fd);
        s->listen_fd = -1;
    }
}

void http_stop(http_server *s)
{
    if (!s)
        return;
    /* libmicrohttpd closes the listening socket unless quiesce took it back. */
    MHD_stop_daemon(s->mhd);
    free(s);
}
