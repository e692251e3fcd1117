/* onnx_import_internal.h — the importer's state, shared by onnx_import.c
 * (the file, the graph walk, the values) and onnx_ops.c (one mapper per
 * operator). Not installed. */
#ifndef PUNCH_ONNX_IMPORT_INTERNAL_H
#define PUNCH_ONNX_IMPORT_INTERNAL_H

#include "onnx/onnx_import.h"
#include "onnx.pb-c.h"

/* A value of the graph: the model input (layer -1), a layer's output, or
 * a constant (an initializer or a Constant node). Shapes are per sample
 * (no batch dimension): rank 1 {features} or rank 3 {C, H, W}. */
typedef struct imp_value {
    const char *name;
    int layer;                     /* -1 input, >= 0 a layer, IMP_CONST */
    int rank;
    long dim[3];
    const Onnx__TensorProto *init; /* constants */
} imp_value;

#define IMP_CONST (-2)
#define SPEC_MAX_INPUTS_IMP 8 /* spec.h's SPEC_MAX_INPUTS: lib/onnx does not include lib/jobspec */

typedef struct imp {
    const Onnx__GraphProto *g;
    const onnx_limits *lim;
    bool want_weights;
    json_t *layers;
    tensor_entry *t;
    int nt, capt;
    imp_value *v;
    int nv, capv;
    int n_layers;
    int last_type_dense_nobias; /* layer index of a bias-less dense an Add may complete, or -1 */
    const Onnx__NodeProto *node;
    /* Nodes already mapped as part of a pattern (the Erf GELU's). */
    const Onnx__NodeProto *skip[4];
    int n_skip;
    char *err;
    size_t errlen;
} imp;

/* Errors about the current node: "node \"NAME\" (OP): MESSAGE". */
int imp_fail(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

imp_value *imp_find(imp *im, const char *name);
/* How many nodes (and graph outputs) read the value `name`. */
int imp_consumers(const imp *im, const char *name);
/* The node's input k as a value the graph computes (not a constant). */
imp_value *imp_input(imp *im, int k);
/* The node's input k as a constant, or NULL with the error set. */
const Onnx__TensorProto *imp_const(imp *im, int k);
/* Bind the node's output 0 to layer `layer` with the given shape. */
int imp_bind(imp *im, int layer, int rank, const long *dim);
/* Bind the value `name` (a later node's output, for a pattern). */
int imp_bind_name(imp *im, const char *name, int layer, int rank, const long *dim);
/* Bind the node's output 0 to an existing value (identity). */
int imp_alias(imp *im, const imp_value *src);
/* Append layer JSON (stolen) fed by `inputs`; returns its index or -1. */
int imp_add_layer(imp *im, json_t *layer, const imp_value *const *inputs, int n);
/* Copy constant c's floats into the weight NAME (index.type.param) with
 * the given dims; transpose2 transposes a rank-2 constant. */
int imp_weight(imp *im, int layer, const char *type, const char *param,
               const Onnx__TensorProto *c, int rank, const long *dims, bool transpose2);
/* A constant's element count, or -1 for a non-float/int64 or external one. */
long imp_const_count(const Onnx__TensorProto *c);
/* Read int64 element i of a constant (INT64 or INT32). */
bool imp_const_i64(const Onnx__TensorProto *c, long i, int64_t *out);
bool imp_const_f32(const Onnx__TensorProto *c, long i, float *out);

/* Attributes. */
const Onnx__AttributeProto *imp_attr(const imp *im, const char *name);
/* Fail on any attribute not in the NULL-terminated list. */
int imp_attrs_known(imp *im, const char *const *known);
int64_t imp_attr_int(const imp *im, const char *name, int64_t dflt);
float imp_attr_float(const imp *im, const char *name, float dflt);
/* Up to max ints; returns the count (0 when absent). */
int imp_attr_ints(const imp *im, const char *name, int64_t *out, int max);

/* onnx_ops.c: map the current node. */
int imp_op(imp *im);
/* onnx_ops_norm.c: LayerNormalization, Gelu, the Erf GELU (from its Div). */
int imp_op_layer_norm(imp *im);
int imp_op_gelu(imp *im);
int imp_op_div(imp *im);

#endif
