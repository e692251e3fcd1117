/* data_file.c — read a dataset file into memory, gunzipping it when it
 * starts with the gzip magic (whatever its name). Reading the compressed
 * file whole and inflating it in one pass into a buffer sized from the gzip
 * trailer is several times faster than gzread's small copies. */
#include "data_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "io/io_file.h"

/* Datasets are large but finite: refuse absurd files instead of letting
 * malloc decide. */
#define DATA_MAX_FILE ((size_t)1 << 36)

void data_buf_free(data_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = 0;
}

const char *data_fmt_count(long long v, char buf[32])
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu",
                     v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
    char *o = buf;
    if (v < 0)
        *o++ = '-';
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *o++ = ',';
        *o++ = digits[i];
    }
    *o = 0;
    return buf;
}

static int data_grow(unsigned char **out, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : need;
    while (c < need)
        c = c > DATA_MAX_FILE / 2 ? DATA_MAX_FILE : c * 2;
    if (c < need)
        return -1;
    unsigned char *p = realloc(*out, c + 1);
    if (!p)
        return -1;
    *out = p;
    *cap = c;
    return 0;
}

/* Inflate every gzip member of in[0..len) into *out. */
static int data_gunzip(const char *name, const unsigned char *in, size_t len, data_buf *out,
                       char *err, size_t errlen)
{
    /* ISIZE, the last four bytes, is the uncompressed size mod 2^32: a
     * good first guess that avoids regrowing for ordinary files. DEFLATE
     * expands at most about 1032:1, which bounds a corrupt trailer. */
    size_t guess = len >= 18 ? (size_t)io_get_le32(in + len - 4) : 0;
    if (guess < len)
        guess = len * 4;
    if (guess / 1032 > len)
        guess = len * 1032;
    unsigned char *buf = NULL;
    size_t cap = 0, used = 0, in_used = 0;
    if (data_grow(&buf, &cap, guess) != 0)
        return io_errf(err, errlen, "%s: out of memory", name);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        free(buf);
        return io_errf(err, errlen, "%s: zlib initialisation failed", name);
    }
    int rc = Z_OK;
    for (;;) {
        if (used == cap && data_grow(&buf, &cap, cap + 1) != 0) {
            rc = Z_MEM_ERROR;
            break;
        }
        size_t in_left = len - in_used, out_left = cap - used;
        zs.next_in = (Bytef *)in + in_used;
        zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
        zs.next_out = buf + used;
        zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
        uInt before_in = zs.avail_in, before_out = zs.avail_out;
        rc = inflate(&zs, Z_NO_FLUSH);
        in_used += before_in - zs.avail_in;
        used += before_out - zs.avail_out;
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members form one file (gzip -c a b). */
            if (in_used + 2 <= len && in[in_used] == 0x1f && in[in_used + 1] == 0x8b) {
                inflateReset(&zs);
                continue;
            }
            break;
        }
        if (rc == Z_BUF_ERROR && in_used == len)
            break; /* input exhausted inside a member */
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            break;
    }
    const char *msg = zs.msg;
    inflateEnd(&zs);
    if (rc == Z_MEM_ERROR) {
        free(buf);
        return io_errf(err, errlen, "%s: out of memory decompressing", name);
    }
    if (rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        free(buf);
        return io_errf(err, errlen, "%s: corrupt gzip data (%s)", name,
                       msg ? msg : "inflate failed");
    }
    if (rc == Z_STREAM_END && in_used < len) {
        free(buf);
        return io_errf(err, errlen, "%s: corrupt gzip data (%zu stray bytes after the stream)",
                       name, len - in_used);
    }
    buf[used] = 0;
    out->p = buf;
    out->len = used;
    out->gz_truncated = rc != Z_STREAM_END;
    return 0;
}

int data_file_read(const char *path, data_buf *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *name = io_basename(path);
    unsigned char *raw;
    size_t len;
    char why[512];
    if (io_read_file(path, DATA_MAX_FILE, &raw, &len, why, sizeof why) != 0)
        return io_errf(err, errlen, "%s", why);
    if (len == 0) {
        free(raw);
        return io_errf(err, errlen, "%s: empty file", name);
    }
    bool gz = len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b;
    size_t nlen = strlen(name);
    if (!gz && nlen > 3 && strcmp(name + nlen - 3, ".gz") == 0) {
        free(raw);
        return io_errf(err, errlen, "%s: corrupt gzip data (no gzip header)", name);
    }
    if (!gz) {
        out->p = raw;
        out->len = len;
        return 0;
    }
    int rc = data_gunzip(name, raw, len, out, err, errlen);
    free(raw);
    if (rc == 0 && out->len == 0) {
        data_buf_free(out);
        return io_errf(err, errlen, "%s: empty file (no data in the gzip stream)", name);
    }
    return rc;
}
