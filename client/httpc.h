/* httpc.h — punch's HTTP client: a thin libcurl wrapper for talking to
 * punchcardd. One reusable connection, the secret sent as an Authorization:
 * Bearer header (never in a URL, never logged), responses buffered in
 * memory or streamed to a file, and transport failures turned into messages
 * that say what to do. The client side of HTTP only: punchcardd's server side
 * lives in daemon/ and shares nothing with this but the protocol. */
#ifndef PUNCH_CLIENT_HTTPC_H
#define PUNCH_CLIENT_HTTPC_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

typedef struct httpc_client httpc_client;

typedef struct httpc_response {
    long status;
    char *body;           /* NUL-terminated; empty when streamed to a sink */
    size_t len;
    long long log_offset; /* X-Log-Offset, or -1 when absent */
    char job_state[32];   /* X-Job-State, or "" when absent */
    long retry_after;     /* Retry-After in seconds, or -1 when absent or a date */
} httpc_response;

/* base_url has no trailing slash; secret may be NULL (unauthenticated
 * requests). Returns NULL with *err filled. */
httpc_client *httpc_client_new(const char *base_url, const char *secret, cli_error *err);
void httpc_client_free(httpc_client *client);

/* Verify an https:// server against the PEM CA file cacert instead of the
 * system's CAs (NULL: the system's). Returns 0, or PUNCH_EXIT_LOCAL when out
 * of memory. */
int httpc_client_trust(httpc_client *client, const char *cacert, cli_error *err);
const char *httpc_client_url(const httpc_client *client);

/* Send METHOD base_url+path (path starts with '/') with an optional JSON
 * body. When sink is non-NULL and the status is 200, the body is written to
 * sink instead of memory (downloads of any size). Returns 0 whenever the
 * server answered, whatever the status; otherwise PUNCH_EXIT_UNREACHABLE (or
 * PUNCH_EXIT_LOCAL when the sink failed) with *err filled. *resp is always
 * initialised; free it with httpc_response_free. */
int httpc_request(httpc_client *client, const char *method, const char *path,
                  const char *body, size_t body_len, FILE *sink,
                 httpc_response *resp, cli_error *err);
void httpc_response_free(httpc_response *resp);

/* PUT size bytes read from src to base_url+path as the raw body
 * (application/octet-stream), streamed: never held in memory. progress
 * (may be NULL) is called as bytes go out. Returns as httpc_request. */
int httpc_upload(httpc_client *client, const char *path, FILE *src, long long size,
                 void (*progress)(void *ctx, long long done, long long total), void *ctx,
                 httpc_response *resp, cli_error *err);

/* Percent-encode s for use as one path segment or query value; heap string
 * or NULL when out of memory. */
char *httpc_escape(const char *s);

#endif
