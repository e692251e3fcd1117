/* onnx_write.h — a graph wrapped in its ModelProto (IR version, opset,
 * producer) and written to a file with protobuf-c's packer. */
#ifndef PUNCH_ONNX_WRITE_H
#define PUNCH_ONNX_WRITE_H

#include <stddef.h>

#include "export/onnx_graph.h"

/* Pack g as a model and write it to path atomically. 0, or -1 with a
 * message. */
int onnx_write_model(const onnx_graph *g, const char *doc, const char *path, char *err,
                     size_t errlen);

#endif
