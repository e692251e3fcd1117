/* fuzz_onnx.c — lib/onnx's importer (a protobuf ModelProto mapped onto the
 * engine's layers) on any bytes, under small limits. What it accepts must
 * be whole: a model object with a non-empty layers array, a positive
 * output count, and weights of consistent sizes. */
#include <stdlib.h>

#include "fuzz.h"
#include "onnx/onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    onnx_limits lim;
    onnx_limits_default(&lim);
    lim.max_file_bytes = 1 << 20;
    lim.max_nodes = 256;
    lim.max_initializer_bytes = 1 << 20;
    lim.max_dim = 4096;
    onnx_model m;
    char err[1024];
    if (onnx_import_buffer(data, size, &lim, true, &m, err, sizeof err) != 0)
        return 0;
    const json_t *layers = json_object_get(m.model, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0 || m.outputs < 1)
        abort();
    fuzz_check_tensors(m.tensors, m.n_tensors);
    onnx_model_clear(&m);
    return 0;
}
