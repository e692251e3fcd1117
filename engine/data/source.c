/* source.c — one named set of a job spec (data.train, data.validation or
 * data.test) as a source of records: its name resolved under the dataset
 * roots, then its records counted or read in the spec's format. A whole
 * load, a distributed run's layout and each rank's part all read their
 * files through here, so they see the same files and fail with the same
 * messages. */
#include "data_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io_file.h"

/* What to do with a source's records: count them into *count, or read the
 * records of pick (NULL: every record). */
typedef struct source_op {
    long *count;
    const data_pick *pick;
} source_op;

static int source_cifar10(const char *const *paths, int n, int num_classes,
                          const source_op *op, dataset *out, char *err, size_t errlen)
{
    if (op->count)
        return data_cifar10_count(paths, n, op->count, err, errlen);
    if (op->pick)
        return data_cifar10_load_pick(paths, n, num_classes, op->pick, out, err, errlen);
    return data_cifar10_load(paths, n, num_classes, out, err, errlen);
}

/* A CIFAR-10 name resolves to one batch file or to a directory of them. */
static int source_cifar10_path(const char *name, const char *path, const dataset_roots *roots,
                               int num_classes, const source_op *op, dataset *out, char *err,
                               size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        const char *one[1] = {path};
        return source_cifar10(one, 1, num_classes, op, out, err, errlen);
    }
    char **paths;
    int n;
    if (data_cifar10_dir(name, path, roots, &paths, &n, err, errlen) != 0)
        return -1;
    int rc = source_cifar10((const char *const *)paths, n, num_classes, op, out, err, errlen);
    data_cifar10_dir_free(paths, n);
    return rc;
}

/* An uploaded IDX pair as punchcardd resolved it ("@/DIR/STEM"): STEM's
 * images and labels files in DIR, the user's upload directory, found as
 * dataset_resolve finds an admin's pair under a root. */
static int source_upload_idx(const char *field, const char *path, char *p1, char *p2,
                             size_t len, char *err, size_t errlen)
{
    char dir[PATH_MAX], why[1024];
    const char *stem = io_basename(path);
    size_t dl = (size_t)(stem - path);
    if (dl < 2 || dl > sizeof dir)
        return io_errf(err, errlen, "%s: \"@%s\" is not an uploaded IDX pair", field, path);
    memcpy(dir, path, dl - 1);
    dir[dl - 1] = 0;
    const char *const dirs[] = {dir};
    dataset_roots roots = {dirs, 1};
    if (dataset_resolve(DATA_IDX, stem, &roots, p1, p2, len, why, sizeof why) != 0)
        return io_errf(err, errlen, "%s: uploaded IDX pair %s: %s (deleted after the job was "
                       "submitted?)", field, stem, why);
    return 0;
}

/* An uploaded dataset as punchcardd resolved it ("@/PATH"): the file
 * itself, which must be a regular file; an unresolved "@NAME" only
 * punchcardd can resolve. */
static int source_upload(const spec_data *data, const char *field, const char *name, char *p1,
                         char *p2, size_t len, char *err, size_t errlen)
{
    const char *why = NULL;
    spec_ref_kind k = spec_dataset_ref_kind(name, &why);
    if (k == SPEC_REF_UPLOAD)
        return io_errf(err, errlen, "%s: \"%s\" names an uploaded dataset, which punchcardd "
                       "resolves when the job is submitted; run by hand, give its file as "
                       "\"@/absolute/path\"", field, name);
    if (k != SPEC_REF_UPLOAD_PATH)
        return io_errf(err, errlen, "%s: dataset name \"%.80s\" %s", field, name,
                       why ? why : "is not valid");
    if (data->format == DATA_IDX)
        return source_upload_idx(field, name + 1, p1, p2, len, err, errlen);
    struct stat st;
    if (stat(name + 1, &st) != 0 || !S_ISREG(st.st_mode))
        return io_errf(err, errlen, "%s: uploaded dataset %s is missing (deleted after the "
                       "job was submitted?)", field, io_basename(name + 1));
    if (strlen(name + 1) >= len)
        return io_errf(err, errlen, "%s: path too long", field);
    strcpy(p1, name + 1);
    return 0;
}

/* The file(s) a name stands for: an upload or a name under the roots. */
static int source_paths(const spec_data *data, const char *field, const char *name,
                        const dataset_roots *roots, char *p1, char *p2, size_t len, char *err,
                        size_t errlen)
{
    char why[1024];
    p2[0] = 0;
    if (name && name[0] == '@')
        return source_upload(data, field, name, p1, p2, len, err, errlen);
    if (dataset_resolve(data->format, name, roots, p1, p2, len, why, sizeof why) != 0)
        return io_errf(err, errlen, "%s: %s", field, why);
    return 0;
}

/* A whole load of a format read whole, as a count or the pick's records. */
static int source_whole(dataset *whole, const source_op *op, dataset *out)
{
    if (op->count) {
        *op->count = whole->n;
        dataset_free(whole);
        return 0;
    }
    *out = *whole;
    return 0;
}

/* Text: windows of the file, with the train text's vocabulary. */
static int source_text(const spec_data *data, const char *field, const char *path,
                       const spec_shape *input, const dataset_roots *roots, const source_op *op,
                       dataset *out, char *err, size_t errlen)
{
    char t1[PATH_MAX], t2[PATH_MAX];
    const char *train = path;
    if (data->tokenizer == TOKENIZER_CHAR && strcmp(field, "data.train") != 0) {
        if (!data->train)
            return io_errf(err, errlen, "%s: the char tokenizer's vocabulary comes from "
                           "data.train, which is not given", field);
        if (source_paths(data, "data.train", data->train, roots, t1, t2, sizeof t1, err,
                         errlen) != 0)
            return -1;
        train = t1;
    }
    dataset whole;
    if (data_text_load_pick(path, train, data, input, op->count ? NULL : op->pick, &whole,
                            err, errlen) != 0)
        return -1;
    return source_whole(&whole, op, out);
}

static int source_run(const spec_data *data, const char *field, const char *name,
                      const spec_shape *input, const dataset_roots *roots, const source_op *op,
                      dataset *out, char *err, size_t errlen)
{
    char p1[PATH_MAX], p2[PATH_MAX];
    long features = input ? spec_shape_size(input) : 0;
    if (source_paths(data, field, name, roots, p1, p2, sizeof p1, err, errlen) != 0)
        return -1;
    if ((data->format == DATA_CTF || data->format == DATA_TEXT) && !input)
        return io_errf(err, errlen, "%s: format %s needs model.input", field,
                       spec_data_format_name(data->format));
    switch (data->format) {
    case DATA_IDX:
        if (op->count)
            return data_idx_count(p1, op->count, err, errlen);
        if (op->pick)
            return data_idx_load_pick(p1, p2, data->num_classes, op->pick, out, err, errlen);
        return data_idx_load(p1, p2, data->num_classes, out, err, errlen);
    case DATA_CIFAR10:
        return source_cifar10_path(name, p1, roots, data->num_classes, op, out, err, errlen);
    case DATA_CSV:
        if (op->count)
            return data_csv_count(p1, data->header, op->count, err, errlen);
        return data_csv_load_pick(p1, data->label_column, data->header, data->num_classes,
                                  data->float_targets, features, op->pick, out, err, errlen);
    case DATA_NPZ:
        if (op->count)
            return data_npz_count(p1, field, op->count, err, errlen);
        return data_npz_load_pick(p1, field, data, input, op->pick, out, err,
                                  errlen);
    case DATA_TEXT:
        return source_text(data, field, p1, input, roots, op, out, err, errlen);
    case DATA_CTF: {
        dataset whole;
        if (data_ctf_load_pick(p1, data, input, op->count ? NULL : op->pick, &whole, err,
                               errlen) != 0)
            return -1;
        return source_whole(&whole, op, out);
    }
    default:
        return io_errf(err, errlen, "%s: format %s has no named datasets", field,
                       spec_data_format_name(data->format));
    }
}

static void source_shape_str(const spec_shape *s, char *buf, size_t len)
{
    if (s->rank == 3)
        snprintf(buf, len, "[%d, %d, %d]", s->dim[0], s->dim[1], s->dim[2]);
    else
        snprintf(buf, len, "[%d]", s->dim[0]);
}

/* Samples must have model.input's feature count; the layout of a rank-3
 * shape must agree too (a flat CSV row may stand for any shape). */
static int source_fit(dataset *ds, const char *name, const spec_shape *input, char *err,
                      size_t errlen)
{
    long want = spec_shape_size(input);
    bool layout_clash = ds->shape.rank == 3 && input->rank == 3 &&
                        memcmp(ds->shape.dim, input->dim, sizeof input->dim) != 0;
    if (ds->features != want || layout_clash) {
        char a[48], b[48], c1[32], c2[32];
        source_shape_str(&ds->shape, a, sizeof a);
        source_shape_str(input, b, sizeof b);
        return io_errf(err, errlen, "dataset \"%s\": samples have shape %s (%s features) but "
                       "model.input is %s (%s features)", name, a,
                       data_fmt_count(ds->features, c1), b, data_fmt_count(want, c2));
    }
    ds->shape = *input;
    return 0;
}

int data_source_count(const spec_data *data, const char *field, const char *name,
                      const spec_shape *input, const dataset_roots *roots, long *n, char *err,
                      size_t errlen)
{
    source_op op = {.count = n};
    return source_run(data, field, name, input, roots, &op, NULL, err, errlen);
}

int data_source_load(const spec_data *data, const char *field, const char *name,
                     const spec_shape *input, const dataset_roots *roots, const data_pick *pick,
                     dataset *out, char *err, size_t errlen)
{
    source_op op = {.pick = pick};
    if (source_run(data, field, name, input, roots, &op, out, err, errlen) != 0)
        return -1;
    if (source_fit(out, name, input, err, errlen) != 0) {
        dataset_free(out);
        return -1;
    }
    return 0;
}


int dataset_text_vocab(const spec_data *data, const dataset_roots *roots, uint32_t **chars,
                       int *n, char *err, size_t errlen)
{
    char p1[PATH_MAX], p2[PATH_MAX];
    *chars = NULL;
    *n = 0;
    if (data->format != DATA_TEXT || data->tokenizer != TOKENIZER_CHAR)
        return 0;
    if (!data->train)
        return io_errf(err, errlen, "data.train: no training text named");
    if (source_paths(data, "data.train", data->train, roots, p1, p2, sizeof p1, err,
                     errlen) != 0)
        return -1;
    return data_text_vocab(p1, chars, n, err, errlen);
}
