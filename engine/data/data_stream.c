/* data_stream.c — sequential reads of a dataset file, gunzipped on the fly
 * when it starts with the gzip magic, in bounded memory: the range loaders
 * read the records they keep and skip (plain files: seek; gzip: inflate
 * into a scratch buffer) the rest. Errors are worded as data_file_read's,
 * so a range load fails with the same message as a whole load. */
#include "data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "io/io_file.h"

#define STREAM_CHUNK ((size_t)1 << 18)  /* compressed bytes per read(2) */
#define STREAM_SCRATCH ((size_t)1 << 16) /* inflate target when skipping */

struct data_stream {
    int fd;
    const char *path;
    const char *name;
    bool gz;
    uint64_t file_size;
    uint64_t pos;            /* uncompressed bytes consumed */
    /* gzip only */
    z_stream zs;
    bool zs_live;
    unsigned char *in;       /* STREAM_CHUNK compressed bytes */
    uint64_t in_read;        /* compressed bytes read from the file */
    bool input_done;         /* the file has no more bytes */
    bool ended;              /* the last member ended cleanly */
    bool truncated;          /* the input ended inside a member */
    unsigned char *scratch;
};

static int stream_fail(data_stream *s, int zrc, char *err, size_t errlen)
{
    if (zrc == Z_MEM_ERROR)
        return io_errf(err, errlen, "%s: out of memory decompressing", s->name);
    return io_errf(err, errlen, "%s: corrupt gzip data (%s)", s->name,
                   s->zs.msg ? s->zs.msg : "inflate failed");
}

/* Deflate codes a run of 258 bytes in as little as a quarter byte, so no
 * stream inflates beyond 1032 times its size (zlib's "technical details"). */
#define STREAM_MAX_RATIO 1032

uint64_t data_stream_max_size(const data_stream *s)
{
    return s->gz ? s->file_size * STREAM_MAX_RATIO : s->file_size;
}

int data_stream_open(const char *path, data_stream **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd;
    struct stat st;
    if (io_open_regular(path, &fd, &st, err, errlen) != 0)
        return -1;
    const char *name = io_basename(path);
    if (st.st_size <= 0) {
        close(fd);
        return io_errf(err, errlen, "%s: empty file", name);
    }
    unsigned char magic[2] = {0, 0};
    ssize_t got = pread(fd, magic, 2, 0);
    if (got < 0) {
        int e = errno;
        close(fd);
        return io_errf(err, errlen, "%s: read failed: %s", path, strerror(e));
    }
    bool gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    size_t nlen = strlen(name);
    if (!gz && nlen > 3 && strcmp(name + nlen - 3, ".gz") == 0) {
        close(fd);
        return io_errf(err, errlen, "%s: corrupt gzip data (no gzip header)", name);
    }
    data_stream *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return io_errf(err, errlen, "%s: out of memory", name);
    }
    s->fd = fd;
    s->path = path;
    s->name = name;
    s->gz = gz;
    s->file_size = (uint64_t)st.st_size;
    if (gz) {
        s->in = malloc(STREAM_CHUNK);
        s->scratch = malloc(STREAM_SCRATCH);
        if (!s->in || !s->scratch || inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK) {
            data_stream_close(s);
            return io_errf(err, errlen, "%s: zlib initialisation failed", name);
        }
        s->zs_live = true;
    }
    *out = s;
    return 0;
}

void data_stream_close(data_stream *s)
{
    if (!s)
        return;
    if (s->zs_live)
        inflateEnd(&s->zs);
    close(s->fd);
    free(s->in);
    free(s->scratch);
    free(s);
}

/* Refill the compressed input; false at the end of the file. */
static int stream_refill(data_stream *s, char *err, size_t errlen)
{
    ssize_t got = io_read_full(s->fd, s->in, STREAM_CHUNK);
    if (got < 0)
        return io_errf(err, errlen, "%s: read failed: %s", s->path, strerror(errno));
    s->in_read += (uint64_t)got;
    s->zs.next_in = s->in;
    s->zs.avail_in = (uInt)got;
    if (got == 0)
        s->input_done = true;
    return 0;
}

/* Make at least two compressed bytes available when the file has them,
 * to look for the magic of a following member. */
static int stream_peek2(data_stream *s, char *err, size_t errlen)
{
    while (s->zs.avail_in < 2 && !s->input_done) {
        size_t have = s->zs.avail_in;
        if (have)
            memmove(s->in, s->zs.next_in, have);
        ssize_t got = io_read_full(s->fd, s->in + have, STREAM_CHUNK - have);
        if (got < 0)
            return io_errf(err, errlen, "%s: read failed: %s", s->path, strerror(errno));
        s->in_read += (uint64_t)got;
        s->zs.next_in = s->in;
        s->zs.avail_in = (uInt)(have + (size_t)got);
        if (got == 0)
            s->input_done = true;
    }
    return 0;
}

/* Inflate up to n bytes into dst; *got short only at the end of the data. */
static int stream_inflate(data_stream *s, unsigned char *dst, size_t n, size_t *got,
                          char *err, size_t errlen)
{
    *got = 0;
    while (*got < n && !s->ended && !s->truncated) {
        if (s->zs.avail_in == 0 && !s->input_done && stream_refill(s, err, errlen) != 0)
            return -1;
        if (s->zs.avail_in == 0 && s->input_done) {
            /* The file ended inside a member (zero bytes of a member would
             * have ended cleanly before this). */
            s->truncated = true;
            break;
        }
        size_t want = n - *got;
        s->zs.next_out = dst + *got;
        s->zs.avail_out = want > UINT_MAX ? UINT_MAX : (uInt)want;
        uInt before = s->zs.avail_out;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        *got += before - s->zs.avail_out;
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members form one file (gzip -c a b). */
            if (stream_peek2(s, err, errlen) != 0)
                return -1;
            if (s->zs.avail_in >= 2 && s->zs.next_in[0] == 0x1f && s->zs.next_in[1] == 0x8b) {
                inflateReset(&s->zs);
                continue;
            }
            if (s->zs.avail_in > 0) {
                uint64_t stray = s->file_size - (s->in_read - s->zs.avail_in);
                return io_errf(err, errlen,
                               "%s: corrupt gzip data (%llu stray bytes after the stream)",
                               s->name, (unsigned long long)stray);
            }
            s->ended = true;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return stream_fail(s, rc, err, errlen);
    }
    return 0;
}

int data_stream_read(data_stream *s, void *dst, size_t n, size_t *got, char *err,
                     size_t errlen)
{
    *got = 0;
    if (!s->gz) {
        ssize_t r = io_read_full(s->fd, dst, n);
        if (r < 0)
            return io_errf(err, errlen, "%s: read failed: %s", s->path, strerror(errno));
        *got = (size_t)r;
        s->pos += (uint64_t)r;
        return 0;
    }
    if (stream_inflate(s, dst, n, got, err, errlen) != 0)
        return -1;
    s->pos += *got;
    return 0;
}

int data_stream_skip(data_stream *s, uint64_t n, uint64_t *skipped, char *err,
                     size_t errlen)
{
    *skipped = 0;
    if (!s->gz) {
        uint64_t left = s->file_size > s->pos ? s->file_size - s->pos : 0;
        uint64_t step = n < left ? n : left;
        if (lseek(s->fd, (off_t)(s->pos + step), SEEK_SET) < 0)
            return io_errf(err, errlen, "%s: seek failed: %s", s->path, strerror(errno));
        s->pos += step;
        *skipped = step;
        return 0;
    }
    while (*skipped < n) {
        uint64_t want = n - *skipped;
        size_t chunk = want < STREAM_SCRATCH ? (size_t)want : STREAM_SCRATCH;
        size_t got;
        if (stream_inflate(s, s->scratch, chunk, &got, err, errlen) != 0)
            return -1;
        s->pos += got;
        *skipped += got;
        if (got < chunk)
            break;
    }
    return 0;
}

int data_stream_finish(data_stream *s, uint64_t *total, bool *truncated, char *err,
                       size_t errlen)
{
    *truncated = false;
    if (!s->gz) {
        *total = s->file_size;
        return 0;
    }
    uint64_t skipped;
    if (data_stream_skip(s, UINT64_MAX, &skipped, err, errlen) != 0)
        return -1;
    if (s->pos == 0)
        return io_errf(err, errlen, "%s: empty file (no data in the gzip stream)", s->name);
    *total = s->pos;
    *truncated = s->truncated;
    return 0;
}

uint64_t data_stream_pos(const data_stream *s)
{
    return s->pos;
}
