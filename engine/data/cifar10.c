/* cifar10.c — CIFAR-10's binary batches (data_batch_1.bin … and
 * test_batch.bin): records of one label byte and 3,072 pixel bytes, the
 * 32x32 red plane, then green, then blue — already CHW, so samples have
 * shape {3, 32, 32}. Batches may be gzipped. */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dataformat/cifar_format.h"
#include "io/io_file.h"

_Static_assert(CIFARFMT_RECORD == 3073, "the truncation message spells out 3,073");

/* Validate one batch; *records is how many it holds. */
static int cifar_check(const data_buf *b, const char *name, int num_classes, long *records,
                       char *err, size_t errlen)
{
    char c1[32], c2[32];
    uint64_t part, whole = cifarfmt_records(b->len, &part);
    if (part != 0 || b->gz_truncated)
        return io_errf(err, errlen, "%s: truncated record %s (%s of 3,073 bytes)", name,
                       data_fmt_count((long long)whole + 1, c1),
                       data_fmt_count((long long)part, c2));
    long long i = num_classes > 0 ? cifarfmt_bad_label(b->p, (size_t)whole, num_classes) : -1;
    if (i >= 0)
        return io_errf(err, errlen, "%s: record %s of %s: label %u out of range [0, %d)",
                       name, data_fmt_count(i + 1, c1), data_fmt_count((long long)whole, c2),
                       (unsigned)b->p[(size_t)i * CIFARFMT_RECORD], num_classes);
    *records = (long)whole;
    return 0;
}

int data_cifar10_load(const char *const *paths, int n_paths, int num_classes, dataset *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n_paths <= 0)
        return io_errf(err, errlen, "CIFAR-10: no batch files");
    data_buf *bufs = calloc((size_t)n_paths, sizeof *bufs);
    long *counts = calloc((size_t)n_paths, sizeof *counts);
    int rc = -1, loaded = 0;
    if (!bufs || !counts) {
        io_errf(err, errlen, "CIFAR-10: out of memory");
        goto done;
    }
    long total = 0;
    for (; loaded < n_paths; loaded++) {
        const char *name = io_basename(paths[loaded]);
        if (data_file_read(paths[loaded], &bufs[loaded], err, errlen) != 0)
            goto done;
        if (cifar_check(&bufs[loaded], name, num_classes, &counts[loaded], err, errlen) != 0) {
            loaded++;
            goto done;
        }
        total += counts[loaded];
    }
    if (data_alloc(out, total, CIFARFMT_PIXELS) != 0) {
        io_errf(err, errlen, "CIFAR-10: out of memory for %ld images", total);
        goto done;
    }
    out->shape = (spec_shape){.rank = 3, .dim = {3, 32, 32}};
    long row = 0;
    for (int f = 0; f < n_paths; f++) {
        for (long i = 0; i < counts[f]; i++, row++) {
            const unsigned char *rec = bufs[f].p + (size_t)i * CIFARFMT_RECORD;
            float *x = out->x + (size_t)row * CIFARFMT_PIXELS;
            out->y[row] = rec[0];
            for (int k = 0; k < CIFARFMT_PIXELS; k++)
                x[k] = (float)rec[1 + k];
        }
        /* Release each batch once converted, not all at the end. */
        data_buf_free(&bufs[f]);
    }
    data_set_classes(out, num_classes);
    rc = 0;
done:
    for (int f = 0; bufs && f < loaded; f++)
        data_buf_free(&bufs[f]);
    free(bufs);
    free(counts);
    return rc;
}

int data_cifar10_count(const char *const *paths, int n_paths, long *n, char *err,
                       size_t errlen)
{
    *n = 0;
    for (int f = 0; f < n_paths; f++) {
        data_stream *st;
        uint64_t total;
        bool truncated;
        if (data_stream_open(paths[f], &st, err, errlen) != 0)
            return -1;
        int rc = data_stream_finish(st, &total, &truncated, err, errlen);
        data_stream_close(st);
        if (rc != 0)
            return -1;
        uint64_t part;
        *n += (long)cifarfmt_records(total, &part);
    }
    return 0;
}

/* One batch file at a time, so at most one file's bytes are held besides
 * the picked records' floats. */
int data_cifar10_load_pick(const char *const *paths, int n_paths, int num_classes,
                           const data_pick *pick, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n_paths <= 0)
        return io_errf(err, errlen, "CIFAR-10: no batch files");
    if (data_pick_check(pick, "CIFAR-10", err, errlen) != 0)
        return -1;
    long want = data_pick_count(pick), cursor = 0;
    if (data_pick_alloc(pick, out, want, CIFARFMT_PIXELS) != 0)
        return io_errf(err, errlen, "CIFAR-10: out of memory for %ld images", want);
    long first = 0; /* global number of the current file's first record */
    int max = -1;
    for (int f = 0; f < n_paths; f++) {
        data_buf b;
        long count;
        if (data_file_read(paths[f], &b, err, errlen) != 0)
            goto fail;
        if (cifar_check(&b, io_basename(paths[f]), num_classes, &count, err, errlen) != 0) {
            data_buf_free(&b);
            goto fail;
        }
        for (long i = 0; i < count; i++) {
            const unsigned char *rec = b.p + (size_t)i * CIFARFMT_RECORD;
            max = rec[0] > max ? rec[0] : max;
            long row = data_pick_row(pick, first + i, &cursor);
            if (row < 0)
                continue;
            out->y[row] = rec[0];
            if (pick->bytes) {
                memcpy(pick->bytes + (size_t)row * CIFARFMT_PIXELS, rec + 1, CIFARFMT_PIXELS);
                continue;
            }
            float *x = out->x + (size_t)row * CIFARFMT_PIXELS;
            for (int k = 0; k < CIFARFMT_PIXELS; k++)
                x[k] = (float)rec[1 + k];
        }
        first += count;
        data_buf_free(&b);
    }
    if (data_pick_end(pick) > first) {
        char c1[32];
        if (pick->rows)
            io_errf(err, errlen, "CIFAR-10: record %ld asked of %s", data_pick_end(pick) - 1,
                    data_fmt_count(first, c1));
        else
            io_errf(err, errlen, "CIFAR-10: records [%ld, %ld) asked of %s", pick->lo,
                    pick->hi, data_fmt_count(first, c1));
        goto fail;
    }
    out->shape = (spec_shape){.rank = 3, .dim = {3, 32, 32}};
    out->num_classes = num_classes > 0 ? num_classes : max + 1;
    return 0;
fail:
    dataset_free(out);
    return -1;
}

int data_cifar10_load_range(const char *const *paths, int n_paths, int num_classes, long lo,
                            long hi, dataset *out, char *err, size_t errlen)
{
    data_pick pick = {.lo = lo, .hi = hi};
    return data_cifar10_load_pick(paths, n_paths, num_classes, &pick, out, err, errlen);
}

int dataset_load_cifar10(const char *const *batch_paths, int n_paths, dataset *out,
                         char *err, size_t errlen)
{
    return data_cifar10_load(batch_paths, n_paths, 0, out, err, errlen);
}
