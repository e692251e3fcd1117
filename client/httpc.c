/* httpc.c — libcurl underneath httpc.h. One easy handle per client, so
 * polling loops (wait, logs -f) reuse a single keep-alive connection. */
#include "httpc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "grow/grow.h"

#define HTTPC_CONNECT_TIMEOUT_S 10L
/* A download may be large; give up only when it stalls. */
#define HTTPC_STALL_SECONDS 60L

struct httpc_client {
    CURL *curl;
    char *base_url;
    struct curl_slist *headers; /* Authorization (when a secret is set) */
    char *cacert;               /* NULL: the system's CAs */
    char curl_err[CURL_ERROR_SIZE];
};

/* Per-request state the callbacks share. */
typedef struct httpc_transfer {
    CURL *curl;
    httpc_response *resp;
    size_t cap;
    FILE *sink;
    int sink_errno;  /* errno of a failed fwrite into sink, else 0 */
} httpc_transfer;

httpc_client *httpc_client_new(const char *base_url, const char *secret, cli_error *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_fail(err, PUNCH_EXIT_LOCAL, "cannot initialise libcurl");
        return NULL;
    }
    httpc_client *c = calloc(1, sizeof *c);
    if (c == NULL || (c->base_url = strdup(base_url)) == NULL ||
        (c->curl = curl_easy_init()) == NULL) {
        cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory setting up HTTP");
        httpc_client_free(c);
        return NULL;
    }
    if (secret != NULL) {
        char *line = NULL;
        if (asprintf(&line, "Authorization: Bearer %s", secret) < 0) {
            cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory setting up HTTP");
            httpc_client_free(c);
            return NULL;
        }
        c->headers = curl_slist_append(NULL, line);
        explicit_bzero(line, strlen(line));
        free(line);
        if (c->headers == NULL) {
            cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory setting up HTTP");
            httpc_client_free(c);
            return NULL;
        }
    }
    return c;
}

int httpc_client_trust(httpc_client *c, const char *cacert, cli_error *err)
{
    free(c->cacert);
    c->cacert = NULL;
    if (cacert != NULL && (c->cacert = strdup(cacert)) == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory setting up HTTP");
    return 0;
}

void httpc_client_free(httpc_client *c)
{
    if (c == NULL)
        return;
    if (c->curl != NULL)
        curl_easy_cleanup(c->curl);
    /* The slist holds the secret: wipe it before it goes back to the heap. */
    for (struct curl_slist *h = c->headers; h != NULL; h = h->next)
        explicit_bzero(h->data, strlen(h->data));
    curl_slist_free_all(c->headers);
    free(c->base_url);
    free(c->cacert);
    free(c);
    curl_global_cleanup();
}

const char *httpc_client_url(const httpc_client *c)
{
    return c->base_url;
}

static int httpc_append(httpc_transfer *t, const char *data, size_t n)
{
    httpc_response *r = t->resp;
    if (!grow_reserve((void **)&r->body, &t->cap, r->len + n + 1, 1))
        return -1;
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return 0;
}

static size_t httpc_on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    httpc_transfer *t = userdata;
    size_t n = size * nmemb;
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    if (t->sink != NULL && status == 200) {
        if (fwrite(data, 1, n, t->sink) != n) {
            t->sink_errno = errno ? errno : EIO;
            return 0;
        }
        return n;
    }
    return httpc_append(t, data, n) == 0 ? n : 0;
}

/* Value of header `name` in the raw line, or NULL. */
static const char *httpc_header_value(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return NULL;
    const char *v = line + k + 1;
    while (v < line + n && (*v == ' ' || *v == '\t'))
        v++;
    return v;
}

/* Retry-After's delay-seconds form (the daemon's); -1 for an HTTP date or
 * anything else, so a caller never waits on a value it misread. */
static long httpc_seconds(const char *v, const char *end)
{
    long s = 0;
    const char *p = v;
    for (; p < end && isdigit((unsigned char)*p); p++) {
        if (s > 86400L * 365)
            return -1;
        s = s * 10 + (*p - '0');
    }
    while (p < end && isspace((unsigned char)*p))
        p++;
    return p == v || p != end ? -1 : s;
}

static size_t httpc_on_header(char *line, size_t size, size_t nmemb, void *userdata)
{
    httpc_transfer *t = userdata;
    size_t n = size * nmemb;
    const char *v;
    if ((v = httpc_header_value(line, n, "X-Log-Offset")) != NULL) {
        t->resp->log_offset = strtoll(v, NULL, 10);
    } else if ((v = httpc_header_value(line, n, "X-Job-State")) != NULL) {
        size_t i = 0;
        while (v + i < line + n && isalpha((unsigned char)v[i]) &&
               i + 1 < sizeof t->resp->job_state) {
            t->resp->job_state[i] = v[i];
            i++;
        }
        t->resp->job_state[i] = '\0';
    } else if ((v = httpc_header_value(line, n, "Retry-After")) != NULL) {
        t->resp->retry_after = httpc_seconds(v, line + n);
    }
    return n;
}

/* Turn a transport failure into what the user should check. */
static int httpc_transport_error(httpc_client *c, CURLcode rc, cli_error *err)
{
    long os_errno = 0;
    curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &os_errno);
    const char *url = c->base_url;
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        if (os_errno == ECONNREFUSED || os_errno == 0)
            return cli_fail(err, PUNCH_EXIT_UNREACHABLE,
                            "cannot reach %s: connection refused — is punchcardd running? "
                            "set PUNCH_URL or --url", url);
        return cli_fail(err, PUNCH_EXIT_UNREACHABLE,
                        "cannot reach %s: %s — is punchcardd running there? "
                        "set PUNCH_URL or --url", url, strerror((int)os_errno));
    case CURLE_COULDNT_RESOLVE_HOST:
        return cli_fail(err, PUNCH_EXIT_UNREACHABLE,
                        "cannot reach %s: unknown host — check PUNCH_URL or --url", url);
    case CURLE_PEER_FAILED_VERIFICATION:
        return cli_fail(err, PUNCH_EXIT_UNREACHABLE,
                        "cannot reach %s: the server's certificate is not trusted (%s) — pass "
                        "--cacert FILE or set PUNCH_CACERT to the CA that signed it",
                        url, c->curl_err[0] ? c->curl_err : curl_easy_strerror(rc));
    case CURLE_SSL_CACERT_BADFILE:
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot read the CA file %s (--cacert or "
                        "PUNCH_CACERT): %s", c->cacert ? c->cacert : "(the system's)",
                        c->curl_err[0] ? c->curl_err : curl_easy_strerror(rc));
    case CURLE_OPERATION_TIMEDOUT:
        return cli_fail(err, PUNCH_EXIT_UNREACHABLE,
                        "cannot reach %s: no answer (timed out) — is the address right and "
                        "punchcardd up?", url);
    default:
        return cli_fail(err, PUNCH_EXIT_UNREACHABLE, "cannot reach %s: %s", url,
                        c->curl_err[0] ? c->curl_err : curl_easy_strerror(rc));
    }
}

/* An upload's source and its progress callback (httpc_upload). */
typedef struct httpc_source {
    FILE *f;
    long long size;
    void (*progress)(void *ctx, long long done, long long total);
    void *ctx;
} httpc_source;

static size_t httpc_on_read(char *buf, size_t size, size_t n, void *arg)
{
    httpc_source *src = arg;
    size_t got = fread(buf, size, n, src->f);
    if (got == 0 && ferror(src->f))
        return CURL_READFUNC_ABORT;
    return got;
}

static int httpc_on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
                             curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    httpc_source *src = arg;
    src->progress(src->ctx, (long long)ulnow, ultotal > 0 ? (long long)ultotal : src->size);
    return 0;
}

static int httpc_perform(httpc_client *c, const char *method, const char *path,
                         const char *body, size_t body_len, httpc_source *src, FILE *sink,
                         httpc_response *resp, cli_error *err)
{
    memset(resp, 0, sizeof *resp);
    resp->log_offset = -1;
    resp->retry_after = -1;
    char *url = NULL;
    if (asprintf(&url, "%s%s", c->base_url, path) < 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");

    httpc_transfer t = {.curl = c->curl, .resp = resp, .sink = sink};
    CURL *h = c->curl;
    curl_easy_reset(h);
    c->curl_err[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "punch/" PUNCH_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, HTTPC_CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, HTTPC_STALL_SECONDS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, httpc_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, httpc_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
    if (c->cacert != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
    struct curl_slist *headers = NULL;
    for (struct curl_slist *s = c->headers; s != NULL; s = s->next) {
        struct curl_slist *grown = curl_slist_append(headers, s->data);
        if (grown == NULL) {
            curl_slist_free_all(headers);
            free(url);
            return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
        }
        headers = grown;
    }
    if (body != NULL) {
        struct curl_slist *grown = curl_slist_append(headers, "Content-Type: application/json");
        if (grown == NULL) {
            curl_slist_free_all(headers);
            free(url);
            return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
        }
        headers = grown;
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    if (src != NULL) {
        struct curl_slist *grown =
            curl_slist_append(headers, "Content-Type: application/octet-stream");
        if (grown == NULL) {
            curl_slist_free_all(headers);
            free(url);
            return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
        }
        headers = grown;
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, httpc_on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, src);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)src->size);
        if (src->progress != NULL) {
            curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
            curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, httpc_on_progress);
            curl_easy_setopt(h, CURLOPT_XFERINFODATA, src);
        }
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (body == NULL && src == NULL && strcmp(method, "POST") == 0) {
        /* A POST without a body (resume): an empty one, or curl sends GET. */
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0 &&
        !(src != NULL && strcmp(method, "PUT") == 0))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);

    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    /* The easy handle keeps a pointer to the list until the next reset. */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    for (struct curl_slist *s = headers; s != NULL; s = s->next)
        explicit_bzero(s->data, strlen(s->data));
    curl_slist_free_all(headers);
    free(url);

    if (resp->body == NULL && httpc_append(&t, "", 0) != 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    if (rc == CURLE_WRITE_ERROR && t.sink_errno != 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write the download: %s",
                        strerror(t.sink_errno));
    if (rc != CURLE_OK)
        return httpc_transport_error(c, rc, err);
    return 0;
}

int httpc_request(httpc_client *c, const char *method, const char *path,
                  const char *body, size_t body_len, FILE *sink,
                  httpc_response *resp, cli_error *err)
{
    return httpc_perform(c, method, path, body, body_len, NULL, sink, resp, err);
}

int httpc_upload(httpc_client *c, const char *path, FILE *src, long long size,
                 void (*progress)(void *ctx, long long done, long long total), void *ctx,
                 httpc_response *resp, cli_error *err)
{
    httpc_source s = {src, size, progress, ctx};
    return httpc_perform(c, "PUT", path, NULL, 0, &s, NULL, resp, err);
}

void httpc_response_free(httpc_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->len = 0;
}

char *httpc_escape(const char *s)
{
    char *escaped = curl_easy_escape(NULL, s, 0);
    if (escaped == NULL)
        return NULL;
    char *copy = strdup(escaped);
    curl_free(escaped);
    return copy;
}
