/* onnx_import_internal.h — the importer's state (onnx_import_state.c),
 * shared by onnx_import.c (the file, the graph walk) and the operator
 * mappers (onnx_ops.h). Not installed. */
#ifndef PUNCH_ONNX_IMPORT_INTERNAL_H
#define PUNCH_ONNX_IMPORT_INTERNAL_H

#include "onnx/onnx_import.h"
#include "onnx.pb-c.h"

/* A value of the graph: the model input (layer -1), a layer's output, or
 * a constant (an initializer or a Constant node). Shapes are per sample
 * (no batch dimension): rank 1 {features} or rank 3 {C, H, W}. */
/* What a value holds beyond a plain tensor: the sequence models' values
 * (onnx_ops_seq.c) are tracked by kind, so a pattern PyTorch writes (the
 * time-major transpose before an LSTM, Y_h[-1], out[:, -1]) maps onto a
 * layer and any other use of them is refused. */
typedef enum imp_kind {
    IMP_PLAIN = 0,  /* per sample {features} or {C, H, W} */
    IMP_TOKENS,     /* the graph's int64 ids [N, T]: dim {T} (0: symbolic) */
    IMP_SEQ,        /* [N, T, F]: dim {T, F} */
    IMP_SEQ_TMAJOR, /* the same time first, [T, N, F] */
    IMP_RNN_Y,      /* an LSTM/GRU's Y [T, dirs, N, U] */
    IMP_RNN_Y_TNU,  /* one direction's Y squeezed, [T, N, U] */
    IMP_RNN_Y_NTU,  /* that batch first, [N, T, U] */
    IMP_RNN_Y_TNDU, /* a bidirectional Y with the directions next to the units, [T, N, 2, U] */
    IMP_RNN_H,      /* Y_h [dirs, N, U] */
    IMP_RNN_H_DIR,  /* one direction `dir` of a bidirectional Y_h, [N, U] */
    IMP_RNN_C,      /* Y_c (no use supported) */
    IMP_SHAPE,      /* ints computed from a tensor's shape */
    IMP_ZEROS,      /* ConstantOfShape 0 of such a shape (an initial state) */
    IMP_STEPS,      /* a layer applied per step to a whole sequence, [N, T, F]: dim {T, F} */
} imp_kind;

typedef struct imp_value {
    const char *name;
    int layer;                     /* -1 input, >= 0 a layer, IMP_CONST, IMP_DERIVED */
    int rank;
    long dim[3];
    const Onnx__TensorProto *init; /* constants */
    imp_kind kind;
    int dirs, dir;                 /* recurrent values: directions, and which one */
    int hbase;                     /* Y_h of stacked layers concatenated: the entries before
                                      this layer's (PyTorch's h_n of num_layers > 1) */
} imp_value;

#define IMP_CONST (-2)
#define IMP_DERIVED (-3) /* IMP_SHAPE, IMP_ZEROS: no layer computes them */
#define SPEC_MAX_INPUTS_IMP 8 /* spec.h's SPEC_MAX_INPUTS: lib/onnx does not include lib/jobspec */

typedef struct imp {
    const Onnx__GraphProto *g;
    const onnx_limits *lim;
    bool want_weights;
    json_t *model;  /* out->model: a token input sets its "input" */
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
/* A new value named `name` (zeroed), or NULL when out of memory. */
imp_value *imp_new_value(imp *im, const char *name);
/* How many nodes (and graph outputs) read the value `name`. */
int imp_consumers(const imp *im, const char *name);
/* What a kind of value is, for messages. */
const char *imp_kind_name(imp_kind kind);
/* The node's input k as a plain tensor the graph computes (not a constant,
 * nor a sequence model's value: onnx_ops_seq.c reads those itself). */
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
/* Add the weight NAME with the given dims for the caller to fill: *data is
 * its buffer, or NULL when the import copies no weights (a spec parse). */
int imp_weight_alloc(imp *im, int layer, const char *type, const char *param, int rank,
                     const long *dims, float **data);
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

#endif
