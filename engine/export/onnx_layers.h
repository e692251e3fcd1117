/* onnx_layers.h — one spec layer as ONNX nodes: its weights (looked up by
 * the weight files' keys, "INDEX.TYPE.PARAM") become initializers, its
 * output a value named in values[index]. A layer type or option the
 * exporter cannot express is refused with a message naming the layer. */
#ifndef PUNCH_ONNX_LAYERS_H
#define PUNCH_ONNX_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/onnx_emit.h"
#include "jobspec/spec.h"

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

#endif
