/* io_file.c — whole-file reads, float byte order and error formatting for
 * the engine's readers and writers. */
#include "io/io_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int io_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *io_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The one full-read loop: read (off < 0) or pread at off until len bytes,
 * end of file or an error other than EINTR. */
static ssize_t io_full(int fd, void *buf, size_t len, off_t off)
{
    size_t done = 0;
    while (done < len) {
        unsigned char *at = (unsigned char *)buf + done;
        ssize_t r = off < 0 ? read(fd, at, len - done)
                            : pread(fd, at, len - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

ssize_t io_read_full(int fd, void *buf, size_t len)
{
    return io_full(fd, buf, len, -1);
}

ssize_t io_pread_full(int fd, void *buf, size_t len, off_t off)
{
    return off < 0 ? (errno = EINVAL, -1) : io_full(fd, buf, len, off);
}

/* Read a pipe to its end into a growing buffer, refusing more than max_bytes.
 * Returns 0 or -1 with err set; *data gets one spare NUL byte. */
static int io_read_pipe(int fd, const char *path, size_t max_bytes, unsigned char **data,
                        size_t *len, char *err, size_t errlen)
{
    size_t cap = 8192, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return io_errf(err, errlen, "%s: out of memory", path);
    for (;;) {
        if (n + 1 == cap) {
            unsigned char *grown = cap > max_bytes ? NULL : realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                return cap > max_bytes
                           ? io_errf(err, errlen, "%s: more than %zu bytes", path, max_bytes)
                           : io_errf(err, errlen, "%s: out of memory", path);
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t got = io_read_full(fd, buf + n, cap - n - 1);
        if (got < 0) {
            int e = errno;
            free(buf);
            return io_errf(err, errlen, "%s: read failed: %s", path, strerror(e));
        }
        n += (size_t)got;
        if (n + 1 < cap)
            break;
    }
    if (n > max_bytes) {
        free(buf);
        return io_errf(err, errlen, "%s: more than %zu bytes", path, max_bytes);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

/* Read a regular file of st->st_size bytes (at most max_bytes). */
static int io_read_regular(int fd, const struct stat *st, const char *path, size_t max_bytes,
                           unsigned char **data, size_t *len, char *err, size_t errlen)
{
    if (st->st_size < 0 || (unsigned long long)st->st_size > max_bytes)
        return io_errf(err, errlen, "%s: file too large (%lld bytes, limit %zu)",
                       path, (long long)st->st_size, max_bytes);
    size_t size = (size_t)st->st_size;
    unsigned char *buf = malloc(size + 1);
    if (!buf)
        return io_errf(err, errlen, "%s: out of memory reading %zu bytes", path, size);
    ssize_t got = io_read_full(fd, buf, size);
    if (got < 0) {
        int e = errno;
        free(buf);
        return io_errf(err, errlen, "%s: read failed: %s", path, strerror(e));
    }
    /* A file that shrank while we read it is simply shorter: the parsers
     * then report it as truncated with their own context. */
    buf[got] = 0;
    *data = buf;
    *len = (size_t)got;
    return 0;
}

/* open(2) + fstat(2) with the messages every reader gives. */
static int io_open_stat(const char *path, int *fd_out, struct stat *st, char *err, size_t errlen)
{
    *fd_out = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return io_errf(err, errlen, "%s: cannot stat: %s", path, strerror(e));
    }
    *fd_out = fd;
    return 0;
}

int io_open_regular(const char *path, int *fd_out, struct stat *st, char *err, size_t errlen)
{
    int fd;
    if (io_open_stat(path, &fd, st, err, errlen) != 0)
        return -1;
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        *fd_out = -1;
        return io_errf(err, errlen, "%s: not a regular file", path);
    }
    *fd_out = fd;
    return 0;
}

static int io_read_any(const char *path, size_t max_bytes, bool pipe_ok, unsigned char **data,
                       size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    int fd;
    struct stat st;
    if (io_open_stat(path, &fd, &st, err, errlen) != 0)
        return -1;
    int rc;
    if (S_ISREG(st.st_mode))
        rc = io_read_regular(fd, &st, path, max_bytes, data, len, err, errlen);
    else if (pipe_ok && S_ISFIFO(st.st_mode))
        rc = io_read_pipe(fd, path, max_bytes, data, len, err, errlen);
    else
        rc = io_errf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return rc;
}

int io_read_file(const char *path, size_t max_bytes, unsigned char **data,
                 size_t *len, char *err, size_t errlen)
{
    return io_read_any(path, max_bytes, false, data, len, err, errlen);
}

int io_read_file_or_pipe(const char *path, size_t max_bytes, unsigned char **data,
                         size_t *len, char *err, size_t errlen)
{
    return io_read_any(path, max_bytes, true, data, len, err, errlen);
}

static int io_host_is_le(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void io_bswap32_copy(unsigned char *dst, const unsigned char *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[4 * i + 0] = src[4 * i + 3];
        dst[4 * i + 1] = src[4 * i + 2];
        dst[4 * i + 2] = src[4 * i + 1];
        dst[4 * i + 3] = src[4 * i + 0];
    }
}

void io_floats_to_le(unsigned char *dst, const float *src, size_t n)
{
    if (io_host_is_le())
        memcpy(dst, src, n * sizeof(float));
    else
        io_bswap32_copy(dst, (const unsigned char *)src, n);
}

void io_floats_from_le(float *dst, const unsigned char *src, size_t n)
{
    if (io_host_is_le())
        memcpy(dst, src, n * sizeof(float));
    else
        io_bswap32_copy((unsigned char *)dst, src, n);
}

void io_floats_from_be(float *dst, const unsigned char *src, size_t n)
{
    if (io_host_is_le())
        io_bswap32_copy((unsigned char *)dst, src, n);
    else
        memcpy(dst, src, n * sizeof(float));
}
