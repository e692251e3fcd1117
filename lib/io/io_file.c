/* io_file.c — whole-file reads, float byte order and error formatting for
 * the engine's readers and writers. */
#include "io/io_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

/* read(2) until len bytes or end of file; returns bytes read or -1. */
static ssize_t io_read_full(int fd, unsigned char *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = read(fd, buf + done, len - done);
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

int io_read_file(const char *path, size_t max_bytes, unsigned char **data,
                 size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return io_errf(err, errlen, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return io_errf(err, errlen, "%s: not a regular file", path);
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > max_bytes) {
        close(fd);
        return io_errf(err, errlen, "%s: file too large (%lld bytes, limit %zu)",
                       path, (long long)st.st_size, max_bytes);
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return io_errf(err, errlen, "%s: out of memory reading %zu bytes", path, size);
    }
    ssize_t got = io_read_full(fd, buf, size);
    int e = errno;
    close(fd);
    if (got < 0) {
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
