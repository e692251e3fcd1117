/* http.c — libmicrohttpd glue: listen socket, request bodies (capped, or
 * streamed to a file for the routes routes_stream_open names), per-route
 * metrics; routes.c answers each complete request. */
#include "http/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "grow/grow.h"
#include "http/httpdefer.h"
#include "http/httpframe.h"
#include "http/httptls.h"
#include "http/httpwatch.h"
#include "log.h"
#include "run/enginepool.h"
#include "http/routes.h"
#include "timeutil/timeutil.h"

struct http_server {
    struct MHD_Daemon *mhd;
    daemon_ctx *d;
    int listen_fd;
    httpwatch *watch;
    httptls *tls; /* NULL: plain HTTP */
    httpdefer *writers; /* runs the requests that write (http_dispatch) */
    enginepool *engines; /* predictions and generations (api_engine.c) */
    /* Requests resumed from another thread whose reply is not sent yet:
     * http_stop lets them go out before libmicrohttpd closes everything. */
    pthread_mutex_t flush_lock;
    int flushing;
};

/* How long http_stop waits for resumed replies to go out. */
#define HTTP_FLUSH_WAIT_S 2.0

/* Per-request state, from the first call of the access handler to the
 * completion callback. */
typedef struct http_req {
    char *body;
    size_t len, cap;
    bool too_large;
    bool draining;           /* answered already in substance: read the body, then reply */
    unsigned long long drain_max; /* ... but no more of it than this */
    size_t discarded;
    int refused;             /* 0, or the status the request is refused with */
    const char *refusal;     /* why, for the client */
    char tls_why[160];       /* refusal's text for a client certificate */
    double t0; /* timeutil_mono_s() at the first call */
    api_stream *stream; /* the body goes here instead (routes_stream_open) */
    /* A request run on a writer thread (http_defer): what it needs there,
     * and its result once done. */
    http_server *server;
    struct MHD_Connection *conn;
    const char *url, *method;
    bool deferred;
    bool resumed;            /* counted in the server's flushing until completed */
    enum MHD_Result deferred_ret;
} http_req;

/* A body the daemon will not use (over the cap, or of a request refused
 * from its header alone) is read and discarded, so that a client that
 * sends it whole before reading (Python's requests does) gets the answer
 * instead of a broken pipe; at most this much, or the upload limit when
 * that is larger (docs/daemon.md, "Security"), and within the body's
 * deadline. One that goes on longer is cut off. */
#define HTTP_DISCARD_MAX (8u << 20)

static unsigned long long http_discard_max(const http_server *s)
{
    unsigned long long up = s->d->cfg.upload_max > 0 ? (unsigned long long)s->d->cfg.upload_max : 0;
    return up > HTTP_DISCARD_MAX ? up : HTTP_DISCARD_MAX;
}

/* The slowest upload (bytes a second) that a streamed body's deadline
 * allows for beyond --body-timeout: 1 MiB/s, 35 minutes for 2 GiB. */
#define HTTP_STREAM_MIN_RATE (1ull << 20)

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

/* What a connection carries from its accept to its close (its socket
 * context): its deadline watch and, on the TLS port, its plain-HTTP check
 * (freed here: libmicrohttpd has ended the TLS session by the close). */
typedef struct http_conn {
    httpwatch_conn *watch;
    httptls_sniff *sniff;
} http_conn;

/* The deadline watch of conn (set when it was accepted), or NULL. */
static httpwatch_conn *http_watched(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const http_conn *hc = ci ? ci->socket_context : NULL;
    return hc ? hc->watch : NULL;
}

/* Resume a deferred request whose reply is queued, counted until its
 * completion (http_completed), so that http_stop can let it go out. */
static void http_resume(http_req *req, enum MHD_Result ret)
{
    http_server *s = req->server;
    req->deferred_ret = ret;
    pthread_mutex_lock(&s->flush_lock);
    s->flushing++;
    req->resumed = true;
    pthread_mutex_unlock(&s->flush_lock);
    MHD_resume_connection(req->conn);
}

/* The end of a request a handler answered from another thread
 * (api_request.resume): its metrics, then the resume that sends the reply. */
static void http_resume_later(void *ctx, const api_request *r, enum MHD_Result ret)
{
    http_req *req = ctx;
    double elapsed = timeutil_mono_s() - req->t0;
    metrics_record(r->route, r->status, elapsed);
    log_debug("http: %s %.200s -> %d in %.3f ms", r->method, r->path, r->status, elapsed * 1e3);
    http_resume(req, ret);
}

/* Answer req. *later: its handler took it over (api_engine.c) and ends it
 * through http_resume_later, perhaps already: req may be gone then. */
static enum MHD_Result http_dispatch_now(http_server *s, struct MHD_Connection *conn,
                                         const char *url, const char *method, http_req *req,
                                         bool *later)
{
    *later = false;
    /* The reply is sent under the idle timeout alone. */
    httpwatch_set(s->watch, http_watched(conn), 0, NULL);
    api_request r = {0};
    r.conn = conn;
    r.d = s->d;
    r.method = method;
    r.path = url;
    r.body = req->body ? req->body : "";
    r.body_len = req->len;
    r.route = ROUTE_OTHER;
    r.body_too_large = req->too_large;
    r.stream = req->stream;
    /* A request with a body left unread or unreadable ends its connection. */
    r.close_connection = req->too_large;
    r.engines = s->engines;
    if (req->deferred) { /* suspended: a handler may answer it later */
        r.resume = http_resume_later;
        r.resume_ctx = req;
    }
    enum MHD_Result ret;
    if (req->refused) {
        /* Where this request ends is unknown, or this client may send none:
         * answer and close. */
        r.close_connection = true;
        ret = api_reply_error(&r, req->refused, NULL, "%s", req->refusal);
    } else {
        ret = routes_dispatch(&r);
    }
    if (r.answered_later) {
        *later = true;
        return MHD_YES;
    }
    double elapsed = timeutil_mono_s() - req->t0;
    metrics_record(r.route, r.status, elapsed);
    /* The path only: secrets may ride in the query string. */
    log_debug("http: %s %.200s -> %d in %.3f ms", method, url, r.status, elapsed * 1e3);
    return ret;
}

/* A writer thread's half of a deferred request: the connection is
 * suspended, so its response may be queued from here (microhttpd.h,
 * MHD_queue_response); resuming it sends the response. */
static void http_deferred(void *arg)
{
    http_req *req = arg;
    bool later;
    enum MHD_Result ret =
        http_dispatch_now(req->server, req->conn, req->url, req->method, req, &later);
    if (!later)
        http_resume(req, ret);
}

/* Does this request write to the store (POST, PUT, PATCH and DELETE may:
 * submit, cancel, resume, delete, uploads)? Those wait for a commit, and for
 * the store's one writer; a read never does (WAL). Any other method is
 * answered here at once (a 405 needs no writer thread). */
static bool http_writes(const char *method, const http_req *req)
{
    return !req->refused && (strcmp(method, MHD_HTTP_METHOD_POST) == 0 ||
                             strcmp(method, MHD_HTTP_METHOD_PUT) == 0 ||
                             strcmp(method, MHD_HTTP_METHOD_PATCH) == 0 ||
                             strcmp(method, MHD_HTTP_METHOD_DELETE) == 0);
}

/* Answer a complete request (one answered from its header alone is answered
 * at once, by http_dispatch_now): a write on a writer thread with its connection
 * suspended, so that this libmicrohttpd thread goes on serving its other
 * connections meanwhile; anything else here. */
static enum MHD_Result http_dispatch(http_server *s, struct MHD_Connection *conn, const char *url,
                                     const char *method, http_req *req)
{
    bool later; /* never: req is not deferred */
    if (!http_writes(method, req))
        return http_dispatch_now(s, conn, url, method, req, &later);
    req->server = s;
    req->conn = conn;
    req->url = url;
    req->method = method;
    req->deferred = true;
    req->deferred_ret = MHD_NO;
    MHD_suspend_connection(conn);
    httpdefer_run(s->writers, http_deferred, req);
    return MHD_YES;
}

/* Append a body chunk, enforcing the cap on the running total. */
static bool http_append(http_req *req, const char *data, size_t n, long max_body,
                        unsigned long long discard_max)
{
    if (req->too_large || req->len + n > (size_t)max_body) {
        req->too_large = true;
        req->discarded += n;
        return req->discarded <= discard_max;
    }
    if (!grow_reserve((void **)&req->body, &req->cap, req->len + n + 1, 1))
        return false;
    memcpy(req->body + req->len, data, n);
    req->len += n;
    req->body[req->len] = '\0';
    return true;
}

/* Should a request refused from its header have its body read first? Only
 * when one comes (a length, or chunked), its client is not waiting for
 * "100 Continue" (it has sent nothing and reads the answer now), and it is
 * not longer than `limit`. */
static bool http_may_drain(struct MHD_Connection *conn, unsigned long long declared,
                           unsigned long long limit)
{
    const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_EXPECT);
    if (expect && strcasecmp(expect, "100-continue") == 0)
        return false;
    bool chunked = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
    return (declared > 0 || chunked) && declared <= limit;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version,
                                   const char *upload_data, size_t *upload_data_size,
                                   void **con_cls)
{
    http_server *s = cls;
    http_req *req = *con_cls;
    bool later; /* never, for a request answered on this thread */
    /* Called again after a deferred request's resume: its response went
     * out; only a failure to queue one is left to report (MHD_NO closes). */
    if (req && req->deferred)
        return req->deferred_ret;
    if (!req) {
        req = calloc(1, sizeof *req);
        if (!req)
            return MHD_NO;
        req->t0 = timeutil_mono_s();
        *con_cls = req;
        httpwatch_set(s->watch, http_watched(conn), s->d->cfg.body_timeout, "request body");
        req->refusal = httpframe_check(conn, method, url, version);
        if (req->refusal) {
            req->refused = MHD_HTTP_BAD_REQUEST;
            return http_dispatch_now(s, conn, url, method, req, &later);
        }
        if (!httptls_client_ok(s->tls, conn, req->tls_why, sizeof req->tls_why)) {
            req->refused = MHD_HTTP_FORBIDDEN;
            req->refusal = req->tls_why;
            return http_dispatch_now(s, conn, url, method, req, &later);
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
        api_request probe = {.conn = conn, .d = s->d, .method = method, .path = url};
        routes_stream_open_result so = routes_stream_open(&probe, &req->stream);
        /* A caller without a secret (no stream was opened) is drained of
         * no more than HTTP_DISCARD_MAX: a stranger may not make the
         * daemon read an upload's worth. */
        unsigned long long limit = req->stream ? http_discard_max(s) : HTTP_DISCARD_MAX;
        if (so == ROUTES_ANSWER_NOW && http_may_drain(conn, declared, limit)) {
            /* Refused from the header (a bad name, no secret): the body is
             * read and dropped first, then the answer goes out. */
            req->draining = true;
            req->drain_max = limit;
            httpwatch_set(s->watch, http_watched(conn),
                          s->d->cfg.body_timeout + (double)(declared / HTTP_STREAM_MIN_RATE),
                          "request body");
            return MHD_YES;
        }
        if (so == ROUTES_ANSWER_NOW)
            return http_dispatch_now(s, conn, url, method, req, &later);
        if (so == ROUTES_STREAM) {
            /* An upload may be large: its deadline grows with its length,
             * at HTTP_STREAM_MIN_RATE bytes a second. */
            httpwatch_set(s->watch, http_watched(conn),
                          s->d->cfg.body_timeout + (double)(declared / HTTP_STREAM_MIN_RATE),
                          "request body");
            return MHD_YES;
        }
        if (declared <= (unsigned long long)s->d->cfg.max_body)
            return MHD_YES;
        /* Over the cap. A client waiting for "100 Continue" has sent none of
         * its body and gets the 413 now; one sending a body we would not
         * drain gets it now too and may see a reset instead. Any other body
         * is read and discarded first, so the client is not cut off in the
         * middle of sending and reads the 413. */
        req->too_large = true;
        const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_EXPECT);
        if ((expect && strcasecmp(expect, "100-continue") == 0) ||
            declared - (unsigned long long)s->d->cfg.max_body > http_discard_max(s))
            return http_dispatch_now(s, conn, url, method, req, &later);
        httpwatch_set(s->watch, http_watched(conn),
                      s->d->cfg.body_timeout + (double)(declared / HTTP_STREAM_MIN_RATE),
                      "request body");
        return MHD_YES;
    }
    if (*upload_data_size > 0 && req->draining) {
        req->discarded += *upload_data_size;
        *upload_data_size = 0;
        return req->discarded <= req->drain_max ? MHD_YES : MHD_NO;
    }
    if (*upload_data_size > 0 && req->stream) {
        bool ok = api_stream_write(req->stream, upload_data, *upload_data_size);
        *upload_data_size = 0;
        if (!ok) {
            log_warn("http: %s %.100s: body far over the limit; connection closed", method, url);
            metrics_record(ROUTE_OTHER, MHD_HTTP_CONTENT_TOO_LARGE, timeutil_mono_s() - req->t0);
        }
        return ok ? MHD_YES : MHD_NO;
    }
    if (*upload_data_size > 0) {
        bool ok = http_append(req, upload_data, *upload_data_size, s->d->cfg.max_body,
                              http_discard_max(s));
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
    (void)toe;
    http_server *s = cls;
    /* A kept-alive connection waits for its next request's header. */
    httpwatch_set(s->watch, http_watched(conn), s->d->cfg.header_timeout, "request header");
    http_req *req = *con_cls;
    if (req && req->resumed) {
        pthread_mutex_lock(&s->flush_lock);
        s->flushing--;
        pthread_mutex_unlock(&s->flush_lock);
    }
    if (req) {
        api_stream_free(req->stream);
        free(req->body);
        free(req);
        *con_cls = NULL;
    }
}

/* Connections enter and leave the deadline watch here. */
static void http_notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                                   enum MHD_ConnectionNotificationCode toe)
{
    http_server *s = cls;
    http_conn *hc = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (hc) {
            httpwatch_close(s->watch, hc->watch);
            httptls_sniff_free(hc->sniff);
            free(hc);
        }
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    hc = ci ? calloc(1, sizeof *hc) : NULL;
    if (!hc) {
        log_warn("http: a connection without its deadline (%s)",
                 ci ? "out of memory" : "no socket");
        *socket_context = NULL;
        return;
    }
    if (s->tls)
        hc->sniff = httptls_sniff_start(conn, ci->connect_fd);
    hc->watch = httpwatch_open(s->watch, ci->connect_fd, s->d->cfg.header_timeout,
                               "request header");
    *socket_context = hc;
}

static void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_debug("libmicrohttpd: %s", msg);
}

/* libmicrohttpd's own unescaping, except that a decoded %00 stays visible
 * (as 0x7F) instead of ending the path there: "/api/v1/jobs%00/x" must not
 * be routed as "/api/v1/jobs"; httpframe_check refuses it with a 400. */
static size_t http_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    size_t n = MHD_http_unescape(s);
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0')
            s[i] = 0x7f;
    return n;
}

/* Whether listen_fd is bound to a loopback address only. */
static bool http_loopback_only(int listen_fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(listen_fd, (struct sockaddr *)&ss, &sl) != 0)
        return false;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)&ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) ||
               (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

/* Stop and free the threads and parts http_start made (those not made
 * are NULL); libmicrohttpd is stopped already or never started. */
static void http_server_free(http_server *s)
{
    pthread_mutex_destroy(&s->flush_lock);
    enginepool_stop(s->engines);
    httpdefer_stop(s->writers);
    enginepool_free(s->engines);
    httpdefer_free(s->writers);
    httpwatch_stop(s->watch);
    httptls_free(s->tls);
    free(s);
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
    pthread_mutex_init(&s->flush_lock, NULL);
    if (httptls_load(&d->cfg, &s->tls, err, errlen) == 0)
        s->watch = httpwatch_start(err, errlen);
    /* Twice the readers' threads: writes batch into group commits
     * (store_job_submit), so more writers waiting means fewer fsyncs. */
    if (s->watch)
        s->writers = httpdefer_start(2 * d->cfg.http_threads, err, errlen);
    if (s->writers)
        s->engines = enginepool_start(d->cfg.predict_threads, d->cfg.predict_queue,
                                      d->cfg.predict_per_user, err, errlen);
    if (!s->engines) {
        http_server_free(s);
        return NULL;
    }
    /* Said before the first request can be answered: a client that sees
     * the server up finds the warning in the log. */
    if (!s->tls && !http_loopback_only(listen_fd))
        log_warn("listening beyond loopback without TLS: secrets cross the network in clear "
                 "(set tls_cert and tls_key; docs/daemon.md, \"Security\")");
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME; /* event streams park */
    struct MHD_OptionItem tls_opts[HTTPTLS_MAX_OPTIONS + 1];
    size_t n_tls = s->tls ? httptls_options(s->tls, tls_opts) : 0;
    tls_opts[n_tls] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    if (s->tls)
        flags |= MHD_USE_TLS;
    s->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, http_access, s,
        MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, s,
        MHD_OPTION_UNESCAPE_CALLBACK, http_unescape, NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)d->cfg.http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)d->cfg.connection_timeout,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)d->cfg.connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)d->cfg.per_ip_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, http_notify_connection, s,
        MHD_OPTION_ARRAY, tls_opts,
        MHD_OPTION_END);
    if (!s->mhd) {
        snprintf(err, errlen, "libmicrohttpd failed to start%s (see the log above)",
                 s->tls ? " with tls_cert and tls_key (do they match?)" : "");
        http_server_free(s);
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

/* Wait (a while at most) for the replies queued from other threads to be
 * sent: MHD_stop_daemon closes connections without sending them. */
static void http_flush(http_server *s)
{
    double deadline = timeutil_mono_s() + HTTP_FLUSH_WAIT_S;
    for (;;) {
        pthread_mutex_lock(&s->flush_lock);
        int left = s->flushing;
        pthread_mutex_unlock(&s->flush_lock);
        if (left <= 0 || timeutil_mono_s() >= deadline)
            return;
        struct timespec tick = {0, 10 * 1000000L};
        nanosleep(&tick, NULL);
    }
}

void http_stop(http_server *s)
{
    if (!s)
        return;
    /* Every deferred request finishes and resumes its connection first: a
     * suspended one must not be left to MHD_stop_daemon. The engine pool
     * first: its waiting requests are answered 503, its running engines
     * ended (api_engine.c); a writer handing it one later gets the 503 at
     * once. A request deferred after this runs on libmicrohttpd's thread
     * (httpdefer_run). */
    enginepool_stop(s->engines);
    httpdefer_stop(s->writers);
    http_flush(s);
    /* libmicrohttpd closes the listening socket unless quiesce took it back. */
    MHD_stop_daemon(s->mhd);
    http_server_free(s);
}
