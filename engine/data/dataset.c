/* dataset.c — dataset_load_all: the train, validation and test sets a job
 * spec asks for, resolved under the dataset roots, loaded, subset, split
 * and scaled. Scaling statistics come from the train part only, so no
 * information from validation or test data leaks into training. */
#include "data_internal.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io_file.h"

#define SYNTHETIC_TEST_SEED 0x54455354ULL /* "TEST": keeps test apart from train */

/* The n-th data batch in a CIFAR-10 directory, by the number after
 * "data_batch_" (so 10 sorts after 9); -1 for other files. */
static long cifar_batch_number(const char *fname)
{
    if (strncmp(fname, "data_batch_", 11) != 0)
        return -1;
    char *end;
    long k = strtol(fname + 11, &end, 10);
    if (end == fname + 11 || (strcmp(end, ".bin") != 0 && strcmp(end, ".bin.gz") != 0))
        return -1;
    return k;
}

typedef struct cifar_batch {
    long number;
    char path[PATH_MAX];
} cifar_batch;

static int cifar_batch_cmp(const void *a, const void *b)
{
    long x = ((const cifar_batch *)a)->number, y = ((const cifar_batch *)b)->number;
    return (x > y) - (x < y);
}

/* What to do with a set's records: count them, load all, or a range. */
typedef struct data_span {
    bool count;             /* only count into *n */
    long lo, hi;            /* hi < 0: every record */
    long *n;
    const data_pick *pick;  /* set: these records (lo, hi unused) */
} data_span;

static int cifar_apply(const char *const *paths, int n, int num_classes, const data_span *sp,
                       dataset *out, char *err, size_t errlen)
{
    if (sp->count)
        return data_cifar10_count(paths, n, sp->n, err, errlen);
    if (sp->pick)
        return data_cifar10_load_pick(paths, n, num_classes, sp->pick, out, err, errlen);
    if (sp->hi < 0)
        return data_cifar10_load(paths, n, num_classes, out, err, errlen);
    return data_cifar10_load_range(paths, n, num_classes, sp->lo, sp->hi, out, err, errlen);
}

/* Every data_batch_N.bin of dir, in batch order. */
static int load_cifar_dir(const char *name, const char *dir, const dataset_roots *roots,
                          int num_classes, const data_span *sp, dataset *out, char *err,
                          size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return io_errf(err, errlen, "dataset \"%s\": cannot open %s", name, dir);
    cifar_batch *batches = NULL;
    int n = 0, cap = 0, rc = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long k = cifar_batch_number(e->d_name);
        if (k < 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            cifar_batch *nb = realloc(batches, (size_t)cap * sizeof *nb);
            if (!nb) {
                io_errf(err, errlen, "dataset \"%s\": out of memory", name);
                goto done;
            }
            batches = nb;
        }
        batches[n].number = k;
        if ((size_t)snprintf(batches[n].path, sizeof batches[n].path, "%s/%s", dir,
                             e->d_name) >= sizeof batches[n].path) {
            io_errf(err, errlen, "dataset \"%s\": path too long", name);
            goto done;
        }
        /* A batch may itself be a symlink: it too must stay under a root. */
        if (!data_path_under_roots(batches[n].path, roots)) {
            io_errf(err, errlen, "dataset \"%s\": %s leads outside the dataset roots", name,
                    e->d_name);
            goto done;
        }
        n++;
    }
    if (n == 0) {
        io_errf(err, errlen, "dataset \"%s\": no data_batch_*.bin files in %s", name, dir);
        goto done;
    }
    qsort(batches, (size_t)n, sizeof *batches, cifar_batch_cmp);
    const char **paths = malloc((size_t)n * sizeof *paths);
    if (!paths) {
        io_errf(err, errlen, "dataset \"%s\": out of memory", name);
        goto done;
    }
    for (int i = 0; i < n; i++)
        paths[i] = batches[i].path;
    rc = cifar_apply(paths, n, num_classes, sp, out, err, errlen);
    free(paths);
done:
    closedir(d);
    free(batches);
    return rc;
}

/* Resolve one named set (train, validation or test) and count or load
 * its records as sp says. */
static int span_named(const spec_data *data, const char *field, const char *name,
                      const spec_shape *input, const dataset_roots *roots, const data_span *sp,
                      dataset *out, char *err, size_t errlen)
{
    char p1[PATH_MAX], p2[PATH_MAX], why[1024];
    if (dataset_resolve(data->format, name, roots, p1, p2, sizeof p1, why, sizeof why) != 0)
        return io_errf(err, errlen, "%s: %s", field, why);
    switch (data->format) {
    case DATA_IDX:
        if (sp->count)
            return data_idx_count(p1, sp->n, err, errlen);
        if (sp->pick)
            return data_idx_load_pick(p1, p2, data->num_classes, sp->pick, out, err, errlen);
        if (sp->hi < 0)
            return data_idx_load(p1, p2, data->num_classes, out, err, errlen);
        return data_idx_load_range(p1, p2, data->num_classes, sp->lo, sp->hi, out, err,
                                   errlen);
    case DATA_CIFAR10: {
        struct stat st;
        if (stat(p1, &st) == 0 && S_ISDIR(st.st_mode))
            return load_cifar_dir(name, p1, roots, data->num_classes, sp, out, err, errlen);
        const char *one[1] = {p1};
        return cifar_apply(one, 1, data->num_classes, sp, out, err, errlen);
    }
    case DATA_CSV:
        if (sp->count)
            return data_csv_count(p1, data->header, sp->n, err, errlen);
        if (sp->pick)
            return data_csv_load_pick(p1, data->label_column, data->header, data->num_classes,
                                      spec_shape_size(input), sp->pick, out, err, errlen);
        return data_csv_load_range(p1, data->label_column, data->header, data->num_classes,
                                   spec_shape_size(input), sp->hi < 0 ? 0 : sp->lo, sp->hi,
                                   out, err, errlen);
    default:
        return io_errf(err, errlen, "%s: format %s has no named datasets", field,
                       spec_data_format_name(data->format));
    }
}

static int load_named(const spec_data *data, const char *field, const char *name,
                      const spec_shape *input, const dataset_roots *roots, dataset *out,
                      char *err, size_t errlen)
{
    data_span all = {.hi = -1};
    return span_named(data, field, name, input, roots, &all, out, err, errlen);
}

static void shape_str(const spec_shape *s, char *buf, size_t len)
{
    if (s->rank == 3)
        snprintf(buf, len, "[%d, %d, %d]", s->dim[0], s->dim[1], s->dim[2]);
    else
        snprintf(buf, len, "[%d]", s->dim[0]);
}

/* Samples must have model.input's feature count; the layout of a rank-3
 * shape must agree too (a flat CSV row may stand for any shape). */
static int fit_shape(dataset *ds, const char *name, const spec_shape *input, char *err,
                     size_t errlen)
{
    long want = spec_shape_size(input);
    bool layout_clash = ds->shape.rank == 3 && input->rank == 3 &&
                        memcmp(ds->shape.dim, input->dim, sizeof input->dim) != 0;
    if (ds->features != want || layout_clash) {
        char a[48], b[48], c1[32], c2[32];
        shape_str(&ds->shape, a, sizeof a);
        shape_str(input, b, sizeof b);
        return io_errf(err, errlen, "dataset \"%s\": samples have shape %s (%s features) but "
                       "model.input is %s (%s features)", name, a,
                       data_fmt_count(ds->features, c1), b, data_fmt_count(want, c2));
    }
    ds->shape = *input;
    return 0;
}

/* Keep the first n samples. */
static void keep_first(dataset *ds, long n)
{
    if (n >= ds->n)
        return;
    ds->n = n;
    if (n == 0)
        return;
    float *x = realloc(ds->x, (size_t)n * (size_t)ds->features * sizeof(float));
    if (x)
        ds->x = x;
    int32_t *y = realloc(ds->y, (size_t)n * sizeof(int32_t));
    if (y)
        ds->y = y;
}

static int subset(dataset *ds, const char *field, const char *name, long want, char *err,
                  size_t errlen)
{
    if (want <= 0)
        return 0;
    if (want > ds->n) {
        char c1[32], c2[32];
        return io_errf(err, errlen, "%s: %s requested but \"%s\" has %s samples", field,
                       data_fmt_count(want, c1), name, data_fmt_count(ds->n, c2));
    }
    keep_first(ds, want);
    return 0;
}

/* Move the last `split` fraction of train into val (Keras's
 * validation_split: split at int(n * (1 - split)), before shuffling). */
static int split_validation(dataset *train, dataset *val, double split, char *err,
                            size_t errlen)
{
    long keep = (long)((double)train->n * (1.0 - split));
    long n_val = train->n - keep;
    char c1[32];
    if (n_val <= 0 || keep <= 0)
        return io_errf(err, errlen, "data.validation_split: %g of %s train samples leaves an "
                       "empty %s set", split, data_fmt_count(train->n, c1),
                       n_val <= 0 ? "validation" : "training");
    if (data_alloc(val, n_val, train->features) != 0)
        return io_errf(err, errlen, "data.validation_split: out of memory");
    val->shape = train->shape;
    val->num_classes = train->num_classes;
    memcpy(val->x, train->x + (size_t)keep * train->features,
           (size_t)n_val * train->features * sizeof(float));
    memcpy(val->y, train->y + keep, (size_t)n_val * sizeof(int32_t));
    keep_first(train, keep);
    return 0;
}

static void scale_by(dataset *ds, float divisor)
{
    size_t total = (size_t)ds->n * (size_t)ds->features;
    for (size_t i = 0; i < total; i++)
        ds->x[i] /= divisor;
}

/* Keep the scaling of the train set as x' = (x - shift) * factor per
 * feature (dataset.h): the model's users need it for new inputs. */
static int record_scaling(dataset *train, const double *shift, const float *factor,
                          float divisor, char *err, size_t errlen)
{
    size_t f = (size_t)train->features;
    train->shift = malloc(f * sizeof *train->shift);
    train->factor = malloc(f * sizeof *train->factor);
    if (!train->shift || !train->factor)
        return io_errf(err, errlen, "data.scaling: out of memory");
    for (size_t j = 0; j < f; j++) {
        train->shift[j] = shift ? (float)shift[j] : 0.0f;
        train->factor[j] = factor ? factor[j] : 1.0f / divisor;
    }
    return 0;
}

void dataset_stats_sum(const dataset *d, double *sum)
{
    long f = d->features;
    for (long i = 0; d->x && i < d->n; i++) {
        const float *x = d->x + (size_t)i * f;
        for (long j = 0; j < f; j++)
            sum[j] += x[j];
    }
}

void dataset_stats_m2(const dataset *d, const double *mean, double *m2)
{
    long f = d->features;
    for (long i = 0; d->x && i < d->n; i++) {
        const float *x = d->x + (size_t)i * f;
        for (long j = 0; j < f; j++) {
            double dev = x[j] - mean[j];
            m2[j] += dev * dev;
        }
    }
}

float dataset_stats_max_abs(const dataset *d)
{
    float m = 0;
    size_t total = d->x ? (size_t)d->n * (size_t)d->features : 0;
    for (size_t i = 0; i < total; i++)
        m = fmaxf(m, fabsf(d->x[i]));
    return m;
}

/* Unit scaling: byte data is divided by 255 (not by the largest value
 * present, which would depend on the subset); other data by the largest
 * absolute train value. */
static int scale_unit(dataset *sets[3], bool byte_data, float max_abs, char *err,
                      size_t errlen)
{
    float divisor = 255.0f;
    if (!byte_data)
        divisor = max_abs == 0 ? 1.0f : max_abs;
    for (int s = 0; s < 3; s++)
        if (sets[s]->x)
            scale_by(sets[s], divisor);
    return record_scaling(sets[0], NULL, NULL, divisor, err, errlen);
}

/* Standardise each feature with the train mean and standard deviation;
 * a constant feature is only centred. */
static int scale_standard(dataset *sets[3], const double *mean, const double *m2, double n,
                          char *err, size_t errlen)
{
    long f = sets[0]->features;
    float *inv = malloc((size_t)(f + 1) * sizeof *inv);
    if (!inv)
        return io_errf(err, errlen, "data.scaling: out of memory");
    for (long j = 0; j < f; j++) {
        double sd = sqrt(m2[j] / n);
        inv[j] = sd > 1e-12 ? (float)(1.0 / sd) : 1.0f;
    }
    for (int s = 0; s < 3; s++) {
        dataset *ds = sets[s];
        for (long i = 0; ds->x && i < ds->n; i++) {
            float *x = ds->x + (size_t)i * f;
            for (long j = 0; j < f; j++)
                x[j] = (float)(x[j] - mean[j]) * inv[j];
        }
    }
    int rc = record_scaling(sets[0], mean, inv, 1.0f, err, errlen);
    free(inv);
    return rc;
}

int dataset_apply_scaling(const spec_data *data, const dataset_scaling_stats *st,
                          dataset *train, dataset *val, dataset *test, char *err,
                          size_t errlen)
{
    dataset *sets[3] = {train, val, test};
    if (data->scaling == SCALE_UNIT)
        return scale_unit(sets, data->format != DATA_CSV, st->max_abs, err, errlen);
    if (data->scaling == SCALE_STANDARD)
        return scale_standard(sets, st->mean, st->m2, st->n, err, errlen);
    return 0;
}

/* The scaling statistics of a whole train set in memory. */
static int scale_whole(const spec_data *data, dataset *sets[3], char *err, size_t errlen)
{
    dataset *tr = sets[0];
    dataset_scaling_stats st = {.n = (double)tr->n};
    if (data->scaling == SCALE_UNIT && data->format == DATA_CSV)
        st.max_abs = dataset_stats_max_abs(tr);
    double *mean = NULL, *m2 = NULL;
    if (data->scaling == SCALE_STANDARD) {
        mean = calloc((size_t)tr->features + 1, sizeof *mean);
        m2 = calloc((size_t)tr->features + 1, sizeof *m2);
        if (!mean || !m2) {
            free(mean);
            free(m2);
            return io_errf(err, errlen, "data.scaling: out of memory");
        }
        dataset_stats_sum(tr, mean);
        for (long j = 0; j < tr->features; j++)
            mean[j] /= (double)tr->n;
        dataset_stats_m2(tr, mean, m2);
        st.mean = mean;
        st.m2 = m2;
    }
    int rc = dataset_apply_scaling(data, &st, sets[0], sets[1], sets[2], err, errlen);
    free(mean);
    free(m2);
    return rc;
}

int dataset_scaling_tensors(const dataset *train, tensor_entry out[2])
{
    if (!train->shift || !train->factor)
        return 0;
    const char *names[2] = {"input.shift", "input.factor"};
    float *data[2] = {train->shift, train->factor};
    for (int i = 0; i < 2; i++) {
        memset(&out[i], 0, sizeof out[i]);
        snprintf(out[i].name, sizeof out[i].name, "%s", names[i]);
        out[i].rank = train->shape.rank;
        for (int r = 0; r < train->shape.rank; r++)
            out[i].dims[r] = train->shape.dim[r];
        out[i].data = data[i];
    }
    return 2;
}

static int load_synthetic(const spec_data *data, const spec_shape *input, unsigned long seed,
                          dataset *train, dataset *test, char *err, size_t errlen)
{
    char why[256];
    if (dataset_synthetic(input, data->synthetic_train, data->num_classes, seed, train, why,
                          sizeof why) != 0)
        return io_errf(err, errlen, "data.synthetic_train: %s", why);
    if (data->synthetic_test > 0 &&
        dataset_synthetic(input, data->synthetic_test, data->num_classes,
                          seed ^ SYNTHETIC_TEST_SEED, test, why, sizeof why) != 0)
        return io_errf(err, errlen, "data.synthetic_test: %s", why);
    return 0;
}

static int load_sets(const spec_data *data, const spec_shape *input, const dataset_roots *roots,
                     unsigned long seed, dataset *train, dataset *val, dataset *test,
                     char *err, size_t errlen)
{
    if (data->format == DATA_SYNTHETIC) {
        if (load_synthetic(data, input, seed, train, test, err, errlen) != 0)
            return -1;
    } else {
        if (!data->train)
            return io_errf(err, errlen, "data.train: no training set named");
        if (load_named(data, "data.train", data->train, input, roots, train, err, errlen) != 0 ||
            fit_shape(train, data->train, input, err, errlen) != 0)
            return -1;
        if (data->test &&
            (load_named(data, "data.test", data->test, input, roots, test, err, errlen) != 0 ||
             fit_shape(test, data->test, input, err, errlen) != 0))
            return -1;
        if (data->validation &&
            (load_named(data, "data.validation", data->validation, input, roots, val, err,
                        errlen) != 0 ||
             fit_shape(val, data->validation, input, err, errlen) != 0))
            return -1;
    }
    const char *train_name = data->train ? data->train : "synthetic";
    const char *test_name = data->test ? data->test : "synthetic";
    if (subset(train, "data.train_samples", train_name, data->train_samples, err, errlen) != 0)
        return -1;
    if (test->x && subset(test, "data.test_samples", test_name, data->test_samples, err,
                          errlen) != 0)
        return -1;
    if (!data->validation && data->validation_split > 0 &&
        split_validation(train, val, data->validation_split, err, errlen) != 0)
        return -1;
    if (train->n == 0)
        return io_errf(err, errlen, "data.train: \"%s\" has no samples", train_name);
    return 0;
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
    int rc = load_sets(data, input, roots, seed, train, val, test, err, errlen);
    if (rc == 0) {
        dataset *sets[3] = {train, val, test};
        rc = scale_whole(data, sets, err, errlen);
    }
    if (rc != 0) {
        dataset_free(train);
        dataset_free(val);
        dataset_free(test);
    }
    return rc;
}

/* ---- the sets in parts (distributed runs) ------------------------------ */

static int count_named(const spec_data *data, const char *field, const char *name,
                       const spec_shape *input, const dataset_roots *roots, long *n, char *err,
                       size_t errlen)
{
    data_span sp = {.count = true, .n = n};
    return span_named(data, field, name, input, roots, &sp, NULL, err, errlen);
}

/* want > 0 samples of a set of `have`: as subset() words it. */
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

int dataset_layout_of(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, dataset_layout *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->val_first = -1;
    if (spec_shape_size(input) <= 0)
        return io_errf(err, errlen, "model.input: invalid shape");
    long train = 0;
    if (data->format == DATA_SYNTHETIC) {
        train = data->synthetic_train;
        out->n_test = data->synthetic_test > 0 ? data->synthetic_test : 0;
    } else {
        if (!data->train)
            return io_errf(err, errlen, "data.train: no training set named");
        if (count_named(data, "data.train", data->train, input, roots, &train, err,
                        errlen) != 0)
            return -1;
        if (data->test &&
            count_named(data, "data.test", data->test, input, roots, &out->n_test, err,
                        errlen) != 0)
            return -1;
        if (data->validation &&
            count_named(data, "data.validation", data->validation, input, roots, &out->n_val,
                        err, errlen) != 0)
            return -1;
    }
    const char *train_name = data->train ? data->train : "synthetic";
    const char *test_name = data->test ? data->test : "synthetic";
    if (layout_subset("data.train_samples", train_name, data->train_samples, &train, err,
                      errlen) != 0)
        return -1;
    if (out->n_test > 0 && layout_subset("data.test_samples", test_name, data->test_samples,
                                         &out->n_test, err, errlen) != 0)
        return -1;
    if (!data->validation && data->validation_split > 0) {
        long keep = (long)((double)train * (1.0 - data->validation_split));
        long n_val = train - keep;
        char c1[32];
        if (n_val <= 0 || keep <= 0)
            return io_errf(err, errlen, "data.validation_split: %g of %s train samples leaves "
                           "an empty %s set", data->validation_split,
                           data_fmt_count(train, c1), n_val <= 0 ? "validation" : "training");
        out->n_val = n_val;
        out->val_first = keep;
        train = keep;
    }
    if (train == 0)
        return io_errf(err, errlen, "data.train: \"%s\" has no samples", train_name);
    out->n_train = train;
    return 0;
}

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
        return 0;
    }
    /* The validation split is the train source's records after the train part. */
    bool split = part == DATASET_PART_VAL && lay->val_first >= 0;
    long shift = split ? lay->val_first : 0;
    const char *field = part == DATASET_PART_TEST ? "data.test"
                      : part == DATASET_PART_VAL && !split ? "data.validation"
                                                           : "data.train";
    const char *name = part == DATASET_PART_TEST ? data->test
                     : part == DATASET_PART_VAL && !split ? data->validation
                                                          : data->train;
    if (data->format == DATA_SYNTHETIC) {
        char why[256];
        bool test = part == DATASET_PART_TEST;
        long n = test ? data->synthetic_test : data->synthetic_train;
        unsigned long s = test ? seed ^ SYNTHETIC_TEST_SEED : seed;
        if (data_synthetic_range(input, n, data->num_classes, s, lo + shift, hi + shift, out,
                                 why, sizeof why) != 0)
            return io_errf(err, errlen, "data.synthetic_%s: %s", test ? "test" : "train", why);
        return 0;
    }
    if (!name)
        return io_errf(err, errlen, "%s: no set named", field);
    data_span sp = {.lo = lo + shift, .hi = hi + shift};
    if (span_named(data, field, name, input, roots, &sp, out, err, errlen) != 0)
        return -1;
    if (fit_shape(out, name, input, err, errlen) != 0) {
        dataset_free(out);
        return -1;
    }
    return 0;
}

bool dataset_byte_valued(const spec_data *data)
{
    return data->format != DATA_CSV;
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
    data_span sp = {.pick = &pick};
    if (span_named(data, "data.train", data->train, input, roots, &sp, out, err, errlen) != 0)
        return -1;
    if (fit_shape(out, data->train, input, err, errlen) != 0) {
        dataset_free(out);
        return -1;
    }
    return 0;
}
