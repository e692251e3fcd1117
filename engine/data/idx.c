/* idx.c — the IDX format of MNIST and Fashion-MNIST: a big-endian header
 * (magic 0x00000803 for 3-D unsigned-byte images, 0x00000801 for 1-D
 * unsigned-byte labels, then one u32 per dimension) and the raw bytes.
 * Either file may be gzipped. Samples have shape {1, rows, cols}. */
#include "data_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_MAX_PIXELS (1L << 24)

static uint32_t idx_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Check magic and header length; *count is the first dimension. */
static int idx_header(const data_buf *b, const char *name, uint32_t magic, size_t header_len,
                      const char *what, uint32_t *count, char *err, size_t errlen)
{
    if (b->len < 4 || idx_be32(b->p) != magic) {
        if (b->len < 4)
            return io_errf(err, errlen, "%s: truncated header (%zu of %zu bytes)", name,
                           b->len, header_len);
        return io_errf(err, errlen, "%s: wrong magic 0x%08x, expected 0x%08x (IDX %s)", name,
                       idx_be32(b->p), magic, what);
    }
    if (b->len < header_len)
        return io_errf(err, errlen, "%s: truncated header (%zu of %zu bytes)", name, b->len,
                       header_len);
    *count = idx_be32(b->p + 4);
    return 0;
}

/* Check that the body holds exactly count records of rec_len bytes. */
static int idx_body(const data_buf *b, const char *name, size_t header_len, uint32_t count,
                    size_t rec_len, const char *noun, char *err, size_t errlen)
{
    char c1[32], c2[32];
    size_t have = (b->len - header_len) / rec_len;
    if (have < count)
        return io_errf(err, errlen, "%s: truncated after %s of %s %s", name,
                       data_fmt_count((long long)have, c1), data_fmt_count(count, c2), noun);
    if (b->gz_truncated)
        return io_errf(err, errlen, "%s: corrupt gzip data (stream ends before its trailer)",
                       name);
    size_t extra = b->len - header_len - (size_t)count * rec_len;
    if (extra > 0)
        return io_errf(err, errlen, "%s: %s bytes of unexpected data after %s %s", name,
                       data_fmt_count((long long)extra, c1), data_fmt_count(count, c2), noun);
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

int data_idx_load(const char *images_path, const char *labels_path, int num_classes,
                  dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char derived[PATH_MAX];
    if (!labels_path) {
        if (idx_labels_path(images_path, derived, sizeof derived) != 0)
            return io_errf(err, errlen, "%s: cannot derive the labels file name "
                           "(expected …-images-idx3-ubyte)", io_basename(images_path));
        labels_path = derived;
    }
    const char *iname = io_basename(images_path), *lname = io_basename(labels_path);
    data_buf img, lab;
    if (data_file_read(images_path, &img, err, errlen) != 0)
        return -1;
    uint32_t n = 0;
    if (idx_header(&img, iname, IDX_IMAGES_MAGIC, 16, "images: unsigned bytes, 3 dimensions",
                   &n, err, errlen) != 0)
        goto fail_img;
    uint32_t rows = idx_be32(img.p + 8), cols = idx_be32(img.p + 12);
    if (rows == 0 || cols == 0 || (long)rows * cols > IDX_MAX_PIXELS) {
        io_errf(err, errlen, "%s: implausible image size %ux%u", iname, rows, cols);
        goto fail_img;
    }
    size_t pixels = (size_t)rows * cols;
    if (idx_body(&img, iname, 16, n, pixels, "images", err, errlen) != 0)
        goto fail_img;

    if (data_file_read(labels_path, &lab, err, errlen) != 0)
        goto fail_img;
    uint32_t n_labels = 0;
    if (idx_header(&lab, lname, IDX_LABELS_MAGIC, 8, "labels: unsigned bytes, 1 dimension",
                   &n_labels, err, errlen) != 0 ||
        idx_body(&lab, lname, 8, n_labels, 1, "labels", err, errlen) != 0)
        goto fail_lab;
    if (n_labels != n) {
        char c1[32], c2[32];
        io_errf(err, errlen, "%s has %s images but %s has %s labels", iname,
                data_fmt_count(n, c1), lname, data_fmt_count(n_labels, c2));
        goto fail_lab;
    }
    const unsigned char *labels = lab.p + 8;
    for (uint32_t i = 0; num_classes > 0 && i < n; i++) {
        if (labels[i] >= num_classes) {
            char c1[32], c2[32];
            io_errf(err, errlen, "%s: record %s of %s: label %d out of range [0, %d)", lname,
                    data_fmt_count((long long)i + 1, c1), data_fmt_count(n, c2), labels[i],
                    num_classes);
            goto fail_lab;
        }
    }
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

int dataset_load_idx(const char *images_path, const char *labels_path, dataset *out,
                     char *err, size_t errlen)
{
    return data_idx_load(images_path, labels_path, 0, out, err, errlen);
}
