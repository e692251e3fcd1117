/* http.h — a thin libcurl wrapper for talking to punchcardd: one reusable
 * connection, the secret sent as an Authorization: Bearer header (never in
 * a URL, never logged), responses buffered in memory or streamed to a file,
 * and transport failures turned into messages that say what to do. */
#ifndef PUNCH_CLIENT_HTTP_H
#define PUNCH_CLIENT_HTTP_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

typedef struct http_client http_client;

typedef struct http_response {
    long status;
    char *body;           /* NUL-terminated; empty when streamed to a sink */
    size_t len;
    long long log_offset; /* X-Log-Offset, or -1 when absent */
    char job_state[32];   /* X-Job-State, or "" when absent */
} http_response;

/* base_url has no trailing slash; secret may be NULL (unauthenticated
 * requests). Returns NULL with *err filled. */
http_client *http_client_new(const char *base_url, const char *secret, cli_error *err);
void http_client_free(http_client *client);
const char *http_client_url(const http_client *client);

/* Send METHOD base_url+path (path starts with '/') with an optional JSON
 * body. When sink is non-NULL and the status is 200, the body is written to
 * sink instead of memory (downloads of any size). Returns 0 whenever the
 * server answered, whatever the status; otherwise PUNCH_EXIT_UNREACHABLE (or
 * PUNCH_EXIT_LOCAL when the sink failed) with *err filled. *resp is always
 * initialised; free it with http_response_free. */
int http_request(http_client *client, const char *method, const char *path,
                 const char *body, size_t body_len, FILE *sink,
                 http_response *resp, cli_error *err);
void http_response_free(http_response *resp);

/* Percent-encode s for use as one path segment or query value; heap string
 * or NULL when out of memory. */
char *http_escape(const char *s);

#endif
