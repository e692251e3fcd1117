/* layout.c — where the sets lie among their sources' records: the first
 * data.train_samples of the train source, the first data.test_samples of
 * the test source, and the validation split (Keras's validation_split: the
 * last fraction of the train part, cut at int(n * (1 - split)) before any
 * shuffle). A whole load cuts its sets in memory and a distributed run
 * cuts record counts, both through data_layout_cut, so they agree on every
 * sample and every message. */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

/* want > 0 samples of a set of *have: *have becomes want. */
static int layout_subset(const char *field, const char *name, long want, long *have, char *err,
                         size_t errlen)
{
    if (want <= 0)
        return 0;
    if (want > *have) {
        char c1[32], c2[32];
        return io_errf(err, errlen, "%s: %s requested but \"%s\" has %s samples", field,
                       data_fmt_count(want, c1), name, data_fmt_count(*have, c2));
    }
    *have = want;
    return 0;
}

/* Whether the spec has a test set: data.test, or synthetic test data. */
static bool layout_has_test(const spec_data *data)
{
    return data->format == DATA_SYNTHETIC ? data->synthetic_test > 0 : data->test != NULL;
}

int data_layout_cut(const spec_data *data, long n_train, long n_val, long n_test,
                    dataset_layout *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->val_first = -1;
    out->n_val = n_val;
    out->n_test = n_test;
    const char *train_name = data->train ? data->train : "synthetic";
    const char *test_name = data->test ? data->test : "synthetic";
    if (layout_subset("data.train_samples", train_name, data->train_samples, &n_train, err,
                      errlen) != 0)
        return -1;
    if (layout_has_test(data) && layout_subset("data.test_samples", test_name,
                                                data->test_samples, &out->n_test, err,
                                                errlen) != 0)
        return -1;
    if (!data->validation && data->validation_split > 0) {
        long keep = (long)((double)n_train * (1.0 - data->validation_split));
        long split = n_train - keep;
        char c1[32];
        if (split <= 0 || keep <= 0)
            return io_errf(err, errlen, "data.validation_split: %g of %s train samples leaves "
                           "an empty %s set", data->validation_split,
                           data_fmt_count(n_train, c1), split <= 0 ? "validation" : "training");
        out->n_val = split;
        out->val_first = keep;
        n_train = keep;
    }
    if (n_train == 0)
        return io_errf(err, errlen, "data.train: \"%s\" has no samples", train_name);
    out->n_train = n_train;
    return 0;
}

/* Keep the first n samples (n <= ds->n). A failed shrink keeps the larger
 * buffers, which is harmless. */
static void layout_keep_first(dataset *ds, long n)
{
    if (n >= ds->n)
        return;
    ds->n = n;
    if (n == 0)
        return;
    float *x = realloc(ds->x, (size_t)n * (size_t)ds->features * sizeof(float));
    if (x)
        ds->x = x;
    size_t steps = ds->label_steps > 1 ? (size_t)ds->label_steps : 1;
    int32_t *y = realloc(ds->y, (size_t)n * steps * sizeof(int32_t));
    if (y)
        ds->y = y;
    int32_t *len = ds->len ? realloc(ds->len, (size_t)n * sizeof *len) : NULL;
    if (len)
        ds->len = len;
    float *t = ds->t ? realloc(ds->t, (size_t)n * (size_t)ds->num_classes * sizeof(float))
                     : NULL;
    if (t)
        ds->t = t;
}

int data_layout_apply(const dataset_layout *lay, dataset *train, dataset *val, dataset *test,
                      char *err, size_t errlen)
{
    layout_keep_first(test, lay->n_test);
    if (lay->val_first >= 0 && train->len) {
        if (data_seq_alloc(val, lay->n_val, &train->shape, train->label_steps > 1) != 0)
            return io_errf(err, errlen, "data.validation_split: out of memory");
        val->num_classes = train->num_classes;
        for (long i = 0; i < lay->n_val; i++)
            data_seq_copy_sample(train, lay->val_first + i, val, i);
    } else if (lay->val_first >= 0) {
        if (data_alloc(val, lay->n_val, train->features) != 0)
            return io_errf(err, errlen, "data.validation_split: out of memory");
        val->shape = train->shape;
        val->num_classes = train->num_classes;
        memcpy(val->x, train->x + (size_t)lay->val_first * train->features,
               (size_t)lay->n_val * train->features * sizeof(float));
        memcpy(val->y, train->y + lay->val_first, (size_t)lay->n_val * sizeof(int32_t));
        if (train->t) {
            size_t k = (size_t)train->num_classes;
            val->t = malloc((size_t)(lay->n_val > 0 ? lay->n_val : 1) * k * sizeof(float));
            if (!val->t)
                return io_errf(err, errlen, "data.validation_split: out of memory");
            memcpy(val->t, train->t + (size_t)lay->val_first * k,
                   (size_t)lay->n_val * k * sizeof(float));
        }
    }
    layout_keep_first(train, lay->n_train);
    return 0;
}

int dataset_layout_of(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, dataset_layout *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->val_first = -1;
    if (spec_shape_size(input) <= 0)
        return io_errf(err, errlen, "model.input: invalid shape");
    long n_train = 0, n_val = 0, n_test = 0;
    if (data->format == DATA_SYNTHETIC) {
        n_train = data->synthetic_train;
        n_test = data->synthetic_test > 0 ? data->synthetic_test : 0;
    } else {
        if (!data->train)
            return io_errf(err, errlen, "data.train: no training set named");
        if (data_source_count(data, "data.train", data->train, input, roots, &n_train, err,
                              errlen) != 0)
            return -1;
        if (data->test && data_source_count(data, "data.test", data->test, input, roots, &n_test,
                                            err, errlen) != 0)
            return -1;
        if (data->validation && data_source_count(data, "data.validation", data->validation,
                                                  input, roots, &n_val, err, errlen) != 0)
            return -1;
    }
    return data_layout_cut(data, n_train, n_val, n_test, out, err, errlen);
}
