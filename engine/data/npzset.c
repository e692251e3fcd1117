/* npzset.c — the npz format (data.format "npz"): what numpy.savez writes
 * and Keras's mnist.npz holds. A set reads one x/y pair of the archive:
 * data.train x_train/y_train, data.test x_test/y_test, data.validation
 * x_val/y_val, each falling back to x/y. x is [N, ...sample] of uint8 or
 * float (converted to float32; [N, H, W, C] is transposed to the engine's
 * [C, H, W] when model.input says so); y is [N] class ids (integers, or
 * floats holding whole numbers) or [N, K] one-hot (the largest entry's
 * index is the class) or, when training.loss is mse and y is float,
 * [N] or [N, K] regression targets kept as they are (dataset.t; K is
 * data.num_classes, the model's outputs). The archive is indexed in place (lib/io's
 * npzarray), so only the records a load keeps are converted; DEFLATED
 * members are inflated through from their start. */
#include "data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io_file.h"
#include "io/npzarray.h"

/* The pair a set reads, by the spec field that names it. */
static void npzset_names(const char *field, const char **x, const char **y)
{
    if (strcmp(field, "data.test") == 0) {
        *x = "x_test";
        *y = "y_test";
    } else if (strcmp(field, "data.validation") == 0) {
        *x = "x_val";
        *y = "y_val";
    } else {
        *x = "x_train";
        *y = "y_train";
    }
}

typedef struct npzset {
    int fd;
    npz_index ix;
    const npz_array *x, *y;
    const char *name;   /* the file's base name, for messages */
    const char *field;  /* the spec field naming it, for messages */
} npzset;

static void npzset_close(npzset *s)
{
    npz_index_free(&s->ix);
    if (s->fd >= 0)
        close(s->fd);
}

static int npzset_open(npzset *s, const char *path, const char *field, char *err,
                       size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->name = io_basename(path);
    s->field = field;
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0)
        return io_errf(err, errlen, "%s: cannot open: %s", s->name, strerror(errno));
    char why[300];
    if (npz_index_fd(s->fd, &s->ix, why, sizeof why) != 0) {
        npzset_close(s);
        return io_errf(err, errlen, "%s: %s", s->name, why);
    }
    const char *xn, *yn;
    npzset_names(field, &xn, &yn);
    s->x = npz_index_find(&s->ix, xn);
    s->y = npz_index_find(&s->ix, yn);
    if (!s->x && !s->y) {
        s->x = npz_index_find(&s->ix, "x");
        s->y = npz_index_find(&s->ix, "y");
        if (!s->x || !s->y) {
            npzset_close(s);
            return io_errf(err, errlen, "%s: no %s and %s arrays for %s (nor x and y)",
                           io_basename(path), xn, yn, field);
        }
        xn = "x";
        yn = "y";
    }
    if (!s->x || !s->y) {
        npzset_close(s);
        return io_errf(err, errlen, "%s: %s without %s", io_basename(path),
                       s->x ? xn : yn, s->x ? yn : xn);
    }
    if (s->x->h.rank < 2 || s->x->h.rank > 4 || s->y->h.rank < 1 || s->y->h.rank > 2 ||
        s->x->h.dims[0] != s->y->h.dims[0]) {
        /* The message reads the index: before it is freed. */
        io_errf(err, errlen, "%s: %s is [N, ...sample] and %s [N] or [N, classes] with the "
                "same N; got ranks %d and %d, %ld and %ld rows", io_basename(path), xn, yn,
                s->x->h.rank, s->y->h.rank, s->x->h.dims[0], s->y->h.dims[0]);
        npzset_close(s);
        return -1;
    }
    return 0;
}

int data_npz_count(const char *path, const char *field, long *n, char *err, size_t errlen)
{
    npzset s;
    if (npzset_open(&s, path, field, err, errlen) != 0)
        return -1;
    *n = s.x->h.dims[0];
    npzset_close(&s);
    return 0;
}

/* The sample shape of x in the engine's order; *nhwc when its [H, W, C]
 * must be transposed to model.input's [C, H, W]. */
static spec_shape npzset_shape(const npz_array *x, const spec_shape *input, bool *nhwc)
{
    const long *d = x->h.dims;
    *nhwc = false;
    if (x->h.rank == 2)
        return (spec_shape){1, {(int)d[1]}};
    if (x->h.rank == 3)
        return (spec_shape){3, {1, (int)d[1], (int)d[2]}};
    if (input && input->rank == 3 && input->dim[0] == d[3] && input->dim[1] == d[1] &&
        input->dim[2] == d[2] && !(d[1] == d[3] && d[2] == d[1])) {
        *nhwc = true;
        return *input;
    }
    return (spec_shape){3, {(int)d[1], (int)d[2], (int)d[3]}};
}

/* Does y hold regression targets? Float y under training.loss mse. */
static bool npzset_targets(const npzset *s, const spec_data *data)
{
    return data->float_targets && s->y->h.kind == 'f';
}

/* Labels of records [first, first + count) into y, or with targets (see
 * npzset_targets) their count * num_classes floats into t. */
static int npzset_labels(const npzset *s, long first, long count, const spec_data *data,
                         int32_t *y, float *t, char *err, size_t errlen)
{
    const npz_array *a = s->y;
    int num_classes = data->num_classes;
    long k = a->h.rank == 2 ? a->h.dims[1] : 1;
    if (t && k != num_classes)
        return io_errf(err, errlen, "%s: %s: %s holds %ld regression targets per record but "
                       "data.num_classes (the model's outputs) is %d", s->field, s->name,
                       a->name, k, num_classes);
    if (k > 1 && num_classes > 0 && k != num_classes)
        return io_errf(err, errlen, "%s: %s is one-hot over %ld classes but data.num_classes "
                       "is %d", s->name, a->name, k, num_classes);
    float *v = t ? t : malloc((size_t)(count * k > 0 ? count * k : 1) * sizeof *v);
    if (!v)
        return io_errf(err, errlen, "%s: out of memory", s->name);
    char why[300];
    if (npz_array_floats(&s->ix, a, (uint64_t)(first * k), (uint64_t)(count * k), v, why,
                         sizeof why) != 0) {
        if (!t)
            free(v);
        return io_errf(err, errlen, "%s: %s", s->name, why);
    }
    if (t) {
        for (long i = 0; i < count * k; i++) {
            if (!isfinite(v[i]))
                return io_errf(err, errlen, "%s: %s: record %ld: target %g is not finite",
                               s->name, a->name, first + i / k + 1, (double)v[i]);
        }
        memset(y, 0, (size_t)count * sizeof *y);
        return 0;
    }
    int rc = 0;
    for (long i = 0; i < count && rc == 0; i++) {
        const float *row = v + i * k;
        long best = 0;
        for (long j = 1; j < k; j++)
            if (row[j] > row[best])
                best = j;
        float label = k > 1 ? (float)best : row[0];
        if (a->h.kind == 'f' && label != floorf(label))
            rc = io_errf(err, errlen, "%s: %s: %s: record %ld: %g is not a class id; float "
                         "targets (regression) need training.loss \"mse\"", s->field, s->name,
                         a->name, first + i + 1, (double)label);
        else if (label != floorf(label) || label < 0 ||
                 (num_classes > 0 && label >= num_classes) || label > 1e9f)
            rc = io_errf(err, errlen, "%s: %s: record %ld: label %g is not a class in [0, %d)",
                         s->name, a->name, first + i + 1, (double)label,
                         num_classes > 0 ? num_classes : 1000000000);
        else
            y[i] = (int32_t)label;
    }
    free(v);
    return rc;
}

/* Reorder n samples of [H, W, C] to [C, H, W] in place, via scratch. */
static void npzset_to_chw(float *x, long n, const spec_shape *s, float *scratch)
{
    long c = s->dim[0], h = s->dim[1], w = s->dim[2], f = c * h * w;
    for (long i = 0; i < n; i++) {
        float *p = x + i * f;
        for (long yy = 0; yy < h; yy++)
            for (long xx = 0; xx < w; xx++)
                for (long ch = 0; ch < c; ch++)
                    scratch[(ch * h + yy) * w + xx] = p[(yy * w + xx) * c + ch];
        memcpy(p, scratch, (size_t)f * sizeof *p);
    }
}

int data_npz_load_pick(const char *path, const char *field, const spec_data *data,
                       const spec_shape *input, const data_pick *pick, dataset *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *base = io_basename(path);
    if (pick && pick->bytes)
        return io_errf(err, errlen, "%s: npz values are not bytes", base);
    if (pick && data_pick_check(pick, base, err, errlen) != 0)
        return -1;
    npzset s;
    if (npzset_open(&s, path, field, err, errlen) != 0)
        return -1;
    long n = s.x->h.dims[0];
    bool nhwc;
    spec_shape shape = npzset_shape(s.x, input, &nhwc);
    long features = spec_shape_size(&shape);
    long count = pick ? data_pick_count(pick) : n;
    long end = pick ? data_pick_end(pick) : n;
    long first = !pick ? 0 : pick->rows ? (count ? pick->rows[0] : 0) : pick->lo;
    int rc = -1;
    float *span = NULL, *scratch = NULL, *span_t = NULL;
    int32_t *span_y = NULL;
    bool targets = npzset_targets(&s, data);
    long k = targets ? data->num_classes : 0;
    if (end > n) {
        io_errf(err, errlen, "%s: %ld records, the load needs %ld", base, n, end);
        goto out;
    }
    if (data_alloc(out, count, features) != 0) {
        io_errf(err, errlen, "%s: out of memory for %ld samples", base, count);
        goto out;
    }
    /* Read the records from the first kept to the last, then keep the
     * pick's; a range pick reads straight into x. */
    long len = end > first ? end - first : 0;
    bool direct = !pick || !pick->rows;
    span = direct ? out->x : malloc((size_t)(len * features > 0 ? len * features : 1) * 4);
    span_y = direct ? out->y : malloc((size_t)(len > 0 ? len : 1) * sizeof *span_y);
    scratch = malloc((size_t)(features > 0 ? features : 1) * sizeof *scratch);
    if (targets) {
        out->t = malloc((size_t)(count > 0 ? count * k : 1) * sizeof *out->t);
        span_t = direct ? out->t : malloc((size_t)(len > 0 ? len * k : 1) * sizeof *span_t);
    }
    if (!span || !span_y || !scratch || (targets && (!out->t || !span_t))) {
        io_errf(err, errlen, "%s: out of memory", base);
        goto out;
    }
    char why[300];
    if (npz_array_floats(&s.ix, s.x, (uint64_t)first * (uint64_t)features,
                         (uint64_t)len * (uint64_t)features, span, why, sizeof why) != 0) {
        io_errf(err, errlen, "%s: %s", base, why);
        goto out;
    }
    if (npzset_labels(&s, first, len, data, span_y, span_t, err, errlen) != 0)
        goto out;
    if (!direct) {
        for (long i = 0; i < count; i++) {
            long r = pick->rows[i] - first;
            memcpy(out->x + i * features, span + r * features, (size_t)features * sizeof(float));
            out->y[i] = span_y[r];
            if (targets)
                memcpy(out->t + i * k, span_t + r * k, (size_t)k * sizeof *span_t);
        }
    }
    if (nhwc)
        npzset_to_chw(out->x, count, &shape, scratch);
    out->shape = shape;
    out->features = features;
    data_set_classes(out, data->num_classes);
    rc = 0;
out:
    if (span && span != out->x)
        free(span);
    if (span_y && span_y != out->y)
        free(span_y);
    if (span_t && span_t != out->t)
        free(span_t);
    free(scratch);
    if (rc != 0)
        dataset_free(out);
    npzset_close(&s);
    return rc;
}
