/* weights.h — the weights files every trainer writes and evaluate-only
 * reads (schema/rundir.md): STEM.safetensors and STEM.npz holding the
 * model's tensors (model_tensors) and the input scaling of the training
 * set, so that the file alone is enough to run the model on new data.
 * The single trainer and every distributed trainer write them through
 * weights_write; only the safetensors metadata differs between them. */
#ifndef PUNCH_TRAIN_WEIGHTS_H
#define PUNCH_TRAIN_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>

#include "data/dataset.h"
#include "io/tensorfile.h"
#include "model/model.h"

/* model_tensors (model.h) followed by the input scaling of `train`
 * (input.shift, input.factor; see dataset.h) when it has one. `params`
 * and `state` are host copies (model_get_params / model_get_state) that
 * the entries point into. Returns the count, or -1 (out of memory; *out
 * NULL); *out is heap (free()). */
int weights_tensors(const model *m, float *params, float *state, const dataset *train,
                    tensor_entry **out);

/* The safetensors header's metadata: n pairs of key and value. */
typedef struct weights_meta {
    const char *const *keys;
    const char *const *values;
    int n;
} weights_meta;

/* Write stem.safetensors (with `meta`) and, when `npz`, stem.npz from the
 * host copies `params` and `state` (stem: a path without extension). Each
 * file is written atomically. 0, or -1 with a message. */
int weights_write(const char *stem, const model *m, const float *params, const float *state,
                  const dataset *train, const weights_meta *meta, bool npz, char *err,
                  size_t errlen);

/* Read a weights file's tensors: npz or safetensors (tensorfile_read), or
 * the initializers of an ONNX model (".onnx", lib/onnx's importer) under
 * the engine's names. *out is freed with tensorfile_free. */
int weights_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen);

/* Load a weights file (.npz by its extension, else safetensors) into `m`:
 * every tensor of the model must be there with its exact shape (extra
 * entries such as the input scaling are ignored). 0, or -1 with
 * "PATH: reason". */
int weights_load(model *m, const char *path, char *err, size_t errlen);

#endif
