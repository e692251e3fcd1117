/* csv.c — numeric CSV as in Distributed Keras's examples: one sample per
 * line, a label column (an integer class) and the features, comma
 * separated, an optional header line. Samples have shape {features}. Any
 * malformed line is reported as FILE:LINE with what was wrong; blank lines
 * are skipped. The file may be gzipped. */
#include "data_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    char why[160];
    snprintf(why, sizeof why, fmt, col, shown);
    return io_errf(c->err, c->errlen, "%s:%ld: %s", c->name, c->line, why);
}

/* Parse field [s, e) as a finite float. */
static int csv_number(const char *s, const char *e, double *out)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (s == e)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end != e || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
        return -1;
    *out = v;
    return 0;
}

static size_t csv_fields(const char *s, const char *e)
{
    size_t n = 1;
    for (const char *p = s; (p = memchr(p, ',', (size_t)(e - p))) != NULL; p++)
        n++;
    return n;
}

/* Parse one line [s, e) into x (features floats) and *label. */
static int csv_line(const csv_ctx *c, const char *s, const char *e, long label_column,
                    int num_classes, float *x, int32_t *label)
{
    long col = 0, f = 0;
    for (const char *p = s;; col++) {
        const char *q = memchr(p, ',', (size_t)(e - p));
        if (!q)
            q = e;
        double v;
        if (csv_number(p, q, &v) != 0) {
            if (col == label_column)
                return csv_fail(c, "label (column %ld) \"%s\" is not a number", p,
                                (size_t)(q - p), col + 1);
            return csv_fail(c, "field %ld \"%s\" is not a number", p, (size_t)(q - p), col + 1);
        }
        if (col == label_column) {
            char shown[32];
            snprintf(shown, sizeof shown, "%g", v);
            if (v != floor(v))
                return csv_fail(c, "label (column %ld) %s is not an integer class", shown,
                                strlen(shown), col + 1);
            if (v < 0 || (num_classes > 0 && v >= num_classes) || v > INT32_MAX) {
                char range[64];
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

int data_csv_load(const char *path, int label_column, bool header, int num_classes,
                  long expected_features, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    csv_ctx c = {io_basename(path), 0, err, errlen};
    if (label_column < 0)
        return io_errf(err, errlen, "%s: label column %d is negative", c.name, label_column);
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
        if (c.line == 1 && header)
            continue;
        const char *t = s;
        while (t < e && (*t == ' ' || *t == '\t'))
            t++;
        if (t == e)
            continue;
        long fields = (long)csv_fields(s, e);
        if (label_column >= fields) {
            io_errf(err, errlen, "%s:%ld: no label column %d (%ld fields)", c.name, c.line,
                    label_column + 1, fields);
            goto fail;
        }
        /* Without an expected count the first row sets it. */
        if (!out->x && expected_features <= 0)
            features = fields - 1;
        if (fields - 1 != features) {
            io_errf(err, errlen, "%s:%ld: %ld features, expected %ld", c.name, c.line,
                    fields - 1, features);
            goto fail;
        }
        if (!out->x && data_alloc(out, lines, features) != 0) {
            io_errf(err, errlen, "%s: out of memory for %ld rows of %ld features", c.name,
                    lines, features);
            goto fail;
        }
        if (csv_line(&c, s, e, label_column, num_classes, out->x + (size_t)n * features,
                     &out->y[n]) != 0)
            goto fail;
        n++;
    }
    if (n == 0) {
        io_errf(err, errlen, "%s: no data rows", c.name);
        goto fail;
    }
    out->n = n;
    out->shape = (spec_shape){.rank = 1, .dim = {(int)features}};
    if (features > INT32_MAX) {
        io_errf(err, errlen, "%s: too many features (%ld)", c.name, features);
        goto fail;
    }
    /* Give back the rows blank lines did not use. */
    if (n < lines && features > 0) {
        float *shrunk = realloc(out->x, (size_t)n * features * sizeof(float));
        if (shrunk)
            out->x = shrunk;
    }
    data_set_classes(out, num_classes);
    rc = 0;
fail:
    data_buf_free(&b);
    if (rc != 0)
        dataset_free(out);
    return rc;
}

int dataset_load_csv(const char *path, int label_column, bool header, int num_classes,
                     dataset *out, char *err, size_t errlen)
{
    return data_csv_load(path, label_column, header, num_classes, 0, out, err, errlen);
}
