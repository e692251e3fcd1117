/* onnx_emit.h — the state of one export (the graph, the spec, the
 * weights, each layer's output value) and the building blocks every layer
 * emitter uses (onnx_emit.c). */
#ifndef PUNCH_ONNX_EMIT_H
#define PUNCH_ONNX_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/onnx_graph.h"
#include "io/tensorfile.h"
#include "jobspec/spec.h"

typedef struct onnx_emit {
    onnx_graph *g;
    const job_spec *spec;
    const tensor_entry *tensors; /* the weights file's tensors */
    int n_tensors;
    const char *input;           /* the scaled model input's value name */
    const char **values;         /* per layer: its output's value name */
    /* Sequence models ({T, F} samples, onnx_seq.c): each sample's real
     * length as float [N] and the padding mask float [N, T, 1] (1 at a
     * real step), for the input and per layer; NULL for other models. */
    const char *in_len, *in_mask;
    const char **lens, **masks;
} onnx_emit;

/* Building blocks shared by onnx_layers.c and onnx_seq.c. */
const char *onnx_emit_in(const onnx_emit *e, const spec_layer *s, int k);
const tensor_entry *onnx_emit_tensor(const onnx_emit *e, int i, const char *param, long count,
                                     char *err, size_t errlen);
const char *onnx_emit_unary(onnx_emit *e, const char *op, const char *x);
const char *onnx_emit_binary(onnx_emit *e, const char *op, const char *a, const char *b);
const char *onnx_emit_scalar(onnx_emit *e, const char *stem, float v);
const char *onnx_emit_int64s(onnx_emit *e, const int64_t *v, int n);

/* Softmax over a sample's flattened features, as the engine computes it,
 * reshaped back to the sample's shape s. */
const char *onnx_emit_softmax(onnx_emit *e, const char *x, const spec_shape *s);

/* The activation `act` applied to value x of shape s. */
const char *onnx_emit_activation(onnx_emit *e, spec_activation act, const char *x,
                                 const spec_shape *s);

#endif
