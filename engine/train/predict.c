/* predict.c — punch-train --predict (predict.h): the input .npy read whole
 * and converted to float32 (lib/io's npy), scaled exactly as train_open
 * scaled the training set (x' = (x - shift) * factor, the tensors saved
 * beside the weights), then forward passes of at most batch_size samples;
 * the outputs leave the device once per batch. */
#include "train/predict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io_file.h"
#include "io/npy.h"
#include "io/tensorfile.h"
#include "train/weights.h"

#define PREDICT_MAX_INPUT ((size_t)4 << 30)

/* The tensor called name in t, or NULL. */
static const tensor_entry *predict_find(const tensor_entry *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

/* The input as n x features floats, in the model's sample order. */
static int predict_read_input(const char *path, const spec_shape *in, dataset *d, char *err,
                              size_t errlen)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    if (io_read_file(path, PREDICT_MAX_INPUT, &buf, &len, err, errlen) != 0)
        return 1;
    npy_header h;
    char why[300];
    if (npy_parse_header(buf, len, &h, why, sizeof why) != 0) {
        free(buf);
        snprintf(err, errlen, "input: %s", why);
        return 2;
    }
    long features = spec_shape_size(in);
    long n = h.rank > 0 ? h.dims[0] : 0;
    long per = 1;
    for (int i = 1; i < h.rank; i++)
        per *= h.dims[i];
    bool nhwc = h.rank == 4 && in->rank == 3 && h.dims[3] == in->dim[0] &&
                h.dims[1] == in->dim[1] && h.dims[2] == in->dim[2] && h.dims[1] != in->dim[0];
    if (h.rank < 2 || per != features || len - h.data_start != h.count * (size_t)h.itemsize) {
        free(buf);
        snprintf(err, errlen, "input: expected [N, ...] with %ld values per sample (model.input) "
                 "and whole data; got rank %d, %ld values per sample, %zu data bytes", features,
                 h.rank, per, len - h.data_start);
        return 2;
    }
    memset(d, 0, sizeof *d);
    d->x = malloc((size_t)(n * features > 0 ? n * features : 1) * sizeof *d->x);
    d->y = calloc((size_t)(n > 0 ? n : 1), sizeof *d->y);
    float *sample = malloc((size_t)(features > 0 ? features : 1) * sizeof *sample);
    if (!d->x || !d->y || !sample) {
        free(buf);
        free(sample);
        dataset_free(d);
        snprintf(err, errlen, "input: out of memory for %ld samples", n);
        return 1;
    }
    npy_to_floats(&h, buf + h.data_start, (size_t)(n * features), d->x);
    free(buf);
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

/* The training set's scaling, from the weights file. */
static int predict_scale(const char *weights, dataset *d, char *err, size_t errlen)
{
    tensor_entry *t = NULL;
    int n = 0;
    size_t len = strlen(weights);
    bool npz = len >= 4 && strcmp(weights + len - 4, ".npz") == 0;
    if ((npz ? npz_read(weights, &t, &n, err, errlen)
             : safetensors_read(weights, &t, &n, err, errlen)) != 0)
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
 * request's time on a busy disk) buys nothing. */
static int predict_write(const char *dir, const float *out, long n, int n_out, char *err,
                         size_t errlen)
{
    tensor_entry t = {.rank = 2, .dims = {n, n_out}};
    unsigned char head[NPY_MAX_PREFIX];
    size_t hl = npy_format_header(&t, head);
    size_t count = (size_t)n * (size_t)n_out;
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

int train_predict(const job_spec *spec, const train_options *opt, const char *input,
                  char *err, size_t errlen)
{
    if (mkdir(opt->out_dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", opt->out_dir, strerror(errno));
        return 1;
    }
    dataset d;
    int rc = predict_read_input(input, &spec->input, &d, err, errlen);
    if (rc != 0)
        return rc;
    rc = predict_scale(opt->weights, &d, err, errlen);
    int threads = opt->threads > 0 ? opt->threads
                  : spec->resources.threads_per_worker > 0 ? spec->resources.threads_per_worker
                                                           : 1;
    backend *be = rc == 0 ? backend_create(spec, threads, opt->local_rank, err, errlen) : NULL;
    int max_batch = spec->training.batch_size > 0 ? spec->training.batch_size : 64;
    model *m = be ? model_create(spec, be, max_batch, err, errlen) : NULL;
    float *out = NULL;
    if (rc == 0 && !m)
        rc = 1;
    if (rc == 0 && weights_load(m, opt->weights, err, errlen) != 0)
        rc = 1;
    if (rc == 0 && !(out = malloc((size_t)(d.n > 0 ? d.n : 1) * (size_t)m->n_out * 4))) {
        snprintf(err, errlen, "predictions: out of memory");
        rc = 1;
    }
    for (long first = 0; rc == 0 && first < d.n; first += max_batch) {
        int batch = (int)(d.n - first < max_batch ? d.n - first : max_batch);
        if (model_load_range(m, &d, first, batch, err, errlen) != 0) {
            rc = 1;
            break;
        }
        model_forward(m, batch, false, 0);
        /* The loss computes a softmax output's probabilities. */
        model_loss(m, batch, NULL);
        be->download(be, out + first * m->n_out, m->output, (long)batch * m->n_out);
    }
    if (rc == 0)
        rc = predict_write(opt->out_dir, out, d.n, m->n_out, err, errlen);
    free(out);
    model_free(m);
    if (be)
        be->destroy(be);
    dataset_free(&d);
    return rc;
}
