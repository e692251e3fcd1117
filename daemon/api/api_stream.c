/* api_stream.c — a request body written to a temporary file as it arrives
 * (api.h's api_stream), for the routes whose bodies are too large to hold
 * in memory: dataset uploads and prediction inputs. The body is hashed
 * (SHA-256) on the way; a refusal (a bad name, over a limit, a write
 * error) is kept with its status and message, the file removed, and the
 * rest of the body dropped, up to a bound after which the client is cut
 * off. The route's handler answers from it once the body has ended. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "crypto/sha256.h"
#include "log.h"

/* A client streaming past a refusal is cut off after this much more. */
#define API_STREAM_DISCARD_MAX (8LL << 20)

struct api_stream {
    int fd;
    char tmp[4096];          /* "" once placed or removed */
    sha256_ctx sha;
    long long bytes, limit, discarded;
    const char *limit_name;  /* the config key of limit, for messages */
    int status;              /* a refusal's HTTP status; 0: none */
    char error[300];
};

api_stream *api_stream_new(long long limit)
{
    api_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = -1;
    s->limit = limit;
    s->limit_name = "the limit";
    if (!sha256_init(&s->sha)) {
        free(s);
        return NULL;
    }
    return s;
}

void api_stream_refuse(api_stream *s, int status, const char *fmt, ...)
{
    if (s->status)
        return;
    s->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
    if (s->tmp[0]) {
        unlink(s->tmp);
        s->tmp[0] = 0;
    }
}

bool api_stream_open_in(api_stream *s, const char *dir, const char *limit_name)
{
    s->limit_name = limit_name;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        log_error("http: cannot create %s: %s", dir, strerror(errno));
        api_stream_refuse(s, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "cannot store the body; see the server log");
        return false;
    }
    if (snprintf(s->tmp, sizeof s->tmp, "%s/.upload-XXXXXX", dir) >= (int)sizeof s->tmp ||
        (s->fd = mkostemp(s->tmp, O_CLOEXEC)) < 0) {
        log_error("http: cannot create a temporary file in %s: %s", dir, strerror(errno));
        s->tmp[0] = 0;
        api_stream_refuse(s, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "cannot store the body; see the server log");
        return false;
    }
    return true;
}

bool api_stream_write(api_stream *s, const char *data, size_t n)
{
    if (!s->status && s->bytes + (long long)n > s->limit)
        api_stream_refuse(s, MHD_HTTP_CONTENT_TOO_LARGE, "body is over %lld bytes (%s)",
                          s->limit, s->limit_name);
    if (s->status) {
        s->discarded += (long long)n;
        return s->discarded <= API_STREAM_DISCARD_MAX;
    }
    sha256_update(&s->sha, data, n);
    s->bytes += (long long)n;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(s->fd, data + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            log_error("http: writing %s: %s", s->tmp, strerror(e));
            api_stream_refuse(s, e == ENOSPC ? MHD_HTTP_INSUFFICIENT_STORAGE
                                             : MHD_HTTP_INTERNAL_SERVER_ERROR,
                              "cannot store the body: %s", strerror(e));
            return true;
        }
        done += (size_t)w;
    }
    return true;
}

bool api_stream_refused(const api_stream *s)
{
    return s->status != 0;
}

int api_stream_status(const api_stream *s, const char **error)
{
    *error = s->error;
    return s->status;
}

int api_stream_fd(const api_stream *s)
{
    return s->fd;
}

const char *api_stream_path(const api_stream *s)
{
    return s->tmp;
}

long long api_stream_bytes(const api_stream *s)
{
    return s->bytes;
}

void api_stream_sha256(api_stream *s, char hex[65])
{
    uint8_t digest[SHA256_DIGEST_LEN];
    sha256_final(&s->sha, digest);
    sha256_hex(digest, hex);
}

bool api_stream_place(api_stream *s, const char *final)
{
    if (fsync(s->fd) != 0 || rename(s->tmp, final) != 0) {
        log_error("http: putting %s in place as %s: %s", s->tmp, final, strerror(errno));
        return false;
    }
    s->tmp[0] = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", final);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return true;
}

void api_stream_free(api_stream *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->tmp[0])
        unlink(s->tmp);
    sha256_discard(&s->sha);
    free(s);
}
