/* onnx_layers.h — one spec layer as ONNX nodes: its weights (looked up by
 * the weight files' keys, "INDEX.TYPE.PARAM") become initializers, its
 * output a value named in values[index]. A layer type or option the
 * exporter cannot express is refused with a message naming the layer. */
#ifndef PUNCH_ONNX_LAYERS_H
#define PUNCH_ONNX_LAYERS_H

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

/* Helpers shared by onnx_layers.c and onnx_seq.c. */
const char *onnx_emit_in(const onnx_emit *e, const spec_layer *s, int k);
const tensor_entry *onnx_emit_tensor(const onnx_emit *e, int i, const char *param, long count,
                                     char *err, size_t errlen);
const char *onnx_emit_unary(onnx_emit *e, const char *op, const char *x);
const char *onnx_emit_binary(onnx_emit *e, const char *op, const char *a, const char *b);
const char *onnx_emit_scalar(onnx_emit *e, const char *stem, float v);
const char *onnx_emit_int64s(onnx_emit *e, const int64_t *v, int n);

/* The sequence layers (onnx_seq.c): embedding, lstm, gru, bidirectional,
 * conv1d, global 1-d pools, layer_norm, positional_embedding, and dense
 * per step. 1 when layer i is not one of them, else 0 / -1 (err). */
int onnx_emit_seq_layer(onnx_emit *e, int i, char *err, size_t errlen);

/* The input's lengths and mask (e->in_len, e->in_mask) from its padding,
 * as /predict reads them: a sample ends after its last step holding a
 * non-zero value (a non-zero id), and has at least one step. x is the raw
 * input (int64 ids [N, T] or float [N, T, F]). */
void onnx_emit_seq_input(onnx_emit *e, const char *x, bool tokens, int steps);

/* The padding mask [N, T, 1] of lengths len (float [N]). */
const char *onnx_emit_mask(onnx_emit *e, const char *len, int steps);

/* Emit layer i (every layer before it already emitted). 0, or -1 with a
 * message in err. */
int onnx_emit_layer(onnx_emit *e, int i, char *err, size_t errlen);

/* The activation `act` applied to value x of shape s. */
const char *onnx_emit_activation(onnx_emit *e, spec_activation act, const char *x,
                                 const spec_shape *s);

#endif
