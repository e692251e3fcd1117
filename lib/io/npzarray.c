/* npzarray.c — the ZIP structure of an .npz read through a positional
 * reader: the end record (and ZIP64's), the central directory, each
 * member's local header and .npy prefix. Member data are read in chunks,
 * STORED by offset or DEFLATED through zlib, so memory stays bounded
 * whatever the archive's size. npz.c's whole-file reader sits on top. */
#include "io/npzarray.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "io/io_file.h"

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP64_END_SIG 0x06064b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u
#define ZIP_LOCAL_LEN 30
#define ZIP_CENTRAL_LEN 46
#define ZIP_END_LEN 22
#define NPZ_MAX_DIR ((uint64_t)16 << 20)
#define NPZ_MAX_MEMBER ((uint64_t)1 << 40)
#define NPZ_HEADER_READ 65536
#define NPZ_CHUNK 65536

static int npz_read_exact(const npz_index *ix, uint64_t off, void *dst, size_t len)
{
    if (off > ix->size || len > ix->size - off)
        return -1;
    return ix->read_at(ix->ctx, off, dst, len) == (long long)len ? 0 : -1;
}

/* Where the central directory is and how many entries it has. */
typedef struct zip_dir {
    uint64_t offset, size, entries;
} zip_dir;

static int npz_find_dir(const npz_index *ix, zip_dir *d, char *err, size_t errlen)
{
    if (ix->size < ZIP_END_LEN)
        return io_errf(err, errlen, "not a ZIP archive (too short)");
    /* The end record is the last 22 bytes plus a comment of up to 64 KiB,
     * whose length must reach exactly the end of the file; the ZIP64
     * locator is the 20 bytes before it. */
    uint64_t tail_len = ix->size < ZIP_END_LEN + 0xffff + 20 ? ix->size
                                                             : ZIP_END_LEN + 0xffff + 20;
    uint64_t base = ix->size - tail_len;
    unsigned char *tail = malloc(tail_len);
    if (!tail)
        return io_errf(err, errlen, "out of memory");
    if (npz_read_exact(ix, base, tail, tail_len) != 0) {
        free(tail);
        return io_errf(err, errlen, "cannot read the end of the archive");
    }
    size_t end = SIZE_MAX;
    for (size_t pos = tail_len - ZIP_END_LEN + 1; pos-- > 0;) {
        if (io_get_le32(tail + pos) == ZIP_END_SIG &&
            pos + ZIP_END_LEN + io_get_le16(tail + pos + 20) == tail_len) {
            end = pos;
            break;
        }
    }
    if (end == SIZE_MAX) {
        free(tail);
        return io_errf(err, errlen, "not a ZIP archive (no end of central directory; "
                       "truncated?)");
    }
    d->entries = io_get_le16(tail + end + 10);
    d->size = io_get_le32(tail + end + 12);
    d->offset = io_get_le32(tail + end + 16);
    bool zip64 = d->entries == 0xffff || d->size == 0xffffffffu || d->offset == 0xffffffffu;
    bool locator = end >= 20 && io_get_le32(tail + end - 20) == ZIP64_LOCATOR_SIG;
    uint64_t rec = locator ? io_get_le64(tail + end - 20 + 8) : 0;
    free(tail);
    if (zip64) {
        unsigned char r[56];
        if (!locator)
            return io_errf(err, errlen, "ZIP64 end locator missing");
        if (npz_read_exact(ix, rec, r, sizeof r) != 0 || io_get_le32(r) != ZIP64_END_SIG)
            return io_errf(err, errlen, "ZIP64 end record out of bounds");
        d->entries = io_get_le64(r + 32);
        d->size = io_get_le64(r + 40);
        d->offset = io_get_le64(r + 48);
    }
    if (d->offset > ix->size || d->size > ix->size - d->offset)
        return io_errf(err, errlen, "central directory outside the file");
    if (d->size > NPZ_MAX_DIR)
        return io_errf(err, errlen, "central directory of %llu bytes is too large",
                       (unsigned long long)d->size);
    if (d->entries > d->size / ZIP_CENTRAL_LEN)
        return io_errf(err, errlen, "central directory too small for %llu entries",
                       (unsigned long long)d->entries);
    return 0;
}

/* One central directory entry, with ZIP64 sizes applied. */
typedef struct zip_entry {
    const char *name;
    size_t name_len;
    unsigned method, flags;
    uint32_t crc;
    uint64_t csize, usize, local;
    size_t record_len;
} zip_entry;

/* Replace 0xffffffff fields by their ZIP64 extra field (id 1) values, which
 * come in the order: uncompressed, compressed, local header offset. */
static int npz_zip64_extra(const unsigned char *x, size_t xlen, zip_entry *e)
{
    uint64_t *fields[3] = {&e->usize, &e->csize, &e->local};
    while (xlen >= 4) {
        unsigned id = io_get_le16(x), sz = io_get_le16(x + 2);
        if (sz > xlen - 4)
            return -1;
        if (id == 1) {
            const unsigned char *q = x + 4;
            size_t left = sz;
            for (int i = 0; i < 3; i++) {
                if (*fields[i] != 0xffffffffu)
                    continue;
                if (left < 8)
                    return -1;
                *fields[i] = io_get_le64(q);
                q += 8;
                left -= 8;
            }
            return 0;
        }
        x += 4 + sz;
        xlen -= 4 + sz;
    }
    return e->usize == 0xffffffffu || e->csize == 0xffffffffu || e->local == 0xffffffffu ? -1 : 0;
}

static int npz_central_entry(const unsigned char *p, size_t left, zip_entry *e,
                             char *err, size_t errlen)
{
    if (left < ZIP_CENTRAL_LEN || io_get_le32(p) != ZIP_CENTRAL_SIG)
        return io_errf(err, errlen, "corrupt central directory entry");
    size_t nlen = io_get_le16(p + 28), xlen = io_get_le16(p + 30), clen = io_get_le16(p + 32);
    if (ZIP_CENTRAL_LEN + nlen + xlen + clen > left)
        return io_errf(err, errlen, "central directory entry runs past its end");
    e->flags = io_get_le16(p + 8);
    e->method = io_get_le16(p + 10);
    e->crc = io_get_le32(p + 16);
    e->csize = io_get_le32(p + 20);
    e->usize = io_get_le32(p + 24);
    e->local = io_get_le32(p + 42);
    e->name = (const char *)p + ZIP_CENTRAL_LEN;
    e->name_len = nlen;
    e->record_len = ZIP_CENTRAL_LEN + nlen + xlen + clen;
    if (npz_zip64_extra(p + ZIP_CENTRAL_LEN + nlen, xlen, e) != 0)
        return io_errf(err, errlen, "%.*s: corrupt ZIP64 extra field", (int)nlen, e->name);
    return 0;
}

/* A member read from its start, in order. */
typedef struct npz_cursor {
    const npz_index *ix;
    const npz_array *a;
    uint64_t in_pos;        /* compressed bytes consumed */
    uint64_t out_pos;       /* member bytes produced */
    z_stream zs;
    bool z_open, z_end;
    unsigned char in[NPZ_CHUNK];
} npz_cursor;

static int npz_cursor_open(npz_cursor *c, const npz_index *ix, const npz_array *a)
{
    memset(&c->zs, 0, sizeof c->zs);
    c->ix = ix;
    c->a = a;
    c->in_pos = c->out_pos = 0;
    c->z_open = c->z_end = false;
    if (a->method == 8) {
        if (inflateInit2(&c->zs, -MAX_WBITS) != Z_OK)
            return -1;
        c->z_open = true;
    }
    return 0;
}

static void npz_cursor_close(npz_cursor *c)
{
    if (c->z_open)
        inflateEnd(&c->zs);
    c->z_open = false;
}

/* The next len member bytes into dst; -1 with a reason when the member
 * ends early or its compressed data are corrupt. */
static int npz_cursor_read(npz_cursor *c, unsigned char *dst, size_t len, char *err,
                           size_t errlen)
{
    const npz_array *a = c->a;
    if (len > a->usize - c->out_pos)
        return io_errf(err, errlen, "member %s: truncated", a->name);
    if (a->method == 0) {
        if (npz_read_exact(c->ix, a->offset + c->out_pos, dst, len) != 0)
            return io_errf(err, errlen, "member %s: truncated", a->name);
        c->out_pos += len;
        return 0;
    }
    c->zs.next_out = dst;
    c->zs.avail_out = (uInt)len;
    while (c->zs.avail_out > 0) {
        if (c->z_end)
            return io_errf(err, errlen, "member %s: truncated (compressed data end early)",
                           a->name);
        if (c->zs.avail_in == 0) {
            uint64_t left = a->csize - c->in_pos;
            size_t n = left < NPZ_CHUNK ? (size_t)left : NPZ_CHUNK;
            if (n == 0)
                return io_errf(err, errlen, "member %s: truncated", a->name);
            if (npz_read_exact(c->ix, a->offset + c->in_pos, c->in, n) != 0)
                return io_errf(err, errlen, "member %s: truncated", a->name);
            c->in_pos += n;
            c->zs.next_in = c->in;
            c->zs.avail_in = (uInt)n;
        }
        int rc = inflate(&c->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            c->z_end = true;
        else if (rc != Z_OK && rc != Z_BUF_ERROR)
            return io_errf(err, errlen, "member %s: corrupt compressed data", a->name);
    }
    c->out_pos += len;
    return 0;
}

/* A cursor at member a's first byte and a chunk buffer for a walk over it
 * (free both when done); -1, with nothing to free, out of memory. */
static int npz_walk_begin(const npz_index *ix, const npz_array *a, npz_cursor **c,
                          unsigned char **buf)
{
    *c = malloc(sizeof **c);
    *buf = malloc(NPZ_CHUNK);
    if (!*c || !*buf || npz_cursor_open(*c, ix, a) != 0) {
        free(*c);
        free(*buf);
        return -1;
    }
    return 0;
}

/* Read a member in chunks, calling fn on each; CRC and length checked at
 * the end. */
static int npz_member_walk(const npz_index *ix, const npz_array *a,
                           int (*fn)(void *arg, const unsigned char *p, size_t n), void *arg,
                           char *err, size_t errlen)
{
    npz_cursor *c;
    unsigned char *buf;
    if (npz_walk_begin(ix, a, &c, &buf) != 0)
        return io_errf(err, errlen, "out of memory");
    uLong crc = crc32(0L, Z_NULL, 0);
    int rc = 0;
    while (rc == 0 && c->out_pos < a->usize) {
        uint64_t left = a->usize - c->out_pos;
        size_t n = left < NPZ_CHUNK ? (size_t)left : NPZ_CHUNK;
        rc = npz_cursor_read(c, buf, n, err, errlen);
        if (rc == 0) {
            crc = crc32(crc, buf, (uInt)n);
            if (fn && fn(arg, buf, n) != 0)
                rc = io_errf(err, errlen, "member %s: out of memory", a->name);
        }
    }
    npz_cursor_close(c);
    free(c);
    free(buf);
    if (rc == 0 && (uint32_t)crc != a->crc)
        return io_errf(err, errlen, "member %s: CRC-32 mismatch (corrupt data)", a->name);
    return rc;
}

int npz_array_verify(const npz_index *ix, const npz_array *a, char *err, size_t errlen)
{
    return npz_member_walk(ix, a, NULL, NULL, err, errlen);
}

typedef struct npz_sink {
    unsigned char *p;
    size_t used;
} npz_sink;

static int npz_sink_add(void *arg, const unsigned char *p, size_t n)
{
    npz_sink *s = arg;
    memcpy(s->p + s->used, p, n);
    s->used += n;
    return 0;
}

int npz_array_member(const npz_index *ix, const npz_array *a, unsigned char **out,
                     char *err, size_t errlen)
{
    npz_sink s = {malloc(a->usize ? a->usize : 1), 0};
    if (!s.p)
        return io_errf(err, errlen, "member %s: out of memory", a->name);
    if (npz_member_walk(ix, a, npz_sink_add, &s, err, errlen) != 0) {
        free(s.p);
        return -1;
    }
    *out = s.p;
    return 0;
}

/* The first bytes of a member (up to NPZ_HEADER_READ) parsed as a .npy
 * prefix into a->h, and its length checked against the shape. */
static int npz_member_header(const npz_index *ix, npz_array *a, char *err, size_t errlen)
{
    size_t want = a->usize < NPZ_HEADER_READ ? (size_t)a->usize : NPZ_HEADER_READ;
    unsigned char *buf = malloc(want ? want : 1);
    npz_cursor *c = malloc(sizeof *c);
    int rc = -1;
    if (!buf || !c || npz_cursor_open(c, ix, a) != 0) {
        io_errf(err, errlen, "out of memory");
    } else {
        rc = npz_cursor_read(c, buf, want, err, errlen);
        npz_cursor_close(c);
    }
    char why[200];
    if (rc == 0 && npy_parse_header(buf, want, &a->h, why, sizeof why) != 0)
        rc = io_errf(err, errlen, "member %s: %s", a->name, why);
    free(buf);
    free(c);
    if (rc != 0)
        return -1;
    uint64_t need = a->h.count * (uint64_t)a->h.itemsize;
    if (a->usize - a->h.data_start != need)
        return io_errf(err, errlen, "member %s: %llu data bytes, shape needs %llu%s", a->name,
                       (unsigned long long)(a->usize - a->h.data_start),
                       (unsigned long long)need,
                       a->usize - a->h.data_start < need ? " (truncated)" : "");
    return 0;
}

static int npz_member_locate(npz_index *ix, const zip_entry *e, npz_array *a, char *err,
                             size_t errlen)
{
    if (e->flags & 1)
        return io_errf(err, errlen, "member %s: encrypted members not supported", a->name);
    if (e->method != 0 && e->method != 8)
        return io_errf(err, errlen, "member %s: compression method %u not supported", a->name,
                       e->method);
    unsigned char lh[ZIP_LOCAL_LEN];
    if (npz_read_exact(ix, e->local, lh, sizeof lh) != 0 || io_get_le32(lh) != ZIP_LOCAL_SIG)
        return io_errf(err, errlen, "member %s: local header out of bounds", a->name);
    uint64_t start = e->local + ZIP_LOCAL_LEN + io_get_le16(lh + 26) + io_get_le16(lh + 28);
    if (start > ix->size || e->csize > ix->size - start)
        return io_errf(err, errlen, "member %s: truncated (data run past the end of the file)",
                       a->name);
    /* DEFLATE expands at most about 1032:1: a larger claim is a lie. */
    if (e->usize > NPZ_MAX_MEMBER || (e->method == 0 && e->usize != e->csize) ||
        (e->method == 8 && e->usize > e->csize * 1032 + 1024))
        return io_errf(err, errlen, "member %s: implausible size %llu", a->name,
                       (unsigned long long)e->usize);
    a->method = e->method;
    a->offset = start;
    a->csize = e->csize;
    a->usize = e->usize;
    a->crc = e->crc;
    return npz_member_header(ix, a, err, errlen);
}

int npz_index_open(npz_read_at_fn read_at, void *ctx, uint64_t size, npz_index *ix,
                   char *err, size_t errlen)
{
    memset(ix, 0, sizeof *ix);
    ix->read_at = read_at;
    ix->ctx = ctx;
    ix->size = size;
    zip_dir d = {0};
    if (npz_find_dir(ix, &d, err, errlen) != 0)
        return -1;
    unsigned char *dir = malloc(d.size ? d.size : 1);
    ix->arrays = calloc(d.entries ? d.entries : 1, sizeof *ix->arrays);
    if (!dir || !ix->arrays) {
        free(dir);
        npz_index_free(ix);
        return io_errf(err, errlen, "out of memory");
    }
    if (npz_read_exact(ix, d.offset, dir, d.size) != 0) {
        free(dir);
        npz_index_free(ix);
        return io_errf(err, errlen, "cannot read the central directory");
    }
    const unsigned char *p = dir;
    size_t left = d.size;
    for (uint64_t i = 0; i < d.entries; i++) {
        zip_entry e = {0};
        if (npz_central_entry(p, left, &e, err, errlen) != 0)
            goto fail;
        p += e.record_len;
        left -= e.record_len;
        npz_array *a = &ix->arrays[ix->n];
        if (e.name_len < 5 || memcmp(e.name + e.name_len - 4, ".npy", 4) != 0 ||
            e.name_len - 4 >= sizeof a->name) {
            io_errf(err, errlen, "member %.*s is not NAME.npy", (int)e.name_len, e.name);
            goto fail;
        }
        memcpy(a->name, e.name, e.name_len - 4);
        a->name[e.name_len - 4] = 0;
        if (npz_member_locate(ix, &e, a, err, errlen) != 0)
            goto fail;
        ix->n++;
    }
    free(dir);
    return 0;
fail:
    free(dir);
    npz_index_free(ix);
    return -1;
}

void npz_index_free(npz_index *ix)
{
    free(ix->arrays);
    free(ix->owned_ctx);
    ix->owned_ctx = NULL;
    ix->arrays = NULL;
    ix->n = 0;
}

static long long npz_fd_read_at(void *ctx, uint64_t off, void *dst, size_t len)
{
    return (long long)io_pread_full(*(int *)ctx, dst, len, (off_t)off);
}

int npz_index_fd(int fd, npz_index *ix, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return io_errf(err, errlen, "cannot stat: %s", strerror(errno));
    /* The reader keeps a pointer to the descriptor: stored in the index. */
    int *keep = malloc(sizeof *keep);
    if (!keep)
        return io_errf(err, errlen, "out of memory");
    *keep = fd;
    int rc = npz_index_open(npz_fd_read_at, keep, (uint64_t)st.st_size, ix, err, errlen);
    if (rc != 0) {
        free(keep);
        return -1;
    }
    ix->owned_ctx = keep;
    return 0;
}

const npz_array *npz_index_find(const npz_index *ix, const char *name)
{
    for (int i = 0; i < ix->n; i++)
        if (strcmp(ix->arrays[i].name, name) == 0)
            return &ix->arrays[i];
    return NULL;
}

int npz_array_floats(const npz_index *ix, const npz_array *a, uint64_t first, uint64_t n,
                     float *dst, char *err, size_t errlen)
{
    const npy_header *h = &a->h;
    if (first > h->count || n > h->count - first)
        return io_errf(err, errlen, "member %s: elements %llu..%llu out of range", a->name,
                       (unsigned long long)first, (unsigned long long)(first + n));
    npz_cursor *c;
    unsigned char *buf;
    if (npz_walk_begin(ix, a, &c, &buf) != 0)
        return io_errf(err, errlen, "out of memory");
    int rc = 0;
    uint64_t skip = h->data_start + first * (uint64_t)h->itemsize;
    if (a->method == 0) {
        c->out_pos = skip;
    } else {
        while (rc == 0 && c->out_pos < skip) {
            uint64_t left = skip - c->out_pos;
            rc = npz_cursor_read(c, buf, left < NPZ_CHUNK ? (size_t)left : NPZ_CHUNK, err,
                                 errlen);
        }
    }
    size_t per = NPZ_CHUNK / (size_t)h->itemsize;
    for (uint64_t done = 0; rc == 0 && done < n;) {
        size_t k = n - done < per ? (size_t)(n - done) : per;
        rc = npz_cursor_read(c, buf, k * (size_t)h->itemsize, err, errlen);
        if (rc == 0)
            npy_to_floats(h, buf, k, dst + done);
        done += k;
    }
    npz_cursor_close(c);
    free(c);
    free(buf);
    return rc;
}
