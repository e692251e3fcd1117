/* fuzz_cifar10.c — engine/data's CIFAR-10 reader (binary batches of
 * 1 + 3072-byte records, either gzipped) on any two batch files: the whole
 * load, the count and a range load must refuse or return exactly what
 * they promise. Input: two bytes choosing the range, then the two files
 * as fuzz_data_split cuts them. */
#include <stdlib.h>

#include "data/data_internal.h"
#include "dataformat/cifar_format.h"
#include "fuzz.h"
#include "fuzz_data.h"

#define FUZZ_CLASSES 10

/* lib/dataformat's record rules on the raw bytes, which the loader above
 * and the daemon's upload check both go by. */
static void cifar10_rules(const uint8_t *data, size_t size)
{
    uint64_t part, n = cifarfmt_records(size, &part);
    if (n * CIFARFMT_RECORD + part != size || part >= CIFARFMT_RECORD)
        abort();
    long long bad = cifarfmt_bad_label(data, (size_t)n, CIFARFMT_CLASSES);
    for (long long i = 0; i < (bad < 0 ? (long long)n : bad); i++)
        if (data[(size_t)i * CIFARFMT_RECORD] >= CIFARFMT_CLASSES)
            abort();
    if (bad >= 0 && data[(size_t)bad * CIFARFMT_RECORD] < CIFARFMT_CLASSES)
        abort();
}

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
    cifar10_rules(data, size);
    const fuzz_reader r = {cifar10_load, cifar10_count, cifar10_load_range, FUZZ_CLASSES};
    fuzz_data_agree_two(&r, data, size);
    return 0;
}
