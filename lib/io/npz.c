/* npz.c — numpy .npz archives: a ZIP file with one NAME.npy member per
 * tensor. We write STORED members with zlib's CRC-32 (what numpy.savez
 * writes too) and a fixed 1980-01-01 timestamp, so the same tensors always
 * give the same bytes. The reader walks the central directory, accepts
 * STORED and DEFLATED members and the ZIP64 fields Python's zipfile adds,
 * checks every offset and length against the file and every CRC. */
#include "io/tensorfile.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "io/io_file.h"
#include "io/npy.h"

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP64_END_SIG 0x06064b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u
#define ZIP_LOCAL_LEN 30
#define ZIP_CENTRAL_LEN 46
#define ZIP_END_LEN 22
#define ZIP_DOS_DATE_1980 0x0021 /* 1980-01-01 */
#define NPZ_MAX_FILE ((size_t)1 << 36)
#define NPZ_MAX_MEMBER ((uint64_t)1 << 34)

/* Sizes of one member as the writer lays it out. */
typedef struct npz_member {
    unsigned char prefix[NPY_MAX_PREFIX];
    size_t prefix_len;
    size_t data_len;
    size_t name_len;   /* "NAME.npy" */
    uint32_t crc;
    size_t offset;     /* of its local header */
} npz_member;

static unsigned char *npz_put_local(unsigned char *p, const npz_member *m, const char *name)
{
    uint32_t size = (uint32_t)(m->prefix_len + m->data_len);
    io_put_le32(p, ZIP_LOCAL_SIG);
    io_put_le16(p + 4, 20);
    io_put_le16(p + 6, 0);
    io_put_le16(p + 8, 0);
    io_put_le16(p + 10, 0);
    io_put_le16(p + 12, ZIP_DOS_DATE_1980);
    io_put_le32(p + 14, m->crc);
    io_put_le32(p + 18, size);
    io_put_le32(p + 22, size);
    io_put_le16(p + 26, (uint16_t)m->name_len);
    io_put_le16(p + 28, 0);
    memcpy(p + ZIP_LOCAL_LEN, name, m->name_len - 4);
    memcpy(p + ZIP_LOCAL_LEN + m->name_len - 4, ".npy", 4);
    return p + ZIP_LOCAL_LEN + m->name_len;
}

static unsigned char *npz_put_central(unsigned char *p, const npz_member *m, const char *name)
{
    uint32_t size = (uint32_t)(m->prefix_len + m->data_len);
    io_put_le32(p, ZIP_CENTRAL_SIG);
    io_put_le16(p + 4, 3 << 8 | 20); /* made by: Unix, spec 2.0 */
    io_put_le16(p + 6, 20);
    io_put_le16(p + 8, 0);
    io_put_le16(p + 10, 0);
    io_put_le16(p + 12, 0);
    io_put_le16(p + 14, ZIP_DOS_DATE_1980);
    io_put_le32(p + 16, m->crc);
    io_put_le32(p + 20, size);
    io_put_le32(p + 24, size);
    io_put_le16(p + 28, (uint16_t)m->name_len);
    io_put_le16(p + 30, 0);
    io_put_le16(p + 32, 0);
    io_put_le16(p + 34, 0);
    io_put_le16(p + 36, 0);
    io_put_le32(p + 38, 0100644u << 16); /* regular file, rw-r--r-- */
    io_put_le32(p + 42, (uint32_t)m->offset);
    memcpy(p + ZIP_CENTRAL_LEN, name, m->name_len - 4);
    memcpy(p + ZIP_CENTRAL_LEN + m->name_len - 4, ".npy", 4);
    return p + ZIP_CENTRAL_LEN + m->name_len;
}

int npz_write(const char *path, const tensor_entry *t, int n, char *err, size_t errlen)
{
    char why[256];
    if (tensorfile_check_entries(t, n, why, sizeof why) != 0)
        return io_errf(err, errlen, "%s: %s", path, why);
    if (n > 0xffff)
        return io_errf(err, errlen, "%s: %d tensors, a ZIP holds at most 65535", path, n);
    npz_member *m = calloc(n ? (size_t)n : 1, sizeof *m);
    if (!m)
        return io_errf(err, errlen, "%s: out of memory", path);
    size_t total = 0, central = 0;
    for (int i = 0; i < n; i++) {
        m[i].prefix_len = npy_format_header(&t[i], m[i].prefix);
        m[i].data_len = (size_t)tensor_entry_size(&t[i]) * 4;
        m[i].name_len = strlen(t[i].name) + 4;
        m[i].offset = total;
        total += ZIP_LOCAL_LEN + m[i].name_len + m[i].prefix_len + m[i].data_len;
        central += ZIP_CENTRAL_LEN + m[i].name_len;
    }
    /* Without ZIP64 every offset and size must fit in 32 bits. */
    if (total + central + ZIP_END_LEN > UINT32_MAX) {
        free(m);
        return io_errf(err, errlen, "%s: archive over 4 GiB not supported", path);
    }
    size_t size = total + central + ZIP_END_LEN;
    unsigned char *buf = malloc(size);
    if (!buf) {
        free(m);
        return io_errf(err, errlen, "%s: out of memory (%zu bytes)", path, size);
    }
    unsigned char *p = buf;
    for (int i = 0; i < n; i++) {
        unsigned char *member = p + ZIP_LOCAL_LEN + m[i].name_len;
        memcpy(member, m[i].prefix, m[i].prefix_len);
        io_floats_to_le(member + m[i].prefix_len, t[i].data, m[i].data_len / 4);
        /* crc32 takes a uInt length: feed it in pieces. */
        uLong crc = crc32(0L, Z_NULL, 0);
        for (size_t off = 0, left = m[i].prefix_len + m[i].data_len; left > 0;) {
            uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
            crc = crc32(crc, member + off, chunk);
            off += chunk;
            left -= chunk;
        }
        m[i].crc = (uint32_t)crc;
        p = npz_put_local(p, &m[i], t[i].name);
        p += m[i].prefix_len + m[i].data_len;
    }
    for (int i = 0; i < n; i++)
        p = npz_put_central(p, &m[i], t[i].name);
    io_put_le32(p, ZIP_END_SIG);
    io_put_le16(p + 4, 0);
    io_put_le16(p + 6, 0);
    io_put_le16(p + 8, (uint16_t)n);
    io_put_le16(p + 10, (uint16_t)n);
    io_put_le32(p + 12, (uint32_t)central);
    io_put_le32(p + 16, (uint32_t)total);
    io_put_le16(p + 20, 0);
    free(m);
    int rc = atomic_write_file(path, buf, size, err, errlen);
    free(buf);
    return rc;
}

/* Where the central directory is and how many entries it has. */
typedef struct zip_dir {
    uint64_t offset, size, entries;
} zip_dir;

static int npz_find_dir(const unsigned char *buf, size_t len, zip_dir *d,
                        char *err, size_t errlen)
{
    if (len < ZIP_END_LEN)
        return io_errf(err, errlen, "not a ZIP archive (too short)");
    /* The end record is the last 22 bytes plus a comment of up to 64 KiB;
     * its comment length must reach exactly the end of the file. */
    size_t end = SIZE_MAX;
    size_t lowest = len - ZIP_END_LEN > 0xffff ? len - ZIP_END_LEN - 0xffff : 0;
    for (size_t pos = len - ZIP_END_LEN + 1; pos-- > lowest;) {
        if (io_get_le32(buf + pos) == ZIP_END_SIG &&
            pos + ZIP_END_LEN + io_get_le16(buf + pos + 20) == len) {
            end = pos;
            break;
        }
    }
    if (end == SIZE_MAX)
        return io_errf(err, errlen, "not a ZIP archive (no end of central directory)");
    d->entries = io_get_le16(buf + end + 10);
    d->size = io_get_le32(buf + end + 12);
    d->offset = io_get_le32(buf + end + 16);
    if (d->entries == 0xffff || d->size == 0xffffffffu || d->offset == 0xffffffffu) {
        if (end < 20 || io_get_le32(buf + end - 20) != ZIP64_LOCATOR_SIG)
            return io_errf(err, errlen, "ZIP64 end locator missing");
        uint64_t rec = io_get_le64(buf + end - 20 + 8);
        if (rec > len || len - rec < 56 || io_get_le32(buf + rec) != ZIP64_END_SIG)
            return io_errf(err, errlen, "ZIP64 end record out of bounds");
        d->entries = io_get_le64(buf + rec + 32);
        d->size = io_get_le64(buf + rec + 40);
        d->offset = io_get_le64(buf + rec + 48);
    }
    if (d->offset > len || d->size > len - d->offset)
        return io_errf(err, errlen, "central directory outside the file");
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

/* Inflate a raw DEFLATE stream into exactly out_len bytes. */
static int npz_inflate(const unsigned char *in, uint64_t in_len, unsigned char *out,
                       uint64_t out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return -1;
    int rc = Z_OK;
    uint64_t in_left = in_len, out_left = out_len;
    zs.next_in = (Bytef *)in;
    zs.next_out = out;
    while (rc == Z_OK) {
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left > 0) {
            zs.avail_out = out_left > (1u << 30) ? (1u << 30) : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && (zs.avail_in > 0 || in_left > 0) &&
            (zs.avail_out > 0 || out_left > 0))
            rc = Z_OK;
        else if (rc == Z_BUF_ERROR)
            break;
    }
    int ok = rc == Z_STREAM_END && zs.avail_out == 0 && out_left == 0;
    inflateEnd(&zs);
    return ok ? 0 : -1;
}

static int npz_member_data(const unsigned char *buf, size_t len, const zip_entry *e,
                           unsigned char **out, char *err, size_t errlen)
{
    int nl = (int)e->name_len;
    if (e->flags & 1)
        return io_errf(err, errlen, "%.*s: encrypted members not supported", nl, e->name);
    if (e->method != 0 && e->method != 8)
        return io_errf(err, errlen, "%.*s: compression method %u not supported", nl, e->name,
                       e->method);
    if (e->local > len || len - e->local < ZIP_LOCAL_LEN ||
        io_get_le32(buf + e->local) != ZIP_LOCAL_SIG)
        return io_errf(err, errlen, "%.*s: local header out of bounds", nl, e->name);
    uint64_t start = e->local + ZIP_LOCAL_LEN + io_get_le16(buf + e->local + 26) +
                     io_get_le16(buf + e->local + 28);
    if (start > len || e->csize > len - start)
        return io_errf(err, errlen, "%.*s: data runs past the end of the file", nl, e->name);
    /* DEFLATE expands at most about 1032:1: a larger claim is a lie. */
    if (e->usize > NPZ_MAX_MEMBER || (e->method == 0 && e->usize != e->csize) ||
        (e->method == 8 && e->usize > e->csize * 1032 + 1024))
        return io_errf(err, errlen, "%.*s: implausible size %llu", nl, e->name,
                       (unsigned long long)e->usize);
    unsigned char *data = malloc(e->usize ? e->usize : 1);
    if (!data)
        return io_errf(err, errlen, "%.*s: out of memory", nl, e->name);
    if (e->method == 0) {
        memcpy(data, buf + start, e->usize);
    } else if (npz_inflate(buf + start, e->csize, data, e->usize) != 0) {
        free(data);
        return io_errf(err, errlen, "%.*s: corrupt compressed data", nl, e->name);
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t off = 0; off < e->usize;) {
        uInt chunk = e->usize - off > (1u << 30) ? (1u << 30) : (uInt)(e->usize - off);
        crc = crc32(crc, data + off, chunk);
        off += chunk;
    }
    if ((uint32_t)crc != e->crc) {
        free(data);
        return io_errf(err, errlen, "%.*s: CRC-32 mismatch", nl, e->name);
    }
    *out = data;
    return 0;
}

static int npz_parse(const unsigned char *buf, size_t len, tensor_entry **out, int *n_out,
                     char *err, size_t errlen)
{
    zip_dir d = {0};
    if (npz_find_dir(buf, len, &d, err, errlen) != 0)
        return -1;
    tensor_entry *t = calloc(d.entries ? d.entries : 1, sizeof *t);
    if (!t)
        return io_errf(err, errlen, "out of memory");
    const unsigned char *p = buf + d.offset;
    size_t left = d.size;
    int n = 0;
    for (uint64_t i = 0; i < d.entries; i++) {
        zip_entry e = {0};
        if (npz_central_entry(p, left, &e, err, errlen) != 0)
            goto fail;
        p += e.record_len;
        left -= e.record_len;
        if (e.name_len < 5 || memcmp(e.name + e.name_len - 4, ".npy", 4) != 0 ||
            e.name_len - 4 >= sizeof t[n].name) {
            io_errf(err, errlen, "member %.*s is not NAME.npy", (int)e.name_len, e.name);
            goto fail;
        }
        memcpy(t[n].name, e.name, e.name_len - 4);
        t[n].name[e.name_len - 4] = 0;
        unsigned char *member = NULL;
        if (npz_member_data(buf, len, &e, &member, err, errlen) != 0)
            goto fail;
        char why[200];
        int rc = npy_parse(member, e.usize, &t[n], why, sizeof why);
        free(member);
        n++;
        if (rc != 0) {
            io_errf(err, errlen, "%s.npy: %s", t[n - 1].name, why);
            goto fail;
        }
    }
    *out = t;
    *n_out = n;
    return 0;
fail:
    tensorfile_free(t, n);
    return -1;
}

int npz_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen)
{
    return tensorfile_read_parsed(path, NPZ_MAX_FILE, npz_parse, out, n, err, errlen);
}
