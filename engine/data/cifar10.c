/* cifar10.c — CIFAR-10's binary batches (data_batch_1.bin … and
 * test_batch.bin): records of one label byte and 3,072 pixel bytes, the
 * 32x32 red plane, then green, then blue — already CHW, so samples have
 * shape {3, 32, 32}. Batches may be gzipped. */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

#define CIFAR_PIXELS 3072
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
_Static_assert(CIFAR_RECORD == 3073, "the truncation message spells out 3,073");

/* Validate one batch; *records is how many it holds. */
static int cifar_check(const data_buf *b, const char *name, int num_classes, long *records,
                       char *err, size_t errlen)
{
    char c1[32], c2[32];
    size_t whole = b->len / CIFAR_RECORD, part = b->len % CIFAR_RECORD;
    if (part != 0 || b->gz_truncated)
        return io_errf(err, errlen, "%s: truncated record %s (%s of 3,073 bytes)", name,
                       data_fmt_count((long long)whole + 1, c1),
                       data_fmt_count((long long)part, c2));
    for (size_t i = 0; num_classes > 0 && i < whole; i++) {
        unsigned label = b->p[i * CIFAR_RECORD];
        if (label >= (unsigned)num_classes)
            return io_errf(err, errlen, "%s: record %s of %s: label %u out of range [0, %d)",
                           name, data_fmt_count((long long)i + 1, c1),
                           data_fmt_count((long long)whole, c2), label, num_classes);
    }
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
    if (data_alloc(out, total, CIFAR_PIXELS) != 0) {
        io_errf(err, errlen, "CIFAR-10: out of memory for %ld images", total);
        goto done;
    }
    out->shape = (spec_shape){.rank = 3, .dim = {3, 32, 32}};
    long row = 0;
    for (int f = 0; f < n_paths; f++) {
        for (long i = 0; i < counts[f]; i++, row++) {
            const unsigned char *rec = bufs[f].p + (size_t)i * CIFAR_RECORD;
            float *x = out->x + (size_t)row * CIFAR_PIXELS;
            out->y[row] = rec[0];
            for (int k = 0; k < CIFAR_PIXELS; k++)
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

int dataset_load_cifar10(const char *const *batch_paths, int n_paths, dataset *out,
                         char *err, size_t errlen)
{
    return data_cifar10_load(batch_paths, n_paths, 0, out, err, errlen);
}
