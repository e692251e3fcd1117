/* fuzz_data.c — the helpers of fuzz_data.h. */
#include "fuzz_data.h"

#include <stdlib.h>

#include "fuzz.h"

void fuzz_data_split(const uint8_t *data, size_t size, const char **first,
                     const char **second)
{
    size_t len = size >= 2 ? (size_t)(data[0] | data[1] << 8) : 0;
    size_t skip = size >= 2 ? 2 : size;
    data += skip;
    size -= skip;
    if (len > size)
        len = size;
    *first = fuzz_file(0, data, len);
    *second = fuzz_file(1, data + len, size - len);
}

void fuzz_data_range(const uint8_t **data, size_t *size, long n, long *lo, long *hi)
{
    unsigned a = fuzz_take_byte(data, size), b = fuzz_take_byte(data, size);
    *lo = n > 0 ? (long)a % (n + 1) : 0;
    *hi = *lo + (n > *lo ? (long)b % (n - *lo + 1) : 0);
}

void fuzz_data_check(dataset *d, long want_n, int num_classes)
{
    if (d->n < 0 || (want_n >= 0 && d->n != want_n))
        abort();
    if (d->features != spec_shape_size(&d->shape) || d->features < 0)
        abort();
    volatile float sink = 0;
    if (d->n > 0 && d->features > 0) {
        if (d->x == NULL)
            abort();
        sink += d->x[0] + d->x[d->n * d->features - 1];
    }
    if (d->n > 0) {
        if (d->y == NULL)
            abort();
        for (long i = 0; num_classes > 0 && i < d->n; i++)
            if (d->y[i] < 0 || d->y[i] >= num_classes)
                abort();
    }
    (void)sink;
    dataset_free(d);
}

void fuzz_data_pick(const uint8_t **data, size_t *size, const uint8_t **pick,
                    size_t *pick_size)
{
    *pick = *data;
    *pick_size = *size < 2 ? *size : 2;
    *data += *pick_size;
    *size -= *pick_size;
}

void fuzz_data_agree(const fuzz_reader *r, const void *in, const uint8_t *pick,
                     size_t pick_size)
{
    char err[512];
    dataset d = {0};
    long whole = -1;
    if (r->load(in, &d, err, sizeof err) == 0) {
        whole = d.n;
        fuzz_data_check(&d, -1, r->classes);
    }
    long n;
    if (r->count(in, &n, err, sizeof err) != 0) {
        if (whole >= 0)
            abort();
        return;
    }
    if (whole >= 0 && n != whole)
        abort();
    long lo, hi;
    fuzz_data_range(&pick, &pick_size, n, &lo, &hi);
    dataset part = {0};
    if (r->load_range(in, lo, hi, &part, err, sizeof err) == 0)
        fuzz_data_check(&part, hi - lo, r->classes);
    else if (whole >= 0)
        abort(); /* a range of an input that loads whole loads too */
}

void fuzz_data_agree_two(const fuzz_reader *r, const uint8_t *data, size_t size)
{
    const uint8_t *pick;
    size_t pick_size;
    fuzz_data_pick(&data, &size, &pick, &pick_size);
    const char *paths[2];
    fuzz_data_split(data, size, &paths[0], &paths[1]);
    fuzz_data_agree(r, paths, pick, pick_size);
}
