/* fuzz_npz.c — lib/io's .npz reader (a ZIP of .npy members, STORED or
 * deflated, ZIP64 extras) on any bytes. What it accepts must be whole:
 * every tensor of rank 0..4 with non-negative dims and its data there. */
#include "fuzz.h"
#include "io/tensorfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tensor_entry *t;
    int n;
    char err[512];
    if (npz_read(fuzz_file(0, data, size), &t, &n, err, sizeof err) != 0)
        return 0;
    fuzz_check_tensors(t, n);
    tensorfile_free(t, n);
    return 0;
}
