/* fuzz_idx.c — engine/data's IDX reader (MNIST's images and labels files,
 * either gzipped) on any pair of files: the whole load, the header count
 * and a range load must refuse or return exactly what they promise. Input:
 * the two files as fuzz_data_split cuts them, after two bytes choosing the
 * range. */
#include <stdlib.h>

#include "data/data_internal.h"
#include "dataformat/idx_format.h"
#include "fuzz.h"
#include "fuzz_data.h"

#define FUZZ_CLASSES 10

/* lib/dataformat's header and body rules on the raw bytes, which the
 * loader above and the daemon's upload check both go by. */
static void idx_rules(const uint8_t *data, size_t size)
{
    idxfmt_header h;
    long need = idxfmt_header_parse(data, size, &h);
    if (need != 0) {
        if (need > 0 ? (size_t)need <= size || idxfmt_magic_ok(data, size) != (size >= 4)
                     : idxfmt_magic_ok(data, size))
            abort();
        return;
    }
    uint64_t per = 1, have, extra, body = size - h.header_len;
    for (int i = 1; i < h.rank; i++)
        per *= h.dims[i];
    if (h.rank < 1 || h.rank > IDXFMT_MAX_RANK || h.header_len != 4 + 4 * (size_t)h.rank ||
        h.header_len > size || per != h.record_bytes)
        abort();
    idxfmt_body b = idxfmt_body_check(&h, body, &have, &extra);
    uint64_t want = (uint64_t)h.dims[0] * h.record_bytes;
    if ((b == IDXFMT_BODY_OK) != (body == want) || (b == IDXFMT_BODY_SHORT) != (body < want) ||
        (b == IDXFMT_BODY_EXTRA && extra != body - want) || (per && have * per > body))
        abort();
}

static int idx_load(const void *in, dataset *d, char *err, size_t errlen)
{
    const char *const *f = in; /* the images file, the labels file */
    return data_idx_load(f[0], f[1], FUZZ_CLASSES, d, err, errlen);
}

static int idx_count(const void *in, long *n, char *err, size_t errlen)
{
    const char *const *f = in;
    return data_idx_count(f[0], n, err, errlen);
}

static int idx_load_range(const void *in, long lo, long hi, dataset *d, char *err,
                          size_t errlen)
{
    const char *const *f = in;
    return data_idx_load_range(f[0], f[1], FUZZ_CLASSES, lo, hi, d, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    idx_rules(data, size);
    const fuzz_reader r = {idx_load, idx_count, idx_load_range, FUZZ_CLASSES};
    fuzz_data_agree_two(&r, data, size);
    return 0;
}
