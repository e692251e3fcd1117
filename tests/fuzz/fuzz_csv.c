/* fuzz_csv.c — engine/data's CSV reader (label column, optional header,
 * CRLF, blank lines, gzip) on any file: the whole load, the row count and
 * a range load must refuse or return exactly what they promise. Input: a
 * byte of options (label column: bits 0-1; header: bit 2; classes: bits
 * 3-5, 0 = no check), two bytes choosing the range, then the file. */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "dataformat/csv_format.h"
#include "fuzz.h"
#include "fuzz_data.h"

/* The file and the options of one input. */
typedef struct csv_input {
    const char *path;
    int label_column;
    bool header;
    int classes;
} csv_input;

static int csv_load(const void *in, dataset *d, char *err, size_t errlen)
{
    const csv_input *c = in;
    return data_csv_load(c->path, c->label_column, c->header, c->classes, 0, d, err, errlen);
}

static int csv_count(const void *in, long *n, char *err, size_t errlen)
{
    const csv_input *c = in;
    return data_csv_count(c->path, c->header, n, err, errlen);
}

static int csv_load_range(const void *in, long lo, long hi, dataset *d, char *err,
                          size_t errlen)
{
    const csv_input *c = in;
    return data_csv_load_range(c->path, c->label_column, c->header, c->classes, 0, lo, hi, d,
                               err, errlen);
}

/* lib/dataformat's field rules on the input's first line, which the
 * loader above and the daemon's upload check both go by. */
static void csv_rules(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data, *nl = memchr(s, '\n', size);
    const char *e = nl ? nl : s + size, *bs = NULL, *be = NULL;
    long fields;
    long bad = csvfmt_first_bad(s, e, &fields, &bs, &be);
    double v;
    if (fields != csvfmt_fields(s, e) || bad >= fields || (bad < 0) != csvfmt_all_numbers(s, e))
        abort();
    if (bad >= 0 && (bs < s || be > e || bs > be || csvfmt_number(bs, be, &v) == 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    csv_rules(data, size);
    unsigned opt = fuzz_take_byte(&data, &size);
    csv_input c = {
        .label_column = (int)(opt & 3),
        .header = (opt & 4) != 0,
        .classes = (int)(opt >> 3 & 7),
    };
    const uint8_t *pick;
    size_t pick_size;
    fuzz_data_pick(&data, &size, &pick, &pick_size);
    c.path = fuzz_file(0, data, size);
    const fuzz_reader r = {csv_load, csv_count, csv_load_range, c.classes};
    fuzz_data_agree(&r, &c, pick, pick_size);
    return 0;
}
