/* httpwatch.h — total deadlines on HTTP connections. libmicrohttpd's
 * connection timeout counts idleness and restarts on every byte, so a
 * header or body dribbled at one byte a second holds a connection (and a
 * slot of the per-IP limit) forever. The watcher gives each connection a
 * deadline for the phase it is in (like nginx's client_header_timeout and
 * client_body_timeout, but total) and, from its own thread, shuts the
 * socket down when one passes; libmicrohttpd then sees the connection end
 * and closes it as usual. */
#ifndef PUNCH_HTTPWATCH_H
#define PUNCH_HTTPWATCH_H

#include <stddef.h>

typedef struct httpwatch httpwatch;
typedef struct httpwatch_conn httpwatch_conn;

/* Start the watcher thread. NULL with *err on failure. */
httpwatch *httpwatch_start(char *err, size_t errlen);

/* Stop the thread and free the watcher; every connection must have been
 * closed (httpwatch_close) first. w may be NULL. */
void httpwatch_stop(httpwatch *w);

/* Watch socket fd, a new connection, from now on: its deadline is
 * `seconds` away, with `phase` ("header", a static string) naming it in the
 * log. NULL when out of memory (the connection is then not watched). */
httpwatch_conn *httpwatch_open(httpwatch *w, int fd, double seconds, const char *phase);

/* A new phase: the deadline is `seconds` from now; 0: none. c may be NULL. */
void httpwatch_set(httpwatch *w, httpwatch_conn *c, double seconds, const char *phase);

/* The connection is closed: forget it before its fd can be reused. c may be
 * NULL. */
void httpwatch_close(httpwatch *w, httpwatch_conn *c);

#endif
