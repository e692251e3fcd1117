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

/* The images file and the labels file. */
typedef struct idx_files {
    const char *images, *labels;
} idx_files;

static int idx_load(const void *in, dataset *d, char *err, size_t errlen)
{
    const idx_files *f = in;
    return data_idx_load(f->images, f->labels, FUZZ_CLASSES, d, err, errlen);
}

static int idx_count(const void *in, long *n, char *err, size_t errlen)
{
    const idx_files *f = in;
    return data_idx_count(f->images, n, err, errlen);
}

static int idx_load_range(const void *in, long lo, long hi, dataset *d, char *err,
                          size_t errlen)
{
    const idx_files *f = in;
    return data_idx_load_range(f->images, f->labels, FUZZ_CLASSES, lo, hi, d, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *pick;
    size_t pick_size;
    fuzz_data_pick(&data, &size, &pick, &pick_size);
    idx_files f;
    fuzz_data_split(data, size, &f.images, &f.labels);
    const fuzz_reader r = {idx_load, idx_count, idx_load_range, FUZZ_CLASSES};
    fuzz_data_agree(&r, &f, pick, pick_size);
    return 0;
}
