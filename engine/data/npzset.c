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
#include "dataformat/npz_format.h"

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
    const npz_array *len;  /* sequences' lengths, len_* or len; NULL: none */
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
    npzfmt_pair pair;
    if (npzfmt_pair_find(&s->ix, xn, yn, &pair, why, sizeof why) == 0 && !pair.x) {
        if (npzfmt_pair_find(&s->ix, "x", "y", &pair, why, sizeof why) == 0 && !pair.x)
            snprintf(why, sizeof why, "no %s and %s arrays for %s (nor x and y)", xn, yn,
                     field);
        xn = "x";
    }
    if (!pair.x) {
        npzset_close(s);
        return io_errf(err, errlen, "%s: %s", s->name, why);
    }
    if (pair.x->h.rank > 4) {
        /* The message reads the index: before it is freed. */
        io_errf(err, errlen, "%s: %s has shape of rank %d; expected [N, features], [N, H, W] "
                "or [N, H, W, C]", s->name, xn, pair.x->h.rank);
        npzset_close(s);
        return -1;
    }
    s->x = pair.x;
    s->y = pair.y;
    s->len = pair.len;
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

/* ---- sequences (model.input {T, F}) ------------------------------------
 * x is [N, T'] (one feature a step: token ids under {"tokens": V}) or
 * [N, T', F]; a sample's length is len_*'s entry or, without len_*, one
 * past its last step holding a non-zero value (0 is padding; an
 * all-padding sample has length 1, the least a sequence may have). T' >
 * T (data.max_length) is cut to T, T' < T padded with zeros. y is [N]
 * (or one-hot [N, K]) per sequence, or, under data.per_step_labels,
 * [N, T'] per step, -1 from the length on. */

/* What a sequence load reads: the kept records' span and its sizes. */
typedef struct npzseq {
    const npzset *s;
    const spec_data *data;
    long steps, feat;     /* T and F */
    long steps_in;        /* the file's T' */
    int tokens;           /* V, or 0 for float sequences */
    long first, span;     /* records [first, first + span) are read */
    float *x, *len, *y;   /* the span's raw values; len, y NULL when absent */
} npzseq;

static int npzseq_check(const npzseq *q, char *err, size_t errlen)
{
    const npz_array *x = q->s->x, *y = q->s->y;
    long f = x->h.rank == 2 ? 1 : x->h.dims[2];
    if (x->h.rank > 3 || f != q->feat)
        return io_errf(err, errlen, "%s: %s is [N, steps] or [N, steps, features] with %ld "
                       "feature%s a step (model.input); got rank %d%s", q->s->name, x->name,
                       q->feat, q->feat == 1 ? "" : "s", x->h.rank,
                       x->h.rank == 3 ? " with another feature count" : "");
    if (q->steps_in < 1)
        return io_errf(err, errlen, "%s: %s has no steps (shape [N, 0...])", q->s->name,
                       x->name);
    if (q->data->float_targets && y->h.kind == 'f')
        return io_errf(err, errlen, "%s: %s: regression targets for sequences are not "
                       "supported; give class ids", q->s->name, y->name);
    if (q->data->per_step_labels && (y->h.rank != 2 || y->h.dims[1] != q->steps_in))
        return io_errf(err, errlen, "%s: per-step labels: %s must be [N, %ld] like %s's steps",
                       q->s->name, y->name, q->steps_in, x->name);
    return 0;
}

/* Read the span's x, lengths and (per-step) labels as floats. */
static int npzseq_read(npzseq *q, char *err, size_t errlen)
{
    const npzset *s = q->s;
    size_t nx = (size_t)q->span * (size_t)q->steps_in * (size_t)q->feat;
    size_t ny = (size_t)q->span * (size_t)q->steps_in;
    q->x = malloc((nx ? nx : 1) * sizeof *q->x);
    q->len = s->len ? malloc((size_t)(q->span ? q->span : 1) * sizeof *q->len) : NULL;
    q->y = q->data->per_step_labels ? malloc((ny ? ny : 1) * sizeof *q->y) : NULL;
    if (!q->x || (s->len && !q->len) || (q->data->per_step_labels && !q->y))
        return io_errf(err, errlen, "%s: out of memory", s->name);
    char why[300];
    uint64_t row = (uint64_t)q->steps_in * (uint64_t)q->feat;
    if (npz_array_floats(&s->ix, s->x, (uint64_t)q->first * row, nx, q->x, why,
                         sizeof why) != 0 ||
        (q->len && npz_array_floats(&s->ix, s->len, (uint64_t)q->first, (uint64_t)q->span,
                                    q->len, why, sizeof why) != 0) ||
        (q->y && npz_array_floats(&s->ix, s->y, (uint64_t)q->first * (uint64_t)q->steps_in,
                                  ny, q->y, why, sizeof why) != 0))
        return io_errf(err, errlen, "%s: %s", s->name, why);
    return 0;
}

/* The length of span record r (1-based record number rec for messages). */
static int npzseq_length(const npzseq *q, long r, long rec, long *out, char *err,
                         size_t errlen)
{
    if (q->len) {
        float l = q->len[r];
        if (l != floorf(l) || l < 1 || l > (float)q->steps_in)
            return io_errf(err, errlen, "%s: %s: record %ld: length %g is not in [1, %ld]",
                           q->s->name, q->s->len->name, rec, (double)l, q->steps_in);
        *out = (long)l;
    } else {
        const float *p = q->x + r * q->steps_in * q->feat;
        long last = 0;
        for (long i = 0; i < q->steps_in * q->feat; i++)
            if (p[i] != 0)
                last = i / q->feat;
        *out = last + 1;
    }
    if (*out > q->steps)
        *out = q->steps;
    return 0;
}

/* Span record r into sample j of out: its first len steps, checked. */
static int npzseq_place(const npzseq *q, long r, dataset *out, long j, char *err,
                        size_t errlen)
{
    long rec = q->first + r + 1, len = 0;
    if (npzseq_length(q, r, rec, &len, err, errlen) != 0)
        return -1;
    const float *p = q->x + r * q->steps_in * q->feat;
    for (long i = 0; q->tokens && i < len; i++)
        if (p[i] != floorf(p[i]) || p[i] < 0 || p[i] >= (float)q->tokens)
            return io_errf(err, errlen, "%s: %s: record %ld, step %ld: token id %g is not in "
                           "[0, %d) (model.input tokens)", q->s->name, q->s->x->name, rec,
                           i + 1, (double)p[i], q->tokens);
    memcpy(out->x + j * out->features, p, (size_t)(len * q->feat) * sizeof *p);
    out->len[j] = (int32_t)len;
    if (!q->y)
        return 0;
    int32_t *y = out->y + j * q->steps;
    const float *v = q->y + r * q->steps_in;
    int classes = q->data->num_classes;
    for (long i = 0; i < q->steps; i++) {
        if (i >= len) {
            y[i] = -1;
            continue;
        }
        if (v[i] != floorf(v[i]) || v[i] < 0 || v[i] >= (float)classes)
            return io_errf(err, errlen, "%s: %s: record %ld, step %ld: label %g is not a "
                           "class in [0, %d)", q->s->name, q->s->y->name, rec, i + 1,
                           (double)v[i], classes);
        y[i] = (int32_t)v[i];
    }
    return 0;
}

/* Per-sequence labels of the span, kept for the pick's samples. */
static int npzseq_labels(const npzseq *q, const data_pick *pick, dataset *out, char *err,
                         size_t errlen)
{
    int32_t *span_y = malloc((size_t)(q->span ? q->span : 1) * sizeof *span_y);
    if (!span_y)
        return io_errf(err, errlen, "%s: out of memory", q->s->name);
    int rc = npzset_labels(q->s, q->first, q->span, q->data, span_y, NULL, err, errlen);
    for (long j = 0; rc == 0 && j < out->n; j++)
        out->y[j] = span_y[pick && pick->rows ? pick->rows[j] - q->first : j];
    free(span_y);
    return rc;
}

/* data_npz_load_pick on a sequence input, from the opened set s (closed
 * here). */
static int data_npz_load_seq(npzset *s, const char *base, const spec_data *data,
                             const spec_shape *input, const data_pick *pick, dataset *out,
                             char *err, size_t errlen)
{
    long n = s->x->h.dims[0];
    long count = pick ? data_pick_count(pick) : n;
    long end = pick ? data_pick_end(pick) : n;
    npzseq q = {.s = s, .data = data, .steps = input->dim[0], .feat = input->dim[1],
                .steps_in = s->x->h.dims[1], .tokens = data->input_tokens};
    q.first = !pick ? 0 : pick->rows ? (count ? pick->rows[0] : 0) : pick->lo;
    q.span = end > q.first ? end - q.first : 0;
    int rc = -1;
    if (npzseq_check(&q, err, errlen) != 0)
        goto out;
    if (end > n) {
        io_errf(err, errlen, "%s: %ld records, the load needs %ld", base, n, end);
        goto out;
    }
    if (npzseq_read(&q, err, errlen) != 0)
        goto out;
    if (data_seq_alloc(out, count, input, data->per_step_labels) != 0) {
        io_errf(err, errlen, "%s: out of memory for %ld samples", base, count);
        goto out;
    }
    for (long j = 0; j < count; j++)
        if (npzseq_place(&q, pick && pick->rows ? pick->rows[j] - q.first : j, out, j, err,
                         errlen) != 0)
            goto out;
    if (!data->per_step_labels && npzseq_labels(&q, pick, out, err, errlen) != 0)
        goto out;
    out->num_classes = data->num_classes;
    rc = 0;
out:
    free(q.x);
    free(q.len);
    free(q.y);
    if (rc != 0)
        dataset_free(out);
    npzset_close(s);
    return rc;
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
    if (input && input->rank == 2)
        return data_npz_load_seq(&s, base, data, input, pick, out, err, errlen);
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
