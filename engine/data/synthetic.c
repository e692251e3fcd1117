/* synthetic.c — random data for benchmarks and tests: inputs uniform over
 * the byte values 0..255 (so the usual scaling treats them like images)
 * and uniform labels, all from the data PRNG, so a seed always gives the
 * same set. */
#include "data_internal.h"

#include <string.h>

#include "io/io_file.h"

#define SYNTHETIC_STREAM 0x53594e5400000000ULL /* "SYNT" */

int dataset_synthetic(const spec_shape *shape, long n, int num_classes, unsigned long seed,
                      dataset *out, char *err, size_t errlen)
{
    return data_synthetic_range(shape, n, num_classes, seed, 0, n, out, err, errlen);
}

/* The picked samples of the set of n: the generator runs through the
 * draws before them (cheap next to the data), so any pick equals those
 * samples of the whole set. */
int data_synthetic_pick(const spec_shape *shape, long n, int num_classes, unsigned long seed,
                        const data_pick *pick, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    long features = spec_shape_size(shape);
    if (features <= 0)
        return io_errf(err, errlen, "synthetic data: invalid sample shape");
    if (n <= 0 || num_classes <= 0)
        return io_errf(err, errlen, "synthetic data: need samples and classes (got %ld, %d)", n,
                       num_classes);
    if ((pick->rows || pick->bytes) && data_pick_check(pick, "synthetic data", err, errlen) != 0)
        return -1;
    long end = data_pick_end(pick), count = data_pick_count(pick);
    if (!pick->rows && (pick->lo < 0 || pick->hi < pick->lo || pick->hi > n))
        return io_errf(err, errlen, "synthetic data: samples [%ld, %ld) asked of %ld",
                       pick->lo, pick->hi, n);
    if (end > n)
        return io_errf(err, errlen, "synthetic data: sample %ld asked of %ld", end - 1, n);
    if (data_pick_alloc(pick, out, count, features) != 0)
        return io_errf(err, errlen, "synthetic data: out of memory for %ld samples of %ld",
                       count, features);
    out->shape = *shape;
    out->num_classes = num_classes;
    data_rng r;
    data_rng_seed(&r, seed, SYNTHETIC_STREAM);
    size_t total = (size_t)n * (size_t)features;
    size_t first = (size_t)(pick->rows ? (count > 0 ? pick->rows[0] : 0) : pick->lo) *
                   (size_t)features;
    size_t last = (size_t)end * (size_t)features;
    long cursor = 0, rec = -1, row = -1;
    /* Eight bytes per draw: the PRNG stays far from the bottleneck. */
    for (size_t i = 0; i < total; i += 8) {
        uint64_t v = data_rng_next(&r);
        if (i + 8 <= first || i >= last)
            continue;
        for (size_t k = 0; k < 8 && i + k < total; k++) {
            long at = (long)((i + k) / (size_t)features);
            if (at != rec) {
                rec = at;
                row = data_pick_row(pick, rec, &cursor);
            }
            size_t at_x = (size_t)row * (size_t)features + (i + k) % (size_t)features;
            uint8_t byte = (uint8_t)(v >> (8 * k));
            if (row >= 0 && pick->bytes)
                pick->bytes[at_x] = byte;
            else if (row >= 0)
                out->x[at_x] = (float)byte;
        }
    }
    cursor = 0;
    for (long i = 0; i < end; i++) {
        int32_t label = (int32_t)data_rng_below(&r, (uint64_t)num_classes);
        long at = data_pick_row(pick, i, &cursor);
        if (at >= 0)
            out->y[at] = label;
    }
    return 0;
}

int data_synthetic_range(const spec_shape *shape, long n, int num_classes, unsigned long seed,
                         long lo, long hi, dataset *out, char *err, size_t errlen)
{
    data_pick pick = {.lo = lo, .hi = hi};
    return data_synthetic_pick(shape, n, num_classes, seed, &pick, out, err, errlen);
}
