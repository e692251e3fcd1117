/* dataset.c — dataset_load_all: the train, validation and test sets a job
 * spec asks for, each loaded whole from its source (source.c) or drawn
 * (synthetic.c), then cut to the layout (layout.c: subsets and the
 * validation split) and scaled with statistics of the train part only
 * (scaling.c). A distributed run reaches the same sets in parts
 * (parts.c). */
#include "data_internal.h"

#include <string.h>

#include "io/io_file.h"

static int dataset_load_synthetic(const spec_data *data, const spec_shape *input,
                                  unsigned long seed, dataset *train, dataset *test, char *err,
                                  size_t errlen)
{
    char why[256];
    if (dataset_synthetic(input, data->synthetic_train, data->num_classes, seed, train, why,
                          sizeof why) != 0)
        return io_errf(err, errlen, "data.synthetic_train: %s", why);
    if (data->synthetic_test > 0 &&
        dataset_synthetic(input, data->synthetic_test, data->num_classes,
                          seed ^ DATA_SYNTHETIC_TEST_SEED, test, why, sizeof why) != 0)
        return io_errf(err, errlen, "data.synthetic_test: %s", why);
    return 0;
}

/* The named sets, whole: train, then test, then data.validation. */
static int dataset_load_named(const spec_data *data, const spec_shape *input,
                              const dataset_roots *roots, dataset *train, dataset *val,
                              dataset *test, char *err, size_t errlen)
{
    if (!data->train)
        return io_errf(err, errlen, "data.train: no training set named");
    if (data_source_load(data, "data.train", data->train, input, roots, NULL, train, err,
                         errlen) != 0)
        return -1;
    if (data->test && data_source_load(data, "data.test", data->test, input, roots, NULL,
                                       test, err, errlen) != 0)
        return -1;
    if (data->validation && data_source_load(data, "data.validation", data->validation, input,
                                             roots, NULL, val, err, errlen) != 0)
        return -1;
    return 0;
}

static int dataset_load_sets(const spec_data *data, const spec_shape *input,
                             const dataset_roots *roots, unsigned long seed, dataset *train,
                             dataset *val, dataset *test, char *err, size_t errlen)
{
    int rc = data->format == DATA_SYNTHETIC
                 ? dataset_load_synthetic(data, input, seed, train, test, err, errlen)
                 : dataset_load_named(data, input, roots, train, val, test, err, errlen);
    if (rc != 0)
        return -1;
    dataset_layout lay;
    if (data_layout_cut(data, train->n, val->n, test->n, &lay, err, errlen) != 0 ||
        data_layout_apply(&lay, train, val, test, err, errlen) != 0)
        return -1;
    return data_scaling_whole(data, train, val, test, err, errlen);
}

int dataset_load_all(const spec_data *data, const spec_shape *input,
                     const dataset_roots *roots, unsigned long seed,
                     dataset *train, dataset *val, dataset *test,
                     char *err, size_t errlen)
{
    memset(train, 0, sizeof *train);
    memset(val, 0, sizeof *val);
    memset(test, 0, sizeof *test);
    if (spec_shape_size(input) <= 0)
        return io_errf(err, errlen, "model.input: invalid shape");
    if (dataset_load_sets(data, input, roots, seed, train, val, test, err, errlen) != 0) {
        dataset_free(train);
        dataset_free(val);
        dataset_free(test);
        return -1;
    }
    return 0;
}
