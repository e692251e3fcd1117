/* onnx_write.c — the ModelProto around a graph, packed by protobuf-c and
 * written atomically (lib/io), so a reader never sees half a model. */
#include "export/onnx_write.h"

#include <stdio.h>
#include <stdlib.h>

#include "export/onnx_export.h"
#include "io/tensorfile.h"

int onnx_write_model(const onnx_graph *g, const char *doc, const char *path, char *err,
                     size_t errlen)
{
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    opset.domain = "";
    opset.has_version = true;
    opset.version = ONNX_EXPORT_OPSET;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
    model.has_ir_version = true;
    model.ir_version = ONNX_EXPORT_IR_VERSION;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    model.producer_name = "punchcard";
    model.producer_version = PUNCH_ONNX_PRODUCER_VERSION;
    model.doc_string = (char *)doc;
    /* The packer only reads the graph. */
    model.graph = (Onnx__GraphProto *)&g->proto;
    size_t len = onnx__model_proto__get_packed_size(&model);
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory for %zu bytes", path, len);
        return -1;
    }
    size_t packed = onnx__model_proto__pack(&model, buf);
    int rc = packed == len ? atomic_write_file(path, buf, len, err, errlen) : -1;
    if (packed != len)
        snprintf(err, errlen, "%s: packed %zu bytes of %zu", path, packed, len);
    free(buf);
    return rc == 0 ? 0 : -1;
}
