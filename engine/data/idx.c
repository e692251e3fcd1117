/* idx.c — the IDX format of MNIST and Fashion-MNIST: a big-endian header
 * (magic 0x00000803 for 3-D unsigned-byte images, 0x00000801 for 1-D
 * unsigned-byte labels, then one u32 per dimension) and the raw bytes.
 * Either file may be gzipped. Samples have shape {1, rows, cols}. */
#include "data_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataformat/idx_format.h"
#include "io/io_file.h"

#define IDX_MAX_PIXELS (1L << 24)

/* Check the header (idx_format.h) against the rank this file must have;
 * *h is what it says. */
static int idx_header(const data_buf *b, const char *name, int rank, const char *what,
                      idxfmt_header *h, char *err, size_t errlen)
{
    uint32_t magic = 0x00000800u | (uint32_t)rank;
    size_t header_len = 4 + 4 * (size_t)rank;
    if (b->len < 4)
        return io_errf(err, errlen, "%s: truncated header (%zu of %zu bytes)", name, b->len,
                       header_len);
    long got = idxfmt_header_parse(b->p, b->len, h);
    if (got < 0 || (got == 0 && h->rank != rank) || idxfmt_be32(b->p) != magic)
        return io_errf(err, errlen, "%s: wrong magic 0x%08x, expected 0x%08x (IDX %s)", name,
                       idxfmt_be32(b->p), magic, what);
    if (got > 0)
        return io_errf(err, errlen, "%s: truncated header (%zu of %zu bytes)", name, b->len,
                       header_len);
    return 0;
}

/* Check that the body holds exactly the header's records. */
static int idx_body(const data_buf *b, const char *name, const idxfmt_header *h,
                    const char *noun, char *err, size_t errlen)
{
    char c1[32], c2[32];
    uint64_t have, extra;
    idxfmt_body body = idxfmt_body_check(h, b->len - h->header_len, &have, &extra);
    if (body == IDXFMT_BODY_SHORT)
        return io_errf(err, errlen, "%s: truncated after %s of %s %s", name,
                       data_fmt_count((long long)have, c1), data_fmt_count(h->dims[0], c2),
                       noun);
    if (b->gz_truncated)
        return io_errf(err, errlen, "%s: corrupt gzip data (stream ends before its trailer)",
                       name);
    if (body == IDXFMT_BODY_EXTRA)
        return io_errf(err, errlen, "%s: %s bytes of unexpected data after %s %s", name,
                       data_fmt_count((long long)extra, c1), data_fmt_count(h->dims[0], c2),
                       noun);
    return 0;
}

/* The images file's header: 3 dimensions, images of a plausible size. */
static int idx_images_header(const data_buf *b, const char *name, idxfmt_header *h, char *err,
                             size_t errlen)
{
    if (idx_header(b, name, 3, "images: unsigned bytes, 3 dimensions", h, err, errlen) != 0)
        return -1;
    if (h->dims[1] == 0 || h->dims[2] == 0 || h->record_bytes > IDX_MAX_PIXELS)
        return io_errf(err, errlen, "%s: implausible image size %ux%u", name, h->dims[1],
                       h->dims[2]);
    return 0;
}

/* "…-images-idx3-ubyte[.gz]" -> "…-labels-idx1-ubyte[.gz]" (also with
 * '.' before idx3, as some MNIST mirrors name them). */
static int idx_labels_path(const char *images, char *out, size_t cap)
{
    const char *base = io_basename(images);
    const char *hit = NULL;
    for (const char *p = strstr(base, "images"); p; p = strstr(p + 1, "images"))
        if (strncmp(p + 7, "idx3", 4) == 0 && (p[6] == '-' || p[6] == '.'))
            hit = p;
    if (!hit || strlen(images) >= cap)
        return -1;
    strcpy(out, images);
    memcpy(out + (hit - images), "labels", 6);
    memcpy(out + (hit - images) + 7, "idx1", 4);
    return 0;
}

/* Read the labels file whole (one byte a record: small) and check it as
 * the whole load does: header, length, count against the n images, and
 * every label against num_classes. On success lab holds the file. */
static int idx_labels(const char *labels_path, const char *iname, uint32_t n, int num_classes,
                      data_buf *lab, char *err, size_t errlen)
{
    const char *lname = io_basename(labels_path);
    if (data_file_read(labels_path, lab, err, errlen) != 0)
        return -1;
    idxfmt_header h;
    if (idx_header(lab, lname, 1, "labels: unsigned bytes, 1 dimension", &h, err, errlen) != 0 ||
        idx_body(lab, lname, &h, "labels", err, errlen) != 0)
        goto fail;
    uint32_t n_labels = h.dims[0];
    if (n_labels != n) {
        char c1[32], c2[32];
        io_errf(err, errlen, "%s has %s images but %s has %s labels", iname,
                data_fmt_count(n, c1), lname, data_fmt_count(n_labels, c2));
        goto fail;
    }
    const unsigned char *labels = lab->p + 8;
    for (uint32_t i = 0; num_classes > 0 && i < n; i++) {
        if (labels[i] >= num_classes) {
            char c1[32], c2[32];
            io_errf(err, errlen, "%s: record %s of %s: label %d out of range [0, %d)", lname,
                    data_fmt_count((long long)i + 1, c1), data_fmt_count(n, c2), labels[i],
                    num_classes);
            goto fail;
        }
    }
    return 0;
fail:
    data_buf_free(lab);
    return -1;
}

static int idx_resolve_labels(const char *images_path, const char **labels_path,
                              char derived[PATH_MAX], char *err, size_t errlen)
{
    if (*labels_path)
        return 0;
    if (idx_labels_path(images_path, derived, PATH_MAX) != 0)
        return io_errf(err, errlen, "%s: cannot derive the labels file name "
                       "(expected …-images-idx3-ubyte)", io_basename(images_path));
    *labels_path = derived;
    return 0;
}

int data_idx_load(const char *images_path, const char *labels_path, int num_classes,
                  dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char derived[PATH_MAX];
    if (idx_resolve_labels(images_path, &labels_path, derived, err, errlen) != 0)
        return -1;
    const char *iname = io_basename(images_path);
    data_buf img, lab;
    if (data_file_read(images_path, &img, err, errlen) != 0)
        return -1;
    idxfmt_header h;
    if (idx_images_header(&img, iname, &h, err, errlen) != 0 ||
        idx_body(&img, iname, &h, "images", err, errlen) != 0)
        goto fail_img;
    uint32_t n = h.dims[0], rows = h.dims[1], cols = h.dims[2];
    size_t pixels = (size_t)h.record_bytes;
    if (idx_labels(labels_path, iname, n, num_classes, &lab, err, errlen) != 0)
        goto fail_img;
    const unsigned char *labels = lab.p + 8;
    if (data_alloc(out, (long)n, (long)pixels) != 0) {
        io_errf(err, errlen, "%s: out of memory for %u images", iname, n);
        goto fail_lab;
    }
    out->shape = (spec_shape){.rank = 3, .dim = {1, (int)rows, (int)cols}};
    const unsigned char *px = img.p + 16;
    size_t total = (size_t)n * pixels;
    for (size_t i = 0; i < total; i++)
        out->x[i] = (float)px[i];
    for (uint32_t i = 0; i < n; i++)
        out->y[i] = labels[i];
    data_set_classes(out, num_classes);
    data_buf_free(&img);
    data_buf_free(&lab);
    return 0;
fail_lab:
    data_buf_free(&lab);
fail_img:
    data_buf_free(&img);
    return -1;
}

/* A parse error in a streamed file: corrupt gzip data further on wins, as
 * in the whole load, which inflates the file before parsing it. */
static int idx_stream_fail(data_stream *st, const char *why, char *err, size_t errlen)
{
    uint64_t total;
    bool truncated;
    if (data_stream_finish(st, &total, &truncated, err, errlen) != 0)
        return -1;
    return io_errf(err, errlen, "%s", why);
}

/* Open the images file and read and check its header. */
static int idx_open_images(const char *path, data_stream **st, idxfmt_header *h, char *err,
                           size_t errlen)
{
    const char *iname = io_basename(path);
    if (data_stream_open(path, st, err, errlen) != 0)
        return -1;
    unsigned char head[16];
    size_t got;
    if (data_stream_read(*st, head, sizeof head, &got, err, errlen) != 0)
        goto fail;
    char why[512];
    /* A header shorter than 16 bytes is the whole file. */
    data_buf hb = {head, got, false};
    if (idx_images_header(&hb, iname, h, why, sizeof why) != 0) {
        idx_stream_fail(*st, why, err, errlen);
        goto fail;
    }
    return 0;
fail:
    data_stream_close(*st);
    *st = NULL;
    return -1;
}

int data_idx_count(const char *images_path, long *n, char *err, size_t errlen)
{
    data_stream *st;
    idxfmt_header h;
    if (idx_open_images(images_path, &st, &h, err, errlen) != 0)
        return -1;
    data_stream_close(st);
    *n = (long)h.dims[0];
    return 0;
}

/* Images [lo, hi) as floats into x: skip to them, convert a block at a
 * time. Stops early (leaving the rest) when the file is short: the body
 * check that follows reports it. */
static int idx_read_range(data_stream *st, size_t pixels, long lo, long hi, float *x,
                          char *err, size_t errlen)
{
    uint64_t skipped;
    if (data_stream_skip(st, (uint64_t)lo * pixels, &skipped, err, errlen) != 0)
        return -1;
    if (skipped < (uint64_t)lo * pixels)
        return 0;
    size_t per = (size_t)1 << 16 > pixels ? ((size_t)1 << 16) / pixels : 1;
    unsigned char *buf = malloc(per * pixels);
    if (!buf)
        return io_errf(err, errlen, "out of memory");
    for (long i = lo; i < hi;) {
        size_t k = (size_t)(hi - i) < per ? (size_t)(hi - i) : per, got;
        if (data_stream_read(st, buf, k * pixels, &got, err, errlen) != 0) {
            free(buf);
            return -1;
        }
        float *dst = x + (size_t)(i - lo) * pixels;
        for (size_t j = 0; j < got; j++)
            dst[j] = (float)buf[j];
        if (got < k * pixels)
            break;
        i += (long)k;
    }
    free(buf);
    return 0;
}

/* The images of a record list, into x (floats) or pick->bytes: each run
 * of records that fits a 64 KiB span is read in one go (fewer system
 * calls and inflate calls than a record at a time), the gaps between
 * spans skipped (a seek in a plain file). Stops early on a short file, as
 * idx_read_range. */
static int idx_read_rows(data_stream *st, size_t pixels, const data_pick *pick, float *x,
                         char *err, size_t errlen)
{
    long per = (size_t)1 << 16 > pixels ? (long)(((size_t)1 << 16) / pixels) : 1;
    unsigned char *buf = malloc((size_t)per * pixels);
    if (!buf)
        return io_errf(err, errlen, "out of memory");
    int rc = 0;
    long at = 0; /* records passed so far */
    for (long i = 0, j; i < pick->m; i = j + 1) {
        long first = (long)pick->rows[i];
        for (j = i; j + 1 < pick->m && pick->rows[j + 1] - first < per; j++)
            ;
        size_t span = (size_t)(pick->rows[j] - first + 1) * pixels, got = 0;
        uint64_t gap = (uint64_t)(first - at) * pixels, skipped;
        if (data_stream_skip(st, gap, &skipped, err, errlen) != 0 ||
            (skipped == gap && data_stream_read(st, buf, span, &got, err, errlen) != 0)) {
            rc = -1;
            break;
        }
        for (long k = i; k <= j; k++) {
            size_t off = (size_t)(pick->rows[k] - first) * pixels;
            if (off + pixels > got)
                break;
            if (pick->bytes) {
                memcpy(pick->bytes + (size_t)k * pixels, buf + off, pixels);
                continue;
            }
            for (size_t q = 0; q < pixels; q++)
                x[(size_t)k * pixels + q] = (float)buf[off + q];
        }
        if (skipped < gap || got < span)
            break;
        at = (long)pick->rows[j] + 1;
    }
    free(buf);
    return rc;
}

int data_idx_load_pick(const char *images_path, const char *labels_path, int num_classes,
                       const data_pick *pick, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char derived[PATH_MAX];
    if (idx_resolve_labels(images_path, &labels_path, derived, err, errlen) != 0)
        return -1;
    const char *iname = io_basename(images_path);
    data_stream *st;
    idxfmt_header h;
    char bad[256] = "";
    bool malformed = pick->rows || pick->bytes ? data_pick_check(pick, iname, bad, sizeof bad) != 0
                                : pick->lo < 0 || pick->hi < pick->lo;
    if (idx_open_images(images_path, &st, &h, err, errlen) != 0)
        return -1;
    uint32_t n = h.dims[0], rows = h.dims[1], cols = h.dims[2];
    size_t pixels = (size_t)h.record_bytes;
    /* A pick past the header's count: the file's own faults first. */
    bool beyond = malformed || data_pick_end(pick) > (long)n;
    /* Nor is memory taken for records a short (or forged) file cannot
     * hold: the body check below reports it as the whole load does. */
    bool unheld = !beyond && 16 + (uint64_t)data_pick_end(pick) * pixels > data_stream_max_size(st);
    data_pick none = {0};
    const data_pick *use = beyond || unheld ? &none : pick;
    long count = data_pick_count(use);
    if (data_pick_alloc(use, out, count, (long)pixels) != 0) {
        data_stream_close(st);
        return io_errf(err, errlen, "%s: out of memory for %ld images", iname, count);
    }
    data_buf lab = {0};
    uint64_t total;
    bool truncated;
    int rd = use->rows ? idx_read_rows(st, pixels, use, out->x, err, errlen)
                       : idx_read_range(st, pixels, use->lo, use->hi, out->x, err, errlen);
    if (rd != 0 || data_stream_finish(st, &total, &truncated, err, errlen) != 0)
        goto fail;
    data_stream_close(st);
    st = NULL;
    data_buf whole = {NULL, (size_t)total, truncated};
    if (idx_body(&whole, iname, &h, "images", err, errlen) != 0 ||
        idx_labels(labels_path, iname, n, num_classes, &lab, err, errlen) != 0)
        goto fail;
    if (beyond) {
        char c1[32];
        if (bad[0])
            io_errf(err, errlen, "%s", bad);
        else if (pick->rows)
            io_errf(err, errlen, "%s: record %ld asked of %s images", iname,
                    data_pick_end(pick) - 1, data_fmt_count(n, c1));
        else
            io_errf(err, errlen, "%s: records [%ld, %ld) asked of %s images", iname, pick->lo,
                    pick->hi, data_fmt_count(n, c1));
        goto fail;
    }
    out->shape = (spec_shape){.rank = 3, .dim = {1, (int)rows, (int)cols}};
    const unsigned char *labels = lab.p + 8;
    int max = -1;
    for (uint32_t i = 0; i < n; i++)
        max = labels[i] > max ? labels[i] : max;
    for (long i = 0; i < count; i++)
        out->y[i] = labels[use->rows ? (long)use->rows[i] : use->lo + i];
    out->num_classes = num_classes > 0 ? num_classes : max + 1;
    data_buf_free(&lab);
    return 0;
fail:
    data_buf_free(&lab);
    data_stream_close(st);
    dataset_free(out);
    return -1;
}

int data_idx_load_range(const char *images_path, const char *labels_path, int num_classes,
                        long lo, long hi, dataset *out, char *err, size_t errlen)
{
    data_pick pick = {.lo = lo, .hi = hi};
    return data_idx_load_pick(images_path, labels_path, num_classes, &pick, out, err, errlen);
}

int dataset_load_idx(const char *images_path, const char *labels_path, dataset *out,
                     char *err, size_t errlen)
{
    return data_idx_load(images_path, labels_path, 0, out, err, errlen);
}
