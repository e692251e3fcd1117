/* fuzz_cifar10.c — engine/data's CIFAR-10 reader (binary batches of
 * 1 + 3072-byte records, either gzipped) on any two batch files: the whole
 * load, the count and a range load must refuse or return exactly what
 * they promise. Input: two bytes choosing the range, then the two files
 * as fuzz_data_split cuts them. */
#include <stdlib.h>

#include "data/data_internal.h"
#include "fuzz.h"
#include "fuzz_data.h"

#define FUZZ_CLASSES 10

static int cifar10_load(const void *in, dataset *d, char *err, size_t errlen)
{
    return data_cifar10_load(in, 2, FUZZ_CLASSES, d, err, errlen);
}

static int cifar10_count(const void *in, long *n, char *err, size_t errlen)
{
    return data_cifar10_count(in, 2, n, err, errlen);
}

static int cifar10_load_range(const void *in, long lo, long hi, dataset *d, char *err,
                              size_t errlen)
{
    return data_cifar10_load_range(in, 2, FUZZ_CLASSES, lo, hi, d, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *pick;
    size_t pick_size;
    fuzz_data_pick(&data, &size, &pick, &pick_size);
    const char *paths[2];
    fuzz_data_split(data, size, &paths[0], &paths[1]);
    const fuzz_reader r = {cifar10_load, cifar10_count, cifar10_load_range, FUZZ_CLASSES};
    fuzz_data_agree(&r, paths, pick, pick_size);
    return 0;
}
