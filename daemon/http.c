/* http.c — libmicrohttpd glue: listen socket, request bodies (capped),
 * per-route metrics; routes.c answers each complete request. */
#include "http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "log.h"
#include "routes.h"
#include "timeutil/timeutil.h"

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
    double t0; /* timeutil_mono_s() at the first call */
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
    r.body_too_large = req->too_large;
    enum MHD_Result ret = routes_dispatch(&r);
    double elapsed = timeutil_mono_s() - req->t0;
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
        req->t0 = timeutil_mono_s();
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
            metrics_record(ROUTE_OTHER, MHD_HTTP_CONTENT_TOO_LARGE, timeutil_mono_s() - req->t0);
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
                     MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME; /* event streams park */
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
