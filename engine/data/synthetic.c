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
    memset(out, 0, sizeof *out);
    long features = spec_shape_size(shape);
    if (features <= 0)
        return io_errf(err, errlen, "synthetic data: invalid sample shape");
    if (n <= 0 || num_classes <= 0)
        return io_errf(err, errlen, "synthetic data: need samples and classes (got %ld, %d)", n,
                       num_classes);
    if (data_alloc(out, n, features) != 0)
        return io_errf(err, errlen, "synthetic data: out of memory for %ld samples of %ld", n,
                       features);
    out->shape = *shape;
    out->num_classes = num_classes;
    data_rng r;
    data_rng_seed(&r, seed, SYNTHETIC_STREAM);
    size_t total = (size_t)n * (size_t)features;
    /* Eight bytes per draw: the PRNG stays far from the bottleneck. */
    for (size_t i = 0; i < total; i += 8) {
        uint64_t v = data_rng_next(&r);
        for (size_t k = 0; k < 8 && i + k < total; k++)
            out->x[i + k] = (float)((v >> (8 * k)) & 0xff);
    }
    for (long i = 0; i < n; i++)
        out->y[i] = (int32_t)data_rng_below(&r, (uint64_t)num_classes);
    return 0;
}
