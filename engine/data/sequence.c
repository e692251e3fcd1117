/* sequence.c — what the sequence loaders (npz sequences, CTF, text)
 * share: a set of {T, F} samples with their lengths and, with per-step
 * labels, a label per step; copying one sample between sets (the
 * validation split, a pick out of a whole load); and keeping a pick of a
 * set that a format can only read whole (CTF and text, whose records are
 * found by parsing the file from its start). */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

int data_seq_alloc(dataset *d, long n, const spec_shape *shape, bool per_step)
{
    long steps = shape->dim[0], features = spec_shape_size(shape);
    if (data_alloc(d, n, features) != 0)
        return -1;
    d->shape = *shape;
    d->label_steps = per_step ? steps : 1;
    /* Padding is zeros: the loaders write only the real steps. */
    memset(d->x, 0, (size_t)n * (size_t)features * sizeof *d->x);
    d->len = malloc(n ? (size_t)n * sizeof *d->len : 1);
    int32_t *y = per_step ? realloc(d->y, (size_t)(n ? n * steps : 1) * sizeof *d->y) : d->y;
    if (!d->len || !y) {
        dataset_free(d);
        return -1;
    }
    d->y = y;
    return 0;
}

void data_seq_copy_sample(const dataset *src, long i, dataset *dst, long j)
{
    long f = src->features, k = src->label_steps > 0 ? src->label_steps : 1;
    memcpy(dst->x + j * f, src->x + i * f, (size_t)f * sizeof *src->x);
    memcpy(dst->y + j * k, src->y + i * k, (size_t)k * sizeof *src->y);
    if (src->len && dst->len)
        dst->len[j] = src->len[i];
}

int data_seq_keep_pick(dataset *whole, const data_pick *pick, const char *what,
                       dataset *out, char *err, size_t errlen)
{
    if (!pick) {
        *out = *whole;
        memset(whole, 0, sizeof *whole);
        return 0;
    }
    int rc = -1;
    if (data_pick_check(pick, what, err, errlen) != 0)
        goto out;
    if (pick->bytes) {
        io_errf(err, errlen, "%s: sequence values are not bytes", what);
        goto out;
    }
    long count = data_pick_count(pick), end = data_pick_end(pick);
    if (end > whole->n) {
        io_errf(err, errlen, "%s: %ld records, the load needs %ld", what, whole->n, end);
        goto out;
    }
    if (data_seq_alloc(out, count, &whole->shape, whole->label_steps > 1) != 0) {
        io_errf(err, errlen, "%s: out of memory for %ld samples", what, count);
        goto out;
    }
    out->num_classes = whole->num_classes;
    for (long i = 0; i < count; i++)
        data_seq_copy_sample(whole, pick->rows ? (long)pick->rows[i] : pick->lo + i, out, i);
    rc = 0;
out:
    dataset_free(whole);
    return rc;
}
