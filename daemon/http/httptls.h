/* httptls.h — HTTPS for punchcardd through libmicrohttpd's GnuTLS support:
 * the server certificate and key (tls_cert, tls_key) and, for mutual TLS,
 * the CA that client certificates must chain to (tls_client_ca).
 * libmicrohttpd only requests a client certificate; httptls_client_ok is
 * the check that one was sent and verifies, made on every request. */
#ifndef PUNCH_HTTPTLS_H
#define PUNCH_HTTPTLS_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "config.h"

typedef struct httptls httptls;

/* Options libmicrohttpd needs for TLS, at most this many (the terminator
 * not counted). */
#define HTTPTLS_MAX_OPTIONS 3

/* Load cfg's TLS files. 0 with *out NULL when TLS is not configured
 * (tls_cert and tls_key both empty), 0 with *out set when it is, -1 with
 * *err naming the setting and file when one is missing, unreadable, not
 * PEM, or libmicrohttpd was built without TLS. */
int httptls_load(const config *cfg, httptls **out, char *err, size_t errlen);

/* Fill items (room for HTTPTLS_MAX_OPTIONS) with the MHD_OPTION_HTTPS_*
 * options; returns how many. The strings stay owned by t, which must
 * outlive the libmicrohttpd daemon. */
size_t httptls_options(const httptls *t, struct MHD_OptionItem *items);

/* Whether conn may be served: always without tls_client_ca; with it, only
 * when the client sent a certificate that verifies against that CA.
 * Otherwise false with the reason in why. */
bool httptls_client_ok(const httptls *t, struct MHD_Connection *conn, char *why, size_t whylen);

/* A connection to the TLS port whose first bytes are a plain HTTP request
 * gets a 400 in clear text saying to use https:// instead of a handshake
 * failure ("Empty reply from server"); nothing else is served in clear.
 * httptls_sniff_start (when libmicrohttpd opens conn, whose socket is fd)
 * has the TLS session read through a check of those bytes when they come,
 * so an idle connection holds no thread; NULL (logged) when it cannot.
 * httptls_sniff_free (NULL is fine) once conn has closed: the session
 * reads through it until then. */
typedef struct httptls_sniff httptls_sniff;
httptls_sniff *httptls_sniff_start(struct MHD_Connection *conn, int fd);
void httptls_sniff_free(httptls_sniff *sn);

/* Wipe the key and free t (NULL is fine). */
void httptls_free(httptls *t);

#endif
