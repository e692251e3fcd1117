/* ctf.c — CNTK Text Format (data.format "ctf"): one line per step,
 *     SEQID |x 560:1 |y 1 0 0 0 0
 * the lines of a sequence consecutive and sharing SEQID (a line without
 * one is a sequence by itself, as in CNTK). The features stream
 * (data.features, default "x") is sparse with one idx:1 entry a line, the
 * token id, under model.input {"tokens": V}, or dense F values a line
 * under {"sequence": [F]}; sparse multi-hot input is refused. The label
 * stream (data.labels, default "y") is one-hot dense or one sparse idx:1
 * entry (soft or multi-hot labels are refused): on a sequence's first
 * line only for a label per sequence, on every line under
 * data.per_step_labels. Other streams and "|#" comments are skipped.
 * Steps past data.max_length are cut. A set is read whole (a record's
 * place in the file is known only by parsing up to it); messages give
 * file:line. */
#include "data_internal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataformat/ctf_format.h"
#include "io/io_file.h"

/* One stream's values on a line: dense floats, or sparse idx:val pairs. */
typedef struct ctf_stream {
    const char *p, *end;  /* the text after "|name" */
    bool present;
} ctf_stream;

/* A parsed line: its sequence id and the two streams the spec names. */
typedef struct ctf_line {
    const char *id;
    size_t id_len;
    ctf_stream x, y;
} ctf_line;

typedef struct ctf_reader {
    const char *name;     /* the file's base name */
    const spec_data *data;
    long steps, feat;     /* T and F */
    int tokens;           /* V under {"tokens": V}, else 0 (dense) */
    float *row;           /* scratch: one dense row, feat or classes floats */
    long row_cap;         /* floats in row: a dense stream longer than this
                             (a token stream's V values) is refused before
                             it is stored */
    long sp_idx;          /* the first sparse entry of the last stream read */
    double sp_val;
} ctf_reader;

/* Split line [p, end) into its id and the features and label streams. */
static int ctf_split(const ctf_reader *r, long lineno, const char *p, const char *end,
                     ctf_line *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    ctffmt_head h;
    if (ctffmt_head_parse(p, end, &h) != 0)
        return io_errf(err, errlen, "%s:%ld: expected |name after the sequence id", r->name,
                       lineno);
    out->id = h.id;
    out->id_len = h.id_len;
    p = h.bar;
    while (p < end) {
        const char *nm = ++p;
        while (p < end && *p != '|' && !ctffmt_space(*p))
            p++;
        size_t nl = (size_t)(p - nm);
        const char *vals = p;
        while (p < end && *p != '|')
            p++;
        ctf_stream *s = nl == strlen(r->data->ctf_features) &&
                                memcmp(nm, r->data->ctf_features, nl) == 0 ? &out->x
                      : nl == strlen(r->data->ctf_labels) &&
                                memcmp(nm, r->data->ctf_labels, nl) == 0 ? &out->y
                                                                        : NULL;
        if (!s)
            continue;  /* another stream, or a "|#" comment */
        if (s->present)
            return io_errf(err, errlen, "%s:%ld: stream |%.*s given twice", r->name, lineno,
                           (int)nl, nm);
        *s = (ctf_stream){vals, p, true};
    }
    return 0;
}

/* A stream's values: dense ones into r->row (want of them), or sparse
 * idx:val entries, *sparse_n of them (-1: dense), the first kept in
 * r->sp_idx and r->sp_val. A sparse stream is never spread over a row of
 * want floats, so a large vocabulary costs nothing per line. */
static int ctf_values(ctf_reader *r, long lineno, const ctf_stream *s, const char *what,
                      long want, long *sparse_n, char *err, size_t errlen)
{
    long n = 0;
    *sparse_n = -1;
    const char *p = s->p;
    for (;;) {
        while (p < s->end && ctffmt_space(*p))
            p++;
        if (p >= s->end)
            break;
        char *e;
        errno = 0;
        double v = strtod(p, &e);
        bool is_sparse = e < s->end && *e == ':';
        if (e == p || errno == ERANGE || !isfinite(v) ||
            (e < s->end && !ctffmt_space(*e) && !is_sparse)) {
            size_t shown = strcspn(p, " \t\r|\n");
            return io_errf(err, errlen, "%s:%ld: |%s: \"%.*s\" is not a number", r->name,
                           lineno, what, (int)(shown < 40 ? shown : 40), p);
        }
        if ((*sparse_n >= 0 && !is_sparse) || (*sparse_n < 0 && n > 0 && is_sparse))
            return io_errf(err, errlen, "%s:%ld: |%s mixes dense and sparse values",
                           r->name, lineno, what);
        if (is_sparse) {
            if (v != floor(v) || v < 0 || v >= (double)want)
                return io_errf(err, errlen, "%s:%ld: |%s: index %g is not in [0, %ld)",
                               r->name, lineno, what, v, want);
            const char *q = e + 1;
            errno = 0;
            double val = strtod(q, &e);
            if (e == q || errno == ERANGE || !isfinite(val) || (e < s->end && !ctffmt_space(*e)))
                return io_errf(err, errlen, "%s:%ld: |%s: bad sparse entry after %g:",
                               r->name, lineno, what, v);
            *sparse_n = *sparse_n < 0 ? 1 : *sparse_n + 1;
            if (*sparse_n == 1) {
                r->sp_idx = (long)v;
                r->sp_val = val;
            }
        } else {
            if (n >= want)
                return io_errf(err, errlen, "%s:%ld: |%s has more than %ld values", r->name,
                               lineno, what, want);
            if (n >= r->row_cap)
                return io_errf(err, errlen, "%s:%ld: |%s: dense values where one sparse "
                                            "ID:1 entry a line (a token id) is expected",
                               r->name, lineno, what);
            if (fabs(v) > FLT_MAX)
                return io_errf(err, errlen, "%s:%ld: |%s: %g is out of float32 range",
                               r->name, lineno, what, v);
            r->row[n] = (float)v;
        }
        n++;
        p = e;
    }
    if (*sparse_n < 0 && n != want)
        return io_errf(err, errlen, "%s:%ld: |%s has %ld values, expected %ld", r->name,
                       lineno, what, n, want);
    return 0;
}

/* The features of one line into step `step` of sample x. */
static int ctf_features(ctf_reader *r, long lineno, const ctf_line *l, float *x, char *err,
                        size_t errlen)
{
    const char *what = r->data->ctf_features;
    if (!l->x.present)
        return io_errf(err, errlen, "%s:%ld: no |%s stream", r->name, lineno, what);
    long sparse;
    long want = r->tokens ? r->tokens : r->feat;
    if (ctf_values(r, lineno, &l->x, what, want, &sparse, err, errlen) != 0)
        return -1;
    if (!r->tokens) {
        if (sparse >= 0)
            return io_errf(err, errlen, "%s:%ld: |%s is sparse but model.input is a dense "
                           "sequence; give {\"tokens\": V} for one-hot tokens", r->name,
                           lineno, what);
        memcpy(x, r->row, (size_t)r->feat * sizeof *x);
        return 0;
    }
    if (sparse != 1)
        return io_errf(err, errlen, "%s:%ld: |%s: model.input {\"tokens\": %d} reads one "
                       "idx:1 entry a line (%s)", r->name, lineno, what, r->tokens,
                       sparse < 0 ? "dense values given"
                                  : "sparse multi-hot features are not supported");
    if (r->sp_val != 1)
        return io_errf(err, errlen, "%s:%ld: |%s: token %ld has value %g, expected 1 "
                       "(weighted sparse features are not supported)", r->name, lineno, what,
                       r->sp_idx, r->sp_val);
    x[0] = (float)r->sp_idx;
    return 0;
}

/* The class of a line's label stream: one-hot dense (the largest entry's
 * index) or one sparse entry. */
static int ctf_label(ctf_reader *r, long lineno, const ctf_line *l, int32_t *y, char *err,
                     size_t errlen)
{
    const char *what = r->data->ctf_labels;
    long sparse, classes = r->data->num_classes;
    if (ctf_values(r, lineno, &l->y, what, classes, &sparse, err, errlen) != 0)
        return -1;
    if (sparse > 1)
        return io_errf(err, errlen, "%s:%ld: |%s has %ld sparse entries; a label is one",
                       r->name, lineno, what, sparse);
    if (sparse == 1) {
        if (r->sp_val != 1)
            return io_errf(err, errlen, "%s:%ld: |%s: class %ld has value %g, expected 1 "
                           "(a label is one class; soft labels are not supported)", r->name,
                           lineno, what, r->sp_idx, r->sp_val);
        *y = (int32_t)r->sp_idx;
        return 0;
    }
    /* Training uses hard classes: a row that is not one-hot (soft or
     * multi-label targets) would be silently cut to its largest entry. */
    long hot = -1;
    for (long i = 0; i < classes; i++) {
        if (r->row[i] == 0)
            continue;
        if (r->row[i] != 1 || hot >= 0)
            return io_errf(err, errlen, "%s:%ld: |%s is not one-hot (entry %ld is %g); a "
                           "label is one class: a single 1 among 0s", r->name, lineno, what,
                           i, (double)r->row[i]);
        hot = i;
    }
    if (hot < 0)
        return io_errf(err, errlen, "%s:%ld: |%s is all zeros; a label is one class: a "
                       "single 1 among 0s", r->name, lineno, what);
    *y = (int32_t)hot;
    return 0;
}

/* Line `lineno`, step `step` of sequence `seq` (which began on line
 * seq_line), into out: its features and its label. */
static int ctf_step(ctf_reader *r, long lineno, long seq_line, const ctf_line *l, dataset *out,
                    long seq, long step, char *err, size_t errlen)
{
    const char *lab = r->data->ctf_labels;
    if (step >= r->steps)
        return 0;  /* past data.max_length: cut */
    if (ctf_features(r, lineno, l, out->x + (seq * r->steps + step) * r->feat, err,
                     errlen) != 0)
        return -1;
    if (out->label_steps > 1) {
        if (!l->y.present)
            return io_errf(err, errlen, "%s:%ld: no |%s label; data.per_step_labels reads one "
                           "on every line", r->name, lineno, lab);
        return ctf_label(r, lineno, l, out->y + seq * r->steps + step, err, errlen);
    }
    if (step == 0 && !l->y.present)
        return io_errf(err, errlen, "%s:%ld: no |%s label on the sequence's first line",
                       r->name, lineno, lab);
    if (step > 0 && l->y.present)
        return io_errf(err, errlen, "%s:%ld: a |%s label past the first line of the sequence "
                       "of line %ld; labels on every line need data.per_step_labels true",
                       r->name, lineno, lab, seq_line);
    return step == 0 ? ctf_label(r, lineno, l, out->y + seq, err, errlen) : 0;
}

/* The next line of [*p, end): its bounds; false at the end. */
static bool ctf_next_line(const char **p, const char *end, const char **ls, const char **le)
{
    if (*p >= end)
        return false;
    *ls = *p;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    *le = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    return true;
}

/* One pass over the text: with out NULL, count the sequences into *n;
 * else fill out's n samples. */
static int ctf_pass(ctf_reader *r, const char *text, size_t len, dataset *out, long *n,
                    char *err, size_t errlen)
{
    const char *p = text, *end = text + len, *ls, *le;
    ctf_line l, prev = {0};
    long lineno = 0, seq = -1, step = 0, seq_line = 0;
    while (ctf_next_line(&p, end, &ls, &le)) {
        lineno++;
        if (ctffmt_blank(ls, le))
            continue;
        if (ctf_split(r, lineno, ls, le, &l, err, errlen) != 0)
            return -1;
        bool fresh = ctffmt_new_seq(l.id, l.id_len, prev.id, prev.id_len, seq < 0);
        prev = l;
        if (fresh) {
            if (out && seq >= 0)
                out->len[seq] = (int32_t)(step < r->steps ? step : r->steps);
            seq++;
            step = 0;
            seq_line = lineno;
        }
        if (out && ctf_step(r, lineno, seq_line, &l, out, seq, step, err, errlen) != 0)
            return -1;
        step++;
    }
    if (out && seq >= 0)
        out->len[seq] = (int32_t)(step < r->steps ? step : r->steps);
    *n = seq + 1;
    return 0;
}

int data_ctf_load_pick(const char *path, const spec_data *data, const spec_shape *input,
                       const data_pick *pick, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    ctf_reader r = {.name = io_basename(path), .data = data, .steps = input->dim[0],
                    .feat = input->dim[1], .tokens = data->input_tokens};
    long row = r.feat > data->num_classes ? r.feat : data->num_classes;
    data_buf b;
    if (data_file_read(path, &b, err, errlen) != 0)
        return -1;
    dataset whole = {0};
    long n = 0;
    int rc = -1;
    r.row = malloc((size_t)row * sizeof *r.row);
    r.row_cap = row;
    if (!r.row) {
        io_errf(err, errlen, "%s: out of memory", r.name);
        goto out;
    }
    if (ctf_pass(&r, (const char *)b.p, b.len, NULL, &n, err, errlen) != 0)
        goto out;
    if (n == 0) {
        io_errf(err, errlen, "%s: no sequences", r.name);
        goto out;
    }
    if (data_seq_alloc(&whole, n, input, data->per_step_labels) != 0) {
        io_errf(err, errlen, "%s: out of memory for %ld sequences", r.name, n);
        goto out;
    }
    for (long i = 0; i < n * whole.label_steps; i++)
        whole.y[i] = -1;
    whole.num_classes = data->num_classes;
    if (ctf_pass(&r, (const char *)b.p, b.len, &whole, &n, err, errlen) != 0)
        goto out;
    rc = data_seq_keep_pick(&whole, pick, r.name, out, err, errlen);
out:
    free(r.row);
    data_buf_free(&b);
    dataset_free(&whole);
    return rc;
}
