/* data_common.c — what every loader shares: allocation of a dataset's
 * arrays and freeing them, the records a load keeps (data_pick), and
 * which formats hold bytes. */
#include "data_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

int data_alloc(dataset *d, long n, long features)
{
    d->x = NULL;
    d->y = NULL;
    d->t = NULL;
    if (n < 0 || features < 0 || (features > 0 && (size_t)n > SIZE_MAX / sizeof(float) / (size_t)features))
        return -1;
    size_t nx = (size_t)n * (size_t)features;
    d->x = malloc(nx ? nx * sizeof(float) : 1);
    d->y = malloc(n ? (size_t)n * sizeof(int32_t) : 1);
    if (!d->x || !d->y) {
        dataset_free(d);
        return -1;
    }
    d->n = n;
    d->features = features;
    d->label_steps = 1;
    return 0;
}

void dataset_free(dataset *d)
{
    if (!d)
        return;
    free(d->x);
    free(d->y);
    free(d->t);
    free(d->shift);
    free(d->factor);
    free(d->len);
    d->len = NULL;
    d->x = NULL;
    d->y = NULL;
    d->t = NULL;
    d->shift = NULL;
    d->factor = NULL;
    d->n = 0;
}

void data_set_classes(dataset *d, int num_classes)
{
    if (num_classes > 0) {
        d->num_classes = num_classes;
        return;
    }
    int32_t max = -1;
    for (long i = 0; i < d->n; i++)
        if (d->y[i] > max)
            max = d->y[i];
    d->num_classes = (int)max + 1;
}

long data_pick_count(const data_pick *p)
{
    return p->rows ? p->m : p->hi - p->lo;
}

long data_pick_end(const data_pick *p)
{
    if (p->rows)
        return p->m > 0 ? (long)p->rows[p->m - 1] + 1 : 0;
    return p->hi;
}

int data_pick_check(const data_pick *p, const char *what, char *err, size_t errlen)
{
    if (!p->rows) {
        if (p->bytes)
            return io_errf(err, errlen, "%s: a byte buffer needs a record list", what);
        if (p->lo < 0 || p->hi < p->lo)
            return io_errf(err, errlen, "%s: invalid record range [%ld, %ld)", what, p->lo,
                           p->hi);
        return 0;
    }
    for (long i = 0; i < p->m; i++)
        if (p->rows[i] < 0 || (i > 0 && p->rows[i] <= p->rows[i - 1]))
            return io_errf(err, errlen, "%s: record list not ascending at entry %ld (%lld)",
                           what, i, (long long)p->rows[i]);
    return p->m < 0 ? io_errf(err, errlen, "%s: negative record count", what) : 0;
}

long data_pick_row(const data_pick *p, long rec, long *cursor)
{
    if (!p->rows)
        return rec >= p->lo && rec < p->hi ? rec - p->lo : -1;
    while (*cursor < p->m && p->rows[*cursor] < rec)
        (*cursor)++;
    return *cursor < p->m && p->rows[*cursor] == rec ? *cursor : -1;
}

int data_pick_alloc(const data_pick *p, dataset *d, long count, long features)
{
    if (!p->bytes)
        return data_alloc(d, count, features);
    if (data_alloc(d, count, 0) != 0)
        return -1;
    free(d->x);
    d->x = NULL;
    d->features = features;
    return 0;
}

bool dataset_byte_valued(const spec_data *data)
{
    return data->format == DATA_IDX || data->format == DATA_CIFAR10 ||
           data->format == DATA_SYNTHETIC;
}
