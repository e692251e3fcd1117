/* weights.c — the weights files of weights.h: one writer for every
 * trainer, and the reader evaluate-only uses. */
#include "train/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"

int weights_tensors(const model *m, float *params, float *state, const dataset *train,
                    tensor_entry **out)
{
    int n = model_tensors(m, params, state, out);
    if (n < 0)
        return -1;
    tensor_entry scaling[2];
    int extra = dataset_scaling_tensors(train, scaling);
    if (extra == 0)
        return n;
    tensor_entry *t = realloc(*out, (size_t)(n + extra) * sizeof *t);
    if (!t) {
        free(*out);
        *out = NULL;
        return -1;
    }
    memcpy(t + n, scaling, (size_t)extra * sizeof *t);
    *out = t;
    return n + extra;
}

int weights_write(const char *stem, const model *m, const float *params, const float *state,
                  const dataset *train, const weights_meta *meta, bool npz, char *err,
                  size_t errlen)
{
    tensor_entry *t = NULL;
    /* The entries only point at the host copies; nothing writes through
     * them. */
    int n = weights_tensors(m, (float *)params, (float *)state, train, &t);
    if (n < 0) {
        snprintf(err, errlen, "weights: out of memory");
        return -1;
    }
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s.safetensors", stem);
    int rc = safetensors_write(path, t, n, meta->keys, meta->values, meta->n, err, errlen);
    if (rc == 0 && npz) {
        snprintf(path, sizeof path, "%s.npz", stem);
        rc = npz_write(path, t, n, err, errlen);
    }
    free(t);
    return rc;
}

int weights_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen)
{
    if (!onnx_path_is_model(path))
        return tensorfile_read(path, out, n, err, errlen);
    onnx_model om;
    if (onnx_import_file(path, NULL, true, &om, err, errlen) != 0)
        return -1;
    *out = om.tensors;
    *n = om.n_tensors;
    om.tensors = NULL;
    om.n_tensors = 0;
    onnx_model_clear(&om);
    return 0;
}

int weights_load(model *m, const char *path, char *err, size_t errlen)
{
    tensor_entry *t = NULL;
    int n = 0;
    int rc = weights_read(path, &t, &n, err, errlen);
    if (rc != 0)
        return -1;
    char why[512];
    rc = model_load_tensors(m, t, n, why, sizeof why);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", path, why);
    tensorfile_free(t, n);
    return rc;
}
