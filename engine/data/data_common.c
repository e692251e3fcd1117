/* data_common.c — what every loader shares: allocation of a dataset's
 * arrays and freeing them. */
#include "data_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int data_alloc(dataset *d, long n, long features)
{
    d->x = NULL;
    d->y = NULL;
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
    return 0;
}

void dataset_free(dataset *d)
{
    if (!d)
        return;
    free(d->x);
    free(d->y);
    free(d->shift);
    free(d->factor);
    d->x = NULL;
    d->y = NULL;
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
