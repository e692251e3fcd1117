/* http.h — the HTTP server: libmicrohttpd with an internal pool of epoll
 * worker threads, connection timeout and limits, a body cap that also counts
 * chunked uploads; complete requests go to routes_dispatch (routes.h). */
#ifndef PUNCH_HTTP_H
#define PUNCH_HTTP_H

#include <stddef.h>

#include "daemon.h"

typedef struct http_server http_server;

/* Bind and listen on HOST:PORT (numeric or a name; port 0 picks a free
 * port). Returns the socket and the bound port in *port, or -1 with *err
 * saying why (e.g. the address is in use). */
int http_listen(const char *hostport, int *port, char *err, size_t errlen);

/* Serve on listen_fd (taken over). NULL with *err on failure. */
http_server *http_start(daemon_ctx *d, int listen_fd, char *err, size_t errlen);

/* Stop accepting new connections; in-flight requests continue. */
void http_quiesce(http_server *s);

/* Finish in-flight requests, stop the threads, free everything. */
void http_stop(http_server *s);

#endif
