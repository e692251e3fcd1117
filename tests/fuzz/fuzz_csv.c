/* fuzz_csv.c — engine/data's CSV reader (label column, optional header,
 * CRLF, blank lines, gzip) on any file: the whole load, the row count and
 * a range load must refuse or return exactly what they promise. Input: a
 * byte of options (label column: bits 0-1; header: bit 2; classes: bits
 * 3-5, 0 = no check), two bytes choosing the range, then the file. */
#include <stdlib.h>

#include "data/data_internal.h"
#include "fuzz.h"
#include "fuzz_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned opt = fuzz_take_byte(&data, &size);
    int label_column = (int)(opt & 3);
    bool header = (opt & 4) != 0;
    int classes = (int)(opt >> 3 & 7);
    const uint8_t *pick = data;
    size_t pick_size = size < 2 ? size : 2;
    data += pick_size;
    size -= pick_size;
    const char *path = fuzz_file(0, data, size);
    char err[512];
    dataset d = {0};
    long whole = -1;
    if (data_csv_load(path, label_column, header, classes, 0, &d, err, sizeof err) == 0) {
        whole = d.n;
        fuzz_data_check(&d, -1, classes);
    }
    long n;
    if (data_csv_count(path, header, &n, err, sizeof err) != 0) {
        if (whole >= 0)
            abort();
        return 0;
    }
    if (whole >= 0 && n != whole)
        abort();
    long lo, hi;
    fuzz_data_range(&pick, &pick_size, n, &lo, &hi);
    dataset part = {0};
    if (data_csv_load_range(path, label_column, header, classes, 0, lo, hi, &part, err,
                            sizeof err) == 0)
        fuzz_data_check(&part, hi - lo, classes);
    else if (whole >= 0)
        abort(); /* a range of a file that loads whole loads too */
    return 0;
}
