/* npy.c — numpy's .npy array format (format version 1.0 written; 1.0,
 * 2.0 and 3.0 read): magic "\x93NUMPY", version, header length, a Python
 * dict literal with descr, fortran_order and shape, then the raw data.
 * The dict is parsed by a small strict scanner: only the three keys numpy
 * writes, float32 data, C order. */
#include "io/npy.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

size_t npy_format_header(const tensor_entry *t, unsigned char *buf)
{
    char shape[128];
    size_t s = 0;
    shape[s++] = '(';
    for (int i = 0; i < t->rank; i++)
        s += (size_t)snprintf(shape + s, sizeof shape - s, i ? ", %ld" : "%ld", t->dims[i]);
    /* A one-element tuple needs its trailing comma: (5,) */
    s += (size_t)snprintf(shape + s, sizeof shape - s, t->rank == 1 ? ",)" : ")");

    char dict[NPY_MAX_PREFIX];
    int dlen = snprintf(dict, sizeof dict,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
    /* magic(6) + version(2) + u16 length(2) + dict + padding + '\n' is a
     * multiple of 64, so the data that follows is aligned. */
    size_t total = (10 + (size_t)dlen + 1 + 63) & ~(size_t)63;
    memcpy(buf, npy_magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    io_put_le16(buf + 8, (uint16_t)(total - 10));
    memcpy(buf + 10, dict, (size_t)dlen);
    memset(buf + 10 + dlen, ' ', total - 10 - (size_t)dlen - 1);
    buf[total - 1] = '\n';
    return total;
}

/* A cursor over the NUL-terminated dict text. */
typedef struct npy_scan {
    const char *p;
} npy_scan;

static void npy_skip_ws(npy_scan *s)
{
    while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
        s->p++;
}

static int npy_expect(npy_scan *s, char c)
{
    npy_skip_ws(s);
    if (*s->p != c)
        return -1;
    s->p++;
    return 0;
}

/* A quoted Python string literal without escapes, into out (cap bytes). */
static int npy_string(npy_scan *s, char *out, size_t cap)
{
    npy_skip_ws(s);
    char q = *s->p;
    if (q != '\'' && q != '"')
        return -1;
    const char *end = strchr(s->p + 1, q);
    if (!end || (size_t)(end - s->p - 1) >= cap)
        return -1;
    memcpy(out, s->p + 1, (size_t)(end - s->p - 1));
    out[end - s->p - 1] = 0;
    s->p = end + 1;
    return 0;
}

static int npy_shape(npy_scan *s, npy_header *e)
{
    if (npy_expect(s, '(') != 0)
        return -1;
    e->rank = 0;
    for (;;) {
        npy_skip_ws(s);
        if (*s->p == ')') {
            s->p++;
            return 0;
        }
        if (!isdigit((unsigned char)*s->p) || e->rank == TENSOR_MAX_RANK)
            return -1;
        long v = 0;
        while (isdigit((unsigned char)*s->p)) {
            if (v > (LONG_MAX - 9) / 10)
                return -1;
            v = v * 10 + (*s->p++ - '0');
        }
        /* numpy may write 3L on Python 2 era files */
        if (*s->p == 'L')
            s->p++;
        e->dims[e->rank++] = v;
        npy_skip_ws(s);
        if (*s->p == ',')
            s->p++;
        else if (*s->p != ')')
            return -1;
    }
}

/* A descr such as '<f4', '|u1', '>i8' into h's kind, itemsize and byte
 * order; -1 for anything else (structured, strings, objects). */
static int npy_descr(const char *d, npy_header *h)
{
    if (strlen(d) != 3 || !strchr("<>|=", d[0]) || !strchr("uifb", d[1]) ||
        !strchr("1248", d[2]))
        return -1;
    h->kind = d[1];
    h->itemsize = d[2] - '0';
    h->big_endian = d[0] == '>';
    if ((h->kind == 'f' && h->itemsize < 2) || (h->kind == 'b' && h->itemsize != 1))
        return -1;
    return 0;
}

/* Parse the dict into h. Every key must be known and present. */
static int npy_parse_dict(const char *text, npy_header *h, char *err, size_t errlen)
{
    npy_scan s = {text};
    int have = 0;
    if (npy_expect(&s, '{') != 0)
        return io_errf(err, errlen, "npy header is not a dict");
    for (;;) {
        npy_skip_ws(&s);
        if (*s.p == '}')
            break;
        char key[32], val[32];
        if (npy_string(&s, key, sizeof key) != 0 || npy_expect(&s, ':') != 0)
            return io_errf(err, errlen, "npy header: malformed key");
        npy_skip_ws(&s);
        if (strcmp(key, "descr") == 0) {
            if (npy_string(&s, val, sizeof val) != 0 || npy_descr(val, h) != 0)
                return io_errf(err, errlen, "dtype %s not supported (a plain number type such "
                               "as '<f4' or '|u1' expected)", val);
            have |= 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (strncmp(s.p, "False", 5) == 0) {
                s.p += 5;
            } else if (strncmp(s.p, "True", 4) == 0) {
                return io_errf(err, errlen, "Fortran-order arrays not supported");
            } else {
                return io_errf(err, errlen, "npy header: malformed fortran_order");
            }
            have |= 2;
        } else if (strcmp(key, "shape") == 0) {
            if (npy_shape(&s, h) != 0)
                return io_errf(err, errlen, "npy header: malformed shape (at most %d dims)",
                               TENSOR_MAX_RANK);
            have |= 4;
        } else {
            return io_errf(err, errlen, "npy header: unknown key '%s'", key);
        }
        npy_skip_ws(&s);
        if (*s.p == ',')
            s.p++;
        else if (*s.p != '}')
            return io_errf(err, errlen, "npy header: expected ',' or '}'");
    }
    if (have != 7)
        return io_errf(err, errlen, "npy header: missing descr, fortran_order or shape");
    return 0;
}

int npy_parse_header(const unsigned char *p, size_t len, npy_header *h, char *err,
                     size_t errlen)
{
    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(p, npy_magic, 6) != 0)
        return io_errf(err, errlen, "not a .npy array (bad magic)");
    size_t hlen, start;
    if (p[6] == 1) {
        hlen = io_get_le16(p + 8);
        start = 10;
    } else if (p[6] == 2 || p[6] == 3) {
        if (len < 12)
            return io_errf(err, errlen, "truncated .npy header");
        hlen = io_get_le32(p + 8);
        start = 12;
    } else {
        return io_errf(err, errlen, ".npy format version %d not supported", p[6]);
    }
    if (hlen > len - start || hlen > 1u << 20)
        return io_errf(err, errlen, "truncated .npy header");
    char *text = malloc(hlen + 1);
    if (!text)
        return io_errf(err, errlen, "out of memory");
    memcpy(text, p + start, hlen);
    text[hlen] = 0;
    int rc = npy_parse_dict(text, h, err, errlen);
    free(text);
    if (rc != 0)
        return -1;
    h->data_start = start + hlen;
    h->count = 1;
    for (int i = 0; i < h->rank; i++) {
        if (h->dims[i] != 0 && h->count > (UINT64_MAX / 8) / (uint64_t)h->dims[i])
            return io_errf(err, errlen, "npy header: shape too large");
        h->count *= (uint64_t)h->dims[i];
    }
    return 0;
}

/* An IEEE 754 binary16 value as float: exact, every half is a float. */
static float npy_half(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    float mag = exp == 0    ? ldexpf((float)(h & 0x3ff), -24)
              : exp == 0x1f ? ((h & 0x3ff) ? NAN : INFINITY)
                            : ldexpf((float)((h & 0x3ff) | 0x400), exp - 25);
    return (h & 0x8000) ? -mag : mag;
}

/* One element (itemsize bytes, h's dtype and byte order) as float. */
static float npy_element(const npy_header *h, const unsigned char *p)
{
    uint64_t u = 0;
    for (int i = 0; i < h->itemsize; i++)
        u = u << 8 | p[h->big_endian ? i : h->itemsize - 1 - i];
    if (h->kind == 'f' && h->itemsize == 4) {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    if (h->kind == 'f' && h->itemsize == 2)
        return npy_half((uint16_t)u);
    if (h->kind == 'f') {
        double d;
        memcpy(&d, &u, 8);
        return (float)d;
    }
    if (h->kind == 'i') {
        int shift = 64 - 8 * h->itemsize;
        return (float)((int64_t)(u << shift) >> shift);
    }
    return (float)u;
}

void npy_to_floats(const npy_header *h, const unsigned char *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = npy_element(h, src + i * (size_t)h->itemsize);
}

int npy_parse(const unsigned char *p, size_t len, tensor_entry *e,
              char *err, size_t errlen)
{
    npy_header h;
    if (npy_parse_header(p, len, &h, err, errlen) != 0)
        return -1;
    if (h.kind != 'f' || h.itemsize != 4)
        return io_errf(err, errlen, "dtype %c%d not supported (float32 only)", h.kind,
                       h.itemsize);
    e->rank = h.rank;
    memcpy(e->dims, h.dims, sizeof e->dims);
    size_t data_len = len - h.data_start;
    if (h.count * 4 != data_len)
        return io_errf(err, errlen, "%zu data bytes, shape needs %llu", data_len,
                       (unsigned long long)h.count * 4);
    e->data = malloc(h.count ? h.count * 4 : 1);
    if (!e->data)
        return io_errf(err, errlen, "out of memory");
    if (h.big_endian)
        io_floats_from_be(e->data, p + h.data_start, (size_t)h.count);
    else
        io_floats_from_le(e->data, p + h.data_start, (size_t)h.count);
    return 0;
}
