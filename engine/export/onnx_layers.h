/* onnx_layers.h — one spec layer as ONNX nodes: its weights (looked up by
 * the weight files' keys, "INDEX.TYPE.PARAM") become initializers, its
 * output a value named in values[index]. A layer type or option the
 * exporter cannot express is refused with a message naming the layer. */
#ifndef PUNCH_ONNX_LAYERS_H
#define PUNCH_ONNX_LAYERS_H

#include <stddef.h>

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
} onnx_emit;

/* Emit layer i (every layer before it already emitted). 0, or -1 with a
 * message in err. */
int onnx_emit_layer(onnx_emit *e, int i, char *err, size_t errlen);

/* The activation `act` applied to value x of shape s. */
const char *onnx_emit_activation(onnx_emit *e, spec_activation act, const char *x,
                                 const spec_shape *s);

#endif
