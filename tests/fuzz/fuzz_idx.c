/* fuzz_idx.c — engine/data's IDX reader (MNIST's images and labels files,
 * either gzipped) on any pair of files: the whole load, the header count
 * and a range load must refuse or return exactly what they promise. Input:
 * the two files as fuzz_data_split cuts them, after two bytes choosing the
 * range. */
#include <stdlib.h>

#include "data/data_internal.h"
#include "fuzz.h"
#include "fuzz_data.h"

#define FUZZ_CLASSES 10

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *pick = data;
    size_t pick_size = size < 2 ? size : 2;
    data += pick_size;
    size -= pick_size;
    const char *images, *labels;
    fuzz_data_split(data, size, &images, &labels);
    char err[512];
    dataset d = {0};
    long whole = -1;
    if (data_idx_load(images, labels, FUZZ_CLASSES, &d, err, sizeof err) == 0) {
        whole = d.n;
        fuzz_data_check(&d, -1, FUZZ_CLASSES);
    }
    long n;
    if (data_idx_count(images, &n, err, sizeof err) != 0)
        return 0;
    if (whole >= 0 && n != whole)
        abort();
    long lo, hi;
    fuzz_data_range(&pick, &pick_size, n, &lo, &hi);
    dataset part = {0};
    if (data_idx_load_range(images, labels, FUZZ_CLASSES, lo, hi, &part, err, sizeof err) == 0)
        fuzz_data_check(&part, hi - lo, FUZZ_CLASSES);
    else if (whole >= 0)
        abort(); /* a range of a file that loads whole loads too */
    return 0;
}
