/* onnx_graph.h — an ONNX graph under construction: nodes, initializers,
 * the graph's input and output, all held in protobuf-c's generated
 * structs (onnx.pb-c.h, from Debian's onnx.proto) and owned by one arena
 * that onnx_graph_free releases. Every adding function may fail only for
 * memory; the first failure sets g->failed and later calls do nothing, so
 * a builder checks once at the end. */
#ifndef PUNCH_ONNX_GRAPH_H
#define PUNCH_ONNX_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

typedef struct onnx_graph {
    Onnx__GraphProto proto;
    size_t cap_node, cap_init;
    void **owned;          /* every allocation, freed by onnx_graph_free */
    size_t n_owned, cap_owned;
    int counter;           /* for fresh value names */
    bool failed;
} onnx_graph;

void onnx_graph_init(onnx_graph *g, const char *name);
void onnx_graph_free(onnx_graph *g);

/* A fresh value name "STEM_N". */
const char *onnx_graph_name(onnx_graph *g, const char *stem);

/* A node op_type(inputs) -> one output named `output` (a fresh name when
 * NULL); a NULL entry of inputs is an omitted optional input. Returns the
 * node (NULL after a failure) for onnx_node_* attributes. */
Onnx__NodeProto *onnx_graph_node(onnx_graph *g, const char *op_type, const char *const *inputs,
                                 int n_inputs, const char *output);
/* The node's single output name ("" after a failure). */
const char *onnx_node_out(const Onnx__NodeProto *n);

void onnx_node_int(onnx_graph *g, Onnx__NodeProto *n, const char *name, int64_t v);
void onnx_node_float(onnx_graph *g, Onnx__NodeProto *n, const char *name, float v);
void onnx_node_ints(onnx_graph *g, Onnx__NodeProto *n, const char *name, const int64_t *v,
                    int count);

void onnx_node_string(onnx_graph *g, Onnx__NodeProto *n, const char *name, const char *v);
/* A further output of n (LSTM's Y_h, ...) under a fresh name; returns it. */
const char *onnx_node_add_output(onnx_graph *g, Onnx__NodeProto *n);

/* An initializer of float data (copied) or int64 data; returns its name. */
const char *onnx_graph_floats(onnx_graph *g, const char *name, const int64_t *dims, int rank,
                              const float *data);
const char *onnx_graph_int64s(onnx_graph *g, const char *name, const int64_t *dims, int rank,
                              const int64_t *data);

/* A graph input or output: float32, first dimension the symbolic "N"
 * (dynamic batch), then dims[0..rank). */
void onnx_graph_input(onnx_graph *g, const char *name, const int64_t *dims, int rank);
void onnx_graph_output(onnx_graph *g, const char *name, const int64_t *dims, int rank);
/* An int64 graph input [N, dims...] (a sequence model's token ids). */
void onnx_graph_input_int64(onnx_graph *g, const char *name, const int64_t *dims, int rank);

#endif
