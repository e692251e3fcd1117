/* onnx_ops.h — the operator mappers: each maps the importer's current
 * node onto the engine's layers (onnx_import_internal.h's state). Called
 * by the graph walk (onnx_import.c); they call only the state's helpers
 * and each other, in that direction. Not installed. */
#ifndef PUNCH_ONNX_OPS_H
#define PUNCH_ONNX_OPS_H

#include "onnx/onnx_import_internal.h"

/* onnx_ops.c: map the current node. */
int imp_op(imp *im);
/* onnx_ops_norm.c: LayerNormalization, Gelu, the Erf GELU (from its Div). */
int imp_op_layer_norm(imp *im);
int imp_op_gelu(imp *im);
int imp_op_div(imp *im);
/* onnx_ops_seq.c: embeddings, LSTM/GRU and the nodes around them. */
int imp_op_gather(imp *im);
int imp_op_transpose(imp *im);
int imp_op_squeeze(imp *im);
int imp_op_shape(imp *im);
int imp_op_unsqueeze(imp *im);
int imp_op_constant_of_shape(imp *im);
int imp_op_rnn(imp *im, bool lstm);
/* Concat of shapes or of a bidirectional Y_h's directions; 1 when the
 * inputs are neither (a plain Concat). */
int imp_op_seq_concat(imp *im);
/* Stacked and sequence-returning layers: the slice of an initial state,
 * a bidirectional Y's reshape, a per-step MatMul, a mean over time; the
 * reshape and MatMul return 1 when their input is not a sequence's. */
int imp_op_slice(imp *im);
int imp_op_seq_reshape(imp *im);
int imp_op_seq_matmul(imp *im);
int imp_op_reduce_mean(imp *im);

#endif
