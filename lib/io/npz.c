/* npz.c — numpy .npz archives: a ZIP file with one NAME.npy member per
 * tensor. We write STORED members with zlib's CRC-32 (what numpy.savez
 * writes too) and a fixed 1980-01-01 timestamp, so the same tensors always
 * give the same bytes. The reader indexes the archive with npzarray.c
 * (central directory, STORED and DEFLATED members, the ZIP64 fields
 * Python's zipfile adds, every offset, length and CRC checked) and keeps
 * the float32 members. */
#include "io/tensorfile.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "io/io_file.h"
#include "io/npy.h"
#include "io/npzarray.h"

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP_LOCAL_LEN 30
#define ZIP_CENTRAL_LEN 46
#define ZIP_END_LEN 22
#define ZIP_DOS_DATE_1980 0x0021 /* 1980-01-01 */
#define NPZ_MAX_FILE ((size_t)1 << 36)

/* Sizes of one member as the writer lays it out. */
typedef struct npz_member {
    unsigned char prefix[NPY_MAX_PREFIX];
    size_t prefix_len;
    size_t data_len;
    size_t name_len;   /* "NAME.npy" */
    uint32_t crc;
    size_t offset;     /* of its local header */
} npz_member;

/* The 26 bytes a local and a central header share, from "version needed"
 * to the extra field's length: stored (no compression), 1980-01-01 00:00,
 * the member's CRC and sizes, its name's length, no extra field. */
static void npz_put_common(unsigned char *p, const npz_member *m)
{
    uint32_t size = (uint32_t)(m->prefix_len + m->data_len);
    io_put_le16(p, 20);
    io_put_le16(p + 2, 0);
    io_put_le16(p + 4, 0);
    io_put_le16(p + 6, 0);
    io_put_le16(p + 8, ZIP_DOS_DATE_1980);
    io_put_le32(p + 10, m->crc);
    io_put_le32(p + 14, size);
    io_put_le32(p + 18, size);
    io_put_le16(p + 22, (uint16_t)m->name_len);
    io_put_le16(p + 24, 0);
}

static unsigned char *npz_put_local(unsigned char *p, const npz_member *m, const char *name)
{
    io_put_le32(p, ZIP_LOCAL_SIG);
    npz_put_common(p + 4, m);
    memcpy(p + ZIP_LOCAL_LEN, name, m->name_len - 4);
    memcpy(p + ZIP_LOCAL_LEN + m->name_len - 4, ".npy", 4);
    return p + ZIP_LOCAL_LEN + m->name_len;
}

static unsigned char *npz_put_central(unsigned char *p, const npz_member *m, const char *name)
{
    io_put_le32(p, ZIP_CENTRAL_SIG);
    io_put_le16(p + 4, 3 << 8 | 20); /* made by: Unix, spec 2.0 */
    npz_put_common(p + 6, m);
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

typedef struct npz_mem {
    const unsigned char *p;
    size_t len;
} npz_mem;

static long long npz_mem_read_at(void *ctx, uint64_t off, void *dst, size_t len)
{
    const npz_mem *m = ctx;
    if (off >= m->len)
        return 0;
    size_t n = m->len - off < len ? (size_t)(m->len - off) : len;
    memcpy(dst, m->p + off, n);
    return (long long)n;
}

/* Every member of the archive in buf as a float32 tensor, through the
 * index of npzarray.c. */
static int npz_parse(const unsigned char *buf, size_t len, tensor_entry **out, int *n_out,
                     char *err, size_t errlen)
{
    npz_mem mem = {buf, len};
    npz_index ix;
    if (npz_index_open(npz_mem_read_at, &mem, len, &ix, err, errlen) != 0)
        return -1;
    tensor_entry *t = calloc(ix.n ? (size_t)ix.n : 1, sizeof *t);
    if (!t) {
        npz_index_free(&ix);
        return io_errf(err, errlen, "out of memory");
    }
    int n = 0;
    for (int i = 0; i < ix.n; i++) {
        const npz_array *a = &ix.arrays[i];
        snprintf(t[n].name, sizeof t[n].name, "%s", a->name);
        unsigned char *member = NULL;
        if (npz_array_member(&ix, a, &member, err, errlen) != 0)
            goto fail;
        char why[200];
        int rc = npy_parse(member, a->usize, &t[n], why, sizeof why);
        free(member);
        n++;
        if (rc != 0) {
            io_errf(err, errlen, "%s.npy: %s", t[n - 1].name, why);
            goto fail;
        }
    }
    npz_index_free(&ix);
    *out = t;
    *n_out = n;
    return 0;
fail:
    npz_index_free(&ix);
    tensorfile_free(t, n);
    return -1;
}

int npz_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen)
{
    return tensorfile_read_parsed(path, NPZ_MAX_FILE, npz_parse, out, n, err, errlen);
}
