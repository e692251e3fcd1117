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

/* Samples [lo, hi) of the set of n: the generator runs through the draws
 * before them (cheap next to the data), so any slice equals the whole
 * set's. */
int data_synthetic_range(const spec_shape *shape, long n, int num_classes, unsigned long seed,
                         long lo, long hi, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    long features = spec_shape_size(shape);
    if (features <= 0)
        return io_errf(err, errlen, "synthetic data: invalid sample shape");
    if (n <= 0 || num_classes <= 0)
        return io_errf(err, errlen, "synthetic data: need samples and classes (got %ld, %d)", n,
                       num_classes);
    if (lo < 0 || hi < lo || hi > n)
        return io_errf(err, errlen, "synthetic data: samples [%ld, %ld) asked of %ld", lo, hi,
                       n);
    if (data_alloc(out, hi - lo, features) != 0)
        return io_errf(err, errlen, "synthetic data: out of memory for %ld samples of %ld",
                       hi - lo, features);
    out->shape = *shape;
    out->num_classes = num_classes;
    data_rng r;
    data_rng_seed(&r, seed, SYNTHETIC_STREAM);
    size_t total = (size_t)n * (size_t)features;
    size_t first = (size_t)lo * (size_t)features, last = (size_t)hi * (size_t)features;
    /* Eight bytes per draw: the PRNG stays far from the bottleneck. */
    for (size_t i = 0; i < total; i += 8) {
        uint64_t v = data_rng_next(&r);
        if (i + 8 <= first || i >= last)
            continue;
        for (size_t k = 0; k < 8 && i + k < total; k++)
            if (i + k >= first && i + k < last)
                out->x[i + k - first] = (float)((v >> (8 * k)) & 0xff);
    }
    for (long i = 0; i < hi; i++) {
        int32_t label = (int32_t)data_rng_below(&r, (uint64_t)num_classes);
        if (i >= lo)
            out->y[i - lo] = label;
    }
    return 0;
}
