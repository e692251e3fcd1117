/* csv.c — numeric CSV as in Distributed Keras's examples: one sample per
 * line, a label column (an integer class, or under training.loss mse a
 * regression target kept as it is) and the features, comma separated, an
 * optional header line (by default recognised as uploads are: a field of
 * the first line is not a number). Samples have shape {features}. Any
 * malformed line is reported as FILE:LINE with what was wrong, columns
 * counted from 0 as data.label_column counts them; blank lines are
 * skipped. The file may be gzipped. */
#include "data_internal.h"

#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataformat/csv_format.h"
#include "io/io_file.h"

typedef struct csv_ctx {
    const char *name;
    long line;       /* 1-based, for messages */
    char *err;
    size_t errlen;
} csv_ctx;

static int csv_fail(const csv_ctx *c, const char *fmt, const char *field, size_t flen, long col)
{
    char shown[48];
    size_t n = flen < sizeof shown - 4 ? flen : sizeof shown - 4;
    memcpy(shown, field, n);
    strcpy(shown + n, flen > n ? "..." : "");
    char why[320];
    snprintf(why, sizeof why, fmt, col, shown);
    return io_errf(c->err, c->errlen, "%s:%ld: %s", c->name, c->line, why);
}

/* Parse one line [s, e) into x (features floats) and *label, or with a
 * target (regression) the label column's value into *target. */
static int csv_line(const csv_ctx *c, const char *s, const char *e, long label_column,
                    int num_classes, float *x, int32_t *label, float *target)
{
    long col = 0, f = 0;
    for (const char *p = s;; col++) {
        const char *q = memchr(p, ',', (size_t)(e - p));
        if (!q)
            q = e;
        double v;
        if (csvfmt_number(p, q, &v) != 0) {
            if (col == label_column && !target)
                return csv_fail(c, "label (column %ld) \"%s\" is not a number: class labels "
                                "are integers 0, 1, ... (map class names to numbers first)",
                                p, (size_t)(q - p), col);
            return csv_fail(c, "column %ld \"%s\" is not a number", p, (size_t)(q - p), col);
        }
        if (col == label_column && target) {
            *target = (float)v;
            *label = 0;
        } else if (col == label_column) {
            char shown[32];
            snprintf(shown, sizeof shown, "%g", v);
            if (v != floor(v))
                return csv_fail(c, "label (column %ld) %s is not an integer class (a "
                                "regression target needs training.loss \"mse\")", shown,
                                strlen(shown), col);
            if (v < 0 || (num_classes > 0 && v >= num_classes) || v > INT32_MAX) {
                char range[128];
                snprintf(range, sizeof range, "label %s out of range [0, %d)", shown,
                         num_classes > 0 ? num_classes : INT32_MAX);
                return io_errf(c->err, c->errlen, "%s:%ld: %s", c->name, c->line, range);
            }
            *label = (int32_t)v;
        } else {
            x[f++] = (float)v;
        }
        if (q == e)
            return 0;
        p = q + 1;
    }
}

int data_csv_load(const char *path, int label_column, int header, int num_classes,
                  long expected_features, dataset *out, char *err, size_t errlen)
{
    return data_csv_load_range(path, label_column, header, num_classes, expected_features, 0,
                               -1, out, err, errlen);
}

/* Every row is parsed and checked; only the picked rows are kept (pick
 * NULL: all of them). */
int data_csv_load_pick(const char *path, int label_column, int header, int num_classes,
                       bool targets, long expected_features, const data_pick *pick,
                       dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    csv_ctx c = {io_basename(path), 0, err, errlen};
    if (label_column < -1)
        return io_errf(err, errlen, "%s: label column %d: counted from 0, or -1 for the last",
                       c.name, label_column);
    if (targets && num_classes != 1)
        return io_errf(err, errlen, "%s: a CSV file has one regression target per row (its "
                       "label column): data.num_classes must be 1, not %d", c.name,
                       num_classes);
    if (pick && pick->bytes)
        return io_errf(err, errlen, "%s: CSV values are not bytes", c.name);
    if (pick && pick->rows && data_pick_check(pick, c.name, err, errlen) != 0)
        return -1;
    if (pick && !pick->rows && (pick->lo < 0 || pick->hi < pick->lo))
        return io_errf(err, errlen, "%s: invalid row range [%ld, %ld)", c.name, pick->lo,
                       pick->hi);
    long cursor = 0;
    data_buf b;
    if (data_file_read(path, &b, err, errlen) != 0)
        return -1;
    if (b.gz_truncated) {
        data_buf_free(&b);
        return io_errf(err, errlen, "%s: corrupt gzip data (stream ends before its trailer)",
                       c.name);
    }
    /* Upper bound on rows, so x is allocated once; and the line of the
     * first NUL byte, which no text line may hold. */
    const char *text = (const char *)b.p, *nul = memchr(text, 0, b.len);
    long lines = 1, nul_line = 1;
    for (size_t i = 0; i < b.len; i++) {
        if (text + i == nul)
            nul_line = lines;
        lines += text[i] == '\n';
    }
    if (nul) {
        data_buf_free(&b);
        return io_errf(err, errlen, "%s:%ld: NUL byte (binary file?)", c.name, nul_line);
    }
    long cap = pick ? data_pick_count(pick) : lines;
    float *row_x = NULL;    /* scratch for rows outside the range */
    int32_t row_y, max_label = -1;
    float row_t;
    bool seen = false, first = true;
    long label_at = label_column;

    const char *p = (const char *)b.p, *end = p + b.len;
    long features = expected_features, n = 0;
    int rc = -1;
    for (; p < end; p++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *s = p;
        c.line++;
        p = e;
        if (e > s && e[-1] == '\r')
            e--;
        if (c.line == 1 && header == SPEC_HEADER_YES)
            continue;
        const char *t = s;
        while (t < e && (*t == ' ' || *t == '\t'))
            t++;
        if (t == e)
            continue;
        bool was_first = first;
        first = false;
        if (was_first && header == SPEC_HEADER_AUTO && !csvfmt_all_numbers(s, e))
            continue;
        long fields = csvfmt_fields(s, e);
        label_at = label_column < 0 ? fields - 1 : label_column;
        if (label_at >= fields) {
            io_errf(err, errlen, "%s:%ld: no column %d for data.label_column (the line has "
                    "columns 0 to %ld)", c.name, c.line, label_column, fields - 1);
            goto fail;
        }
        /* Without an expected count the first row sets it. */
        if (!seen && expected_features <= 0)
            features = fields - 1;
        if (fields - 1 != features) {
            io_errf(err, errlen, "%s:%ld: %ld features, expected %ld", c.name, c.line,
                    fields - 1, features);
            goto fail;
        }
        if (!seen && (data_alloc(out, cap, features) != 0 ||
                      (targets && !(out->t = malloc((size_t)(cap > 0 ? cap : 1) *
                                                     sizeof *out->t))) ||
                      !(row_x = malloc((size_t)(features + 1) * sizeof(float))))) {
            io_errf(err, errlen, "%s: out of memory for %ld rows of %ld features", c.name,
                    cap, features);
            goto fail;
        }
        seen = true;
        long row = pick ? data_pick_row(pick, n, &cursor) : n;
        float *x = row >= 0 ? out->x + (size_t)row * features : row_x;
        int32_t *y = row >= 0 ? &out->y[row] : &row_y;
        float *target = !targets ? NULL : row >= 0 ? &out->t[row] : &row_t;
        if (csv_line(&c, s, e, label_at, num_classes, x, y, target) != 0)
            goto fail;
        max_label = *y > max_label ? *y : max_label;
        n++;
    }
    if (n == 0) {
        io_errf(err, errlen, "%s: no data rows", c.name);
        goto fail;
    }
    if (pick && data_pick_end(pick) > n) {
        char c1[32];
        if (pick->rows)
            io_errf(err, errlen, "%s: row %ld asked of %s", c.name, data_pick_end(pick) - 1,
                    data_fmt_count(n, c1));
        else
            io_errf(err, errlen, "%s: rows [%ld, %ld) asked of %s", c.name, pick->lo,
                    pick->hi, data_fmt_count(n, c1));
        goto fail;
    }
    out->n = pick ? data_pick_count(pick) : n;
    out->shape = (spec_shape){.rank = 1, .dim = {(int)features}};
    if (features > INT32_MAX) {
        io_errf(err, errlen, "%s: too many features (%ld)", c.name, features);
        goto fail;
    }
    /* Give back the rows blank lines did not use. */
    if (out->n < cap && out->n > 0 && features > 0) {
        float *shrunk = realloc(out->x, (size_t)out->n * features * sizeof(float));
        if (shrunk)
            out->x = shrunk;
    }
    out->num_classes = num_classes > 0 ? num_classes : max_label + 1;
    if (targets && out->n < cap && out->n > 0) {
        float *shrunk = realloc(out->t, (size_t)out->n * sizeof *out->t);
        if (shrunk)
            out->t = shrunk;
    }
    rc = 0;
fail:
    free(row_x);
    data_buf_free(&b);
    if (rc != 0)
        dataset_free(out);
    return rc;
}

int data_csv_load_range(const char *path, int label_column, int header, int num_classes,
                        long expected_features, long lo, long hi, dataset *out, char *err,
                        size_t errlen)
{
    data_pick pick = {.lo = lo, .hi = hi};
    return data_csv_load_pick(path, label_column, header, num_classes, false,
                              expected_features, hi < 0 && lo == 0 ? NULL : &pick, out, err,
                              errlen);
}

int data_csv_count(const char *path, int header, long *n, char *err, size_t errlen)
{
    data_buf b;
    *n = 0;
    if (data_file_read(path, &b, err, errlen) != 0)
        return -1;
    const char *p = (const char *)b.p, *end = p + b.len;
    bool first = true;
    for (long line = 1; p < end; p++, line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *s = p;
        p = e;
        if (line == 1 && header == SPEC_HEADER_YES)
            continue;
        if (e > s && e[-1] == '\r')
            e--;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        if (s == e)
            continue;
        bool was_first = first;
        first = false;
        if (was_first && header == SPEC_HEADER_AUTO && !csvfmt_all_numbers(s, e))
            continue;
        (*n)++;
    }
    data_buf_free(&b);
    return 0;
}

int dataset_load_csv(const char *path, int label_column, int header, int num_classes,
                     dataset *out, char *err, size_t errlen)
{
    return data_csv_load(path, label_column, header, num_classes, 0, out, err, errlen);
}
