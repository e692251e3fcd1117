/* fuzz_npz.c — lib/io's .npz reader (a ZIP of .npy members, STORED or
 * deflated, ZIP64 extras) on any bytes. What it accepts must be whole:
 * every tensor of rank 0..4 with non-negative dims and its data there.
 * Its index also goes through lib/dataformat's x/y pair rules, which the
 * upload check and the engine's npz loader share: a pair they pass must
 * be what they promise. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "dataformat/npz_format.h"
#include "fuzz.h"
#include "io/npzarray.h"
#include "io/tensorfile.h"

static void npz_pairs(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    npz_index ix;
    char err[512];
    if (fd < 0 || npz_index_fd(fd, &ix, err, sizeof err) != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    for (int p = 0; p < NPZFMT_PAIRS; p++) {
        npzfmt_pair pair;
        if (npzfmt_pair_find(&ix, npzfmt_pairs[p][0], npzfmt_pairs[p][1], &pair, err,
                             sizeof err) != 0 || !pair.x)
            continue;
        if (!pair.y || pair.x->h.rank < 2 || pair.y->h.rank < 1 || pair.y->h.rank > 2 ||
            pair.x->h.dims[0] != pair.y->h.dims[0] ||
            (pair.len && (pair.len->h.rank != 1 || pair.len->h.dims[0] != pair.x->h.dims[0])))
            abort();
    }
    npz_index_free(&ix);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tensor_entry *t;
    int n;
    char err[512];
    const char *path = fuzz_file(0, data, size);
    npz_pairs(path);
    if (npz_read(path, &t, &n, err, sizeof err) != 0)
        return 0;
    fuzz_check_tensors(t, n);
    tensorfile_free(t, n);
    return 0;
}
