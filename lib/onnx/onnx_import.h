/* onnx_import.h — an ONNX model file as a Punchcard model: the graph
 * mapped onto the engine's layers (the "model" object of a job spec:
 * {"input": [...], "layers": [...]}) and its initializers as the initial
 * weights, under the engine's tensor names ("0.conv2d.weight", ...), so
 * a job warm-starts from them (docs/interchange.md).
 *
 * The file is untrusted data: it is read under limits (file size, nodes,
 * initializer bytes, tensor dims; every limit has a default) and decoded
 * by protobuf-c's generated code; any operator, attribute or shape the
 * engine cannot train is refused naming the node and its operator
 * ("node \"/Cumsum\" (CumSum) is not supported"). */
#ifndef PUNCH_ONNX_IMPORT_H
#define PUNCH_ONNX_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "io/tensorfile.h"

typedef struct onnx_limits {
    size_t max_file_bytes;        /* default 512 MiB */
    long max_nodes;               /* default 20000 */
    size_t max_initializer_bytes; /* all initializers together, default 512 MiB */
    long max_dim;                 /* any one dimension of a tensor or the input, default 2^24 */
} onnx_limits;

void onnx_limits_default(onnx_limits *lim);

typedef struct onnx_model {
    json_t *model;          /* {"input": [...], "layers": [...]}, owned */
    tensor_entry *tensors;  /* the initial weights, engine names; data owned */
    int n_tensors;
    long outputs;           /* values per sample of the graph's output */
    bool logits;            /* the output is not a Softmax */
} onnx_model;

/* Import path (lim NULL = the defaults). 0, or -1 with a message for a
 * user ("node \"conv1\" (Conv): auto_pad SAME_LOWER is not supported").
 * want_weights false skips copying the initializers (a spec parse). */
int onnx_import_file(const char *path, const onnx_limits *lim, bool want_weights,
                     onnx_model *out, char *err, size_t errlen);
int onnx_import_buffer(const uint8_t *buf, size_t len, const onnx_limits *lim,
                       bool want_weights, onnx_model *out, char *err, size_t errlen);
void onnx_model_clear(onnx_model *m);

/* Whether path names an ONNX model by its extension (".onnx"). */
bool onnx_path_is_model(const char *path);

#endif
