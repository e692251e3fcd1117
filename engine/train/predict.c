/* predict.c — punch-train --predict (predict.h): the input .npy read whole
 * and converted to float32 (lib/io's npy), scaled exactly as train_open
 * scaled the training set (x' = (x - shift) * factor, the tensors saved
 * beside the weights), then forward passes of at most batch_size samples;
 * the outputs leave the device once per batch. */
#include "train/predict.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_file.h"
#include "io/npy.h"
#include "io/npzarray.h"
#include "io/tensorfile.h"
#include "train/weights.h"
#include "device/device.h"

#define PREDICT_MAX_INPUT ((size_t)4 << 30)

/* The tensor called name in t, or NULL. */
static const tensor_entry *predict_find(const tensor_entry *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

/* An input array: an .npy in memory, or an npz member read in place. */
typedef struct predict_src {
    npy_header h;
    const unsigned char *data;   /* .npy: the array's bytes */
    const npz_index *ix;         /* npz: the archive and member */
    const npz_array *a;
    const npz_array *len;        /* npz: the member's len_* ([N]), or NULL */
} predict_src;

/* A sample's length as the npz loader reads it when no len_* is given:
 * the step after its last step holding a non-zero value, at least 1. */
static long predict_length(const float *x, long steps, long feat)
{
    long len = steps;
    while (len > 1) {
        const float *step = x + (len - 1) * feat;
        long f = 0;
        while (f < feat && step[f] == 0.0f)
            f++;
        if (f < feat)
            break;
        len--;
    }
    return len;
}

/* The lengths an npz gives its sequences (len_test beside x_test, as the
 * training loader reads them) into d->len: each in [1, T'], cut to the
 * model's `used` steps. 0, or 2 with err set. */
static int predict_given_lengths(const predict_src *src, long n, long used, dataset *d,
                                 char *err, size_t errlen)
{
    if (!src->len)
        return 0;
    const npy_header *h = &src->len->h;
    long given = src->h.dims[1];
    if (h->rank != 1 || h->dims[0] < n) {
        snprintf(err, errlen, "input: the lengths must be [N] with the inputs' %ld rows", n);
        return 2;
    }
    float *len = malloc((size_t)(n > 0 ? n : 1) * sizeof *len);
    char why[300];
    if (!len || npz_array_floats(src->ix, src->len, 0, (uint64_t)n, len, why, sizeof why) != 0) {
        snprintf(err, errlen, "input: lengths: %s", len ? why : "out of memory");
        free(len);
        return 2;
    }
    for (long i = 0; i < n; i++) {
        if (!(len[i] >= 1 && len[i] <= (float)given) || len[i] != (float)(long)len[i]) {
            snprintf(err, errlen, "input: sample %ld: length %g is not a whole number in "
                     "[1, %ld]", i, (double)len[i], given);
            free(len);
            return 2;
        }
        d->len[i] = (int32_t)(len[i] < (float)used ? len[i] : (float)used);
    }
    free(len);
    return 0;
}

/* A sequence input ({T, F}: token ids [N, T'] or floats [N, T', F]) as
 * n x T x F floats in d, each sample zero-padded to the model's T steps
 * (cut when longer, as data.max_length cuts training data); its length is
 * the npz's len_* entry where it has one, else the step after its last
 * non-zero step (0 ids and all-zero float steps are padding), at least 1. Labels are zeros, one a step for a per-step
 * model (per_step). Same returns as predict_dataset. */
static int predict_sequences(const predict_src *src, const spec_shape *in, bool tokens,
                             bool per_step, dataset *d, char *err, size_t errlen)
{
    const npy_header *h = &src->h;
    long steps = in->dim[0], feat = in->dim[1];
    bool ok_rank = tokens ? h->rank == 2 : (h->rank == 3 && h->dims[2] == feat);
    if (!ok_rank || h->dims[1] < 1) {
        snprintf(err, errlen, "input: expected %s; got rank %d",
                 tokens ? "[N, steps] token ids" : "[N, steps, features] with the model's "
                                                   "features per step",
                 h->rank);
        return 2;
    }
    long n = h->dims[0], given = h->dims[1];
    long per = given * feat, used = given < steps ? given : steps;
    memset(d, 0, sizeof *d);
    d->x = calloc((size_t)(n > 0 ? n * steps * feat : 1), sizeof *d->x);
    long label_steps = per_step ? steps : 1;
    d->y = calloc((size_t)(n > 0 ? n * label_steps : 1), sizeof *d->y);
    d->len = calloc((size_t)(n > 0 ? n : 1), sizeof *d->len);
    float *row = malloc((size_t)per * sizeof *row);
    if (!d->x || !d->y || !d->len || !row) {
        free(row);
        dataset_free(d);
        snprintf(err, errlen, "input: out of memory for %ld samples", n);
        return 1;
    }
    char why[300];
    if (predict_given_lengths(src, n, used, d, err, errlen) != 0) {
        free(row);
        dataset_free(d);
        return 2;
    }
    for (long i = 0; i < n; i++) {
        if (src->data) {
            npy_to_floats(h, src->data + (size_t)(i * per) * (size_t)h->itemsize, (size_t)per,
                          row);
        } else if (npz_array_floats(src->ix, src->a, (uint64_t)(i * per), (uint64_t)per, row,
                                    why, sizeof why) != 0) {
            free(row);
            dataset_free(d);
            snprintf(err, errlen, "input: %s", why);
            return 1;
        }
        memcpy(d->x + i * steps * feat, row, (size_t)(used * feat) * sizeof *row);
        if (src->len) /* the steps past a given length are padding: zeros */
            memset(d->x + (i * steps + d->len[i]) * feat, 0,
                   (size_t)((used - d->len[i]) * feat) * sizeof *row);
        else
            d->len[i] = (int32_t)predict_length(d->x + i * steps * feat, used, feat);
    }
    free(row);
    d->n = n;
    d->features = steps * feat;
    d->shape = *in;
    d->label_steps = label_steps;
    return 0;
}

/* src as n x features floats in d, in the model's sample order ([N, H, W,
 * C] transposed for a [C, H, W] input); labels 0. 0, 1 (memory, I/O) or 2
 * (a shape that does not fit model.input). */
static int predict_dataset(const predict_src *src, const job_spec *spec, dataset *d, char *err,
                           size_t errlen)
{
    const spec_shape *in = &spec->input;
    if (in->rank == 2)
        return predict_sequences(src, in, spec->input_tokens > 0, spec->data.per_step_labels,
                                 d, err, errlen);
    const npy_header *h = &src->h;
    long features = spec_shape_size(in);
    long n = h->rank > 0 ? h->dims[0] : 0;
    long per = 1;
    for (int i = 1; i < h->rank; i++)
        per *= h->dims[i];
    bool nhwc = h->rank == 4 && in->rank == 3 && h->dims[3] == in->dim[0] &&
                h->dims[1] == in->dim[1] && h->dims[2] == in->dim[2] &&
                h->dims[1] != in->dim[0];
    if (h->rank < 2 || per != features) {
        snprintf(err, errlen, "input: expected [N, ...] with %ld values per sample "
                 "(model.input); got rank %d, %ld values per sample", features, h->rank, per);
        return 2;
    }
    memset(d, 0, sizeof *d);
    d->x = malloc((size_t)(n * features > 0 ? n * features : 1) * sizeof *d->x);
    d->y = calloc((size_t)(n > 0 ? n : 1), sizeof *d->y);
    float *sample = malloc((size_t)(features > 0 ? features : 1) * sizeof *sample);
    if (!d->x || !d->y || !sample) {
        free(sample);
        dataset_free(d);
        snprintf(err, errlen, "input: out of memory for %ld samples", n);
        return 1;
    }
    char why[300];
    if (src->data) {
        npy_to_floats(h, src->data, (size_t)(n * features), d->x);
    } else if (npz_array_floats(src->ix, src->a, 0, (uint64_t)(n * features), d->x, why,
                                sizeof why) != 0) {
        free(sample);
        dataset_free(d);
        snprintf(err, errlen, "input: %s", why);
        return 1;
    }
    if (nhwc) {
        long c = in->dim[0], hh = in->dim[1], w = in->dim[2];
        for (long i = 0; i < n; i++) {
            float *p = d->x + i * features;
            for (long y = 0; y < hh; y++)
                for (long x = 0; x < w; x++)
                    for (long ch = 0; ch < c; ch++)
                        sample[(ch * hh + y) * w + x] = p[(y * w + x) * c + ch];
            memcpy(p, sample, (size_t)features * sizeof *p);
        }
    }
    free(sample);
    d->n = n;
    d->features = features;
    d->shape = *in;
    return 0;
}

/* An .npy file's array as a dataset. */
static int predict_read_input(const char *path, const job_spec *spec, dataset *d, char *err,
                              size_t errlen)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    if (io_read_file(path, PREDICT_MAX_INPUT, &buf, &len, err, errlen) != 0)
        return 1;
    predict_src src = {.data = NULL};
    char why[300];
    if (npy_parse_header(buf, len, &src.h, why, sizeof why) != 0) {
        free(buf);
        snprintf(err, errlen, "input: %s", why);
        return 2;
    }
    if (len - src.h.data_start != src.h.count * (size_t)src.h.itemsize) {
        free(buf);
        snprintf(err, errlen, "input: %zu data bytes, its shape needs %llu", len - src.h.data_start,
                 (unsigned long long)(src.h.count * (size_t)src.h.itemsize));
        return 2;
    }
    src.data = buf + src.h.data_start;
    int rc = predict_dataset(&src, spec, d, err, errlen);
    free(buf);
    return rc;
}

/* The training set's scaling, from the weights file. */
static int predict_scale(const char *weights, dataset *d, char *err, size_t errlen)
{
    tensor_entry *t = NULL;
    int n = 0;
    if (weights_read(weights, &t, &n, err, errlen) != 0)
        return 1;
    const tensor_entry *shift = predict_find(t, n, "input.shift");
    const tensor_entry *factor = predict_find(t, n, "input.factor");
    if (shift && factor && tensor_entry_size(shift) == d->features &&
        tensor_entry_size(factor) == d->features) {
        for (long i = 0; i < d->n; i++)
            for (long f = 0; f < d->features; f++) {
                float *v = &d->x[i * d->features + f];
                *v = (*v - shift->data[f]) * factor->data[f];
            }
    }
    tensorfile_free(t, n);
    return 0;
}

/* predictions.npy, written plainly: it is read once, right after this
 * process exits, so the fsync of an atomic write (most of a small
 * request's time on a busy disk) buys nothing. [N, outputs], or for a
 * per-step model [N, T, classes] (zeros at each sample's padding steps). */
static int predict_write(const char *dir, const float *out, long n, const model *m, char *err,
                         size_t errlen)
{
    tensor_entry t = {.rank = 2, .dims = {n, m->n_out}};
    if (m->out_steps > 0)
        t = (tensor_entry){.rank = 3, .dims = {n, m->out_steps, m->classes}};
    unsigned char head[NPY_MAX_PREFIX];
    size_t hl = npy_format_header(&t, head);
    size_t count = (size_t)n * (size_t)m->n_out;
    unsigned char *data = malloc(count * 4 + 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/predictions.npy", dir);
    FILE *f = data ? fopen(path, "wb") : NULL;
    if (!f) {
        free(data);
        snprintf(err, errlen, "%s: cannot write: %s", path, data ? strerror(errno) : "no memory");
        return 1;
    }
    io_floats_to_le(data, out, count);
    bool ok = fwrite(head, 1, hl, f) == hl && fwrite(data, 1, count * 4, f) == count * 4;
    ok = fclose(f) == 0 && ok;
    free(data);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* What /predict returns: the model's output (a softmax's probabilities),
 * but for an imported graph that ends in logits (PyTorch's classifiers)
 * what the graph returns, the logits the loss applied its softmax to. */
static const float *predict_source(const job_spec *spec, const model *m)
{
    const spec_layer *last = &spec->layers[spec->n_layers - 1];
    bool logits = last->type != LAYER_SOFTMAX && last->activation != ACT_SOFTMAX;
    if (spec->model_file && logits && m->out_steps == 0)
        return m->layers[m->n_layers - 1].y;
    return m->output;
}

/* Scale d (raw samples), run the model with `weights`, write
 * predictions.npy into opt->out_dir; frees d. */
static int predict_run(const job_spec *spec, const train_options *opt, const char *weights,
                       dataset *d, char *err, size_t errlen)
{
    int rc = predict_scale(weights, d, err, errlen);
    int threads = opt->threads > 0 ? opt->threads
                  : spec->resources.threads_per_worker > 0 ? spec->resources.threads_per_worker
                                                           : 1;
    backend *be =
        rc == 0 ? device_backend_create(spec, threads, opt->local_rank, err, errlen) : NULL;
    int max_batch = spec->training.batch_size > 0 ? spec->training.batch_size : 64;
    model *m = be ? model_create(spec, be, max_batch, err, errlen) : NULL;
    float *out = NULL;
    if (rc == 0 && !m)
        rc = 1;
    if (rc == 0 && weights_load(m, weights, err, errlen) != 0)
        rc = 1;
    if (rc == 0 && !(out = malloc((size_t)(d->n > 0 ? d->n : 1) * (size_t)m->n_out * 4))) {
        snprintf(err, errlen, "predictions: out of memory");
        rc = 1;
    }
    for (long first = 0; rc == 0 && first < d->n; first += max_batch) {
        int batch = (int)(d->n - first < max_batch ? d->n - first : max_batch);
        if (model_load_range(m, d, first, batch, err, errlen) != 0) {
            rc = 1;
            break;
        }
        model_forward(m, batch, false, 0);
        /* The loss computes a softmax output's probabilities. */
        model_loss(m, batch, NULL);
        be->download(be, out + first * m->n_out, predict_source(spec, m),
                     (long)batch * m->n_out);
    }
    if (rc == 0)
        rc = predict_write(opt->out_dir, out, d->n, m, err, errlen);
    free(out);
    model_free(m);
    if (be)
        be->destroy(be);
    dataset_free(d);
    return rc;
}

static int predict_out_dir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return 1;
    }
    return 0;
}

int train_predict(const job_spec *spec, const train_options *opt, const char *input,
                  char *err, size_t errlen)
{
    if (predict_out_dir(opt->out_dir, err, errlen) != 0)
        return 1;
    dataset d;
    int rc = predict_read_input(input, spec, &d, err, errlen);
    if (rc != 0)
        return rc;
    return predict_run(spec, opt, opt->weights, &d, err, errlen);
}

int train_predict_task(const job_spec *spec, const train_options *opt, char *err,
                       size_t errlen)
{
    /* An imported model without init_from predicts as it came. */
    const char *weights = spec->training.init_from_file ? spec->training.init_from_file
                                                        : spec->model_file;
    if (!weights || weights[0] != '@' || weights[1] != '/') {
        snprintf(err, errlen, "training.init_from: the weights to apply must be resolved to "
                 "\"@/path\" (punchcardd does it at submit)");
        return 2;
    }
    if (predict_out_dir(opt->out_dir, err, errlen) != 0)
        return 1;
    /* data.test's inputs, raw: x_test, else x, of the npz it names (labels
     * are not needed). */
    const char *name = spec->data.test;
    char path[4096], p2[4096];
    if (name[0] == '@') {
        snprintf(path, sizeof path, "%s", name + 1);
    } else if (dataset_resolve(DATA_NPZ, name, &opt->roots, path, p2, sizeof path, err,
                               errlen) != 0) {
        return 1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "data.test: %s: %s", path, strerror(errno));
        return 1;
    }
    npz_index ix;
    char why[300];
    if (npz_index_fd(fd, &ix, why, sizeof why) != 0) {
        close(fd);
        snprintf(err, errlen, "data.test: %s: %s", io_basename(path), why);
        return 1;
    }
    const npz_array *a = npz_index_find(&ix, "x_test");
    if (!a)
        a = npz_index_find(&ix, "x");
    int rc = 1;
    dataset d;
    if (!a) {
        snprintf(err, errlen, "data.test: %s has no x_test or x array", io_basename(path));
    } else {
        /* x_test's lengths are len_test, x's len, as training reads them. */
        const npz_array *len = npz_index_find(&ix, a == npz_index_find(&ix, "x") ? "len"
                                                                                : "len_test");
        predict_src src = {.h = a->h, .ix = &ix, .a = a, .len = len};
        if (spec->data.test_samples > 0 && src.h.dims[0] > spec->data.test_samples)
            src.h.dims[0] = spec->data.test_samples;
        rc = predict_dataset(&src, spec, &d, err, errlen);
    }
    npz_index_free(&ix);
    close(fd);
    if (rc != 0)
        return rc;
    return predict_run(spec, opt, weights + 1, &d, err, errlen);
}
