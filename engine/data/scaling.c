/* scaling.c — data.scaling: statistics of the train part (per-feature sums
 * and squared deviations, the largest absolute value), applied to all
 * three sets, and recorded on the train set so whoever uses the trained
 * model can prepare new inputs the same way. The statistics come from the
 * train part only, so no information from validation or test data leaks
 * into training; a distributed run combines them over its ranks' parts
 * and then scales with the same arithmetic as a whole load. */
#include "data_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

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

static void scaling_divide(dataset *ds, float divisor)
{
    size_t total = (size_t)ds->n * (size_t)ds->features;
    for (size_t i = 0; i < total; i++)
        ds->x[i] /= divisor;
}

/* Keep the scaling of the train set as x' = (x - shift) * factor per
 * feature (dataset.h): shift NULL means 0, factor NULL means 1 / divisor. */
static int scaling_record(dataset *train, const double *shift, const float *factor,
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

/* Unit scaling: byte data is divided by 255 (not by the largest value
 * present, which would depend on the subset); other data by the largest
 * absolute train value. */
static int scaling_unit(dataset *sets[3], bool byte_data, float max_abs, char *err,
                        size_t errlen)
{
    float divisor = 255.0f;
    if (!byte_data)
        divisor = max_abs == 0 ? 1.0f : max_abs;
    for (int s = 0; s < 3; s++)
        if (sets[s]->x)
            scaling_divide(sets[s], divisor);
    return scaling_record(sets[0], NULL, NULL, divisor, err, errlen);
}

/* Standardise each feature with the train mean and standard deviation;
 * a constant feature is only centred. */
static int scaling_standard(dataset *sets[3], const double *mean, const double *m2, double n,
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
    int rc = scaling_record(sets[0], mean, inv, 1.0f, err, errlen);
    free(inv);
    return rc;
}

int dataset_apply_scaling(const spec_data *data, const dataset_scaling_stats *st,
                          dataset *train, dataset *val, dataset *test, char *err,
                          size_t errlen)
{
    dataset *sets[3] = {train, val, test};
    if (data->scaling == SCALE_UNIT)
        return scaling_unit(sets, dataset_byte_valued(data), st->max_abs, err, errlen);
    if (data->scaling == SCALE_STANDARD)
        return scaling_standard(sets, st->mean, st->m2, st->n, err, errlen);
    return 0;
}

int data_scaling_whole(const spec_data *data, dataset *train, dataset *val, dataset *test,
                       char *err, size_t errlen)
{
    dataset_scaling_stats st = {.n = (double)train->n};
    if (data->scaling == SCALE_UNIT && !dataset_byte_valued(data))
        st.max_abs = dataset_stats_max_abs(train);
    double *mean = NULL, *m2 = NULL;
    if (data->scaling == SCALE_STANDARD) {
        mean = calloc((size_t)train->features + 1, sizeof *mean);
        m2 = calloc((size_t)train->features + 1, sizeof *m2);
        if (!mean || !m2) {
            free(mean);
            free(m2);
            return io_errf(err, errlen, "data.scaling: out of memory");
        }
        dataset_stats_sum(train, mean);
        for (long j = 0; j < train->features; j++)
            mean[j] /= (double)train->n;
        dataset_stats_m2(train, mean, m2);
        st.mean = mean;
        st.m2 = m2;
    }
    int rc = dataset_apply_scaling(data, &st, train, val, test, err, errlen);
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
