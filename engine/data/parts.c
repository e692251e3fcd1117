/* parts.c — the sets in parts, for distributed runs: one rank's range of a
 * set (dataset_load_part) or the train records of its slice of an epoch's
 * permutation (dataset_load_rows), raw, each equal to that part of
 * dataset_load_all's sets before scaling. Records are numbered by the
 * layout (layout.c), so a part of the validation split is read from the
 * train source past the train part. */
#include "data_internal.h"

#include <string.h>

#include "io/io_file.h"

int dataset_load_part(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, unsigned long seed,
                      const dataset_layout *lay, dataset_part part, long lo, long hi,
                      dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    long size = part == DATASET_PART_TRAIN ? lay->n_train
              : part == DATASET_PART_VAL   ? lay->n_val
                                           : lay->n_test;
    if (lo < 0 || hi < lo || hi > size)
        return io_errf(err, errlen, "samples [%ld, %ld) asked of a set of %ld", lo, hi, size);
    if (size == 0) {
        /* No such set: empty, as dataset_load_all leaves it. */
        out->features = spec_shape_size(input);
        out->shape = *input;
        out->label_steps = input->rank == 2 && data->per_step_labels ? input->dim[0] : 1;
        return 0;
    }
    bool split = part == DATASET_PART_VAL && lay->val_first >= 0;
    long shift = split ? lay->val_first : 0;
    if (data->format == DATA_SYNTHETIC) {
        char why[256];
        bool test = part == DATASET_PART_TEST;
        long n = test ? data->synthetic_test : data->synthetic_train;
        unsigned long s = test ? seed ^ DATA_SYNTHETIC_TEST_SEED : seed;
        if (data_synthetic_range(input, n, data->num_classes, s, lo + shift, hi + shift, out,
                                 why, sizeof why) != 0)
            return io_errf(err, errlen, "data.synthetic_%s: %s", test ? "test" : "train", why);
        return 0;
    }
    const char *field = part == DATASET_PART_TEST ? "data.test"
                      : part == DATASET_PART_VAL && !split ? "data.validation"
                                                           : "data.train";
    const char *name = part == DATASET_PART_TEST ? data->test
                     : part == DATASET_PART_VAL && !split ? data->validation
                                                          : data->train;
    if (!name)
        return io_errf(err, errlen, "%s: no set named", field);
    data_pick pick = {.lo = lo + shift, .hi = hi + shift};
    return data_source_load(data, field, name, input, roots, &pick, out, err, errlen);
}

int dataset_load_rows(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, unsigned long seed,
                      const dataset_layout *lay, const int64_t *rows, long m, uint8_t *bytes,
                      dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (bytes && !dataset_byte_valued(data))
        return io_errf(err, errlen, "data.format %s: values are not bytes",
                       spec_data_format_name(data->format));
    data_pick pick = {.rows = rows, .m = m, .bytes = bytes};
    if (data_pick_check(&pick, "train samples", err, errlen) != 0)
        return -1;
    if (data_pick_end(&pick) > lay->n_train)
        return io_errf(err, errlen, "train sample %ld asked of a set of %ld",
                       data_pick_end(&pick) - 1, lay->n_train);
    if (data->format == DATA_SYNTHETIC) {
        char why[256];
        if (data_synthetic_pick(input, data->synthetic_train, data->num_classes, seed, &pick,
                                out, why, sizeof why) != 0)
            return io_errf(err, errlen, "data.synthetic_train: %s", why);
        return 0;
    }
    if (!data->train)
        return io_errf(err, errlen, "data.train: no set named");
    return data_source_load(data, "data.train", data->train, input, roots, &pick, out, err,
                            errlen);
}
