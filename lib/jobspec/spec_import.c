/* spec_import.c — a model imported from a file: "model": "@/PATH.onnx"
 * (punchcardd resolves a user's "@NAME.onnx" upload to it at submit). The
 * graph is mapped by lib/onnx onto the engine's layers, which are then
 * parsed as if written by hand (spec_model.c parses what this returns, so
 * the dependency runs one way); the file's initializers are the job's
 * initial weights, which the engine reads from model_file
 * (docs/interchange.md). The resolved spec (spec_to_json) keeps the
 * layers and names the file as model.imported. */
#include "jobspec/spec_internal.h"

#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"

bool spec_model_is_import(const json_t *model)
{
    const char *s = json_string_value(model);
    return s && s[0] == '@' && onnx_path_is_model(s);
}

bool spec_model_set_file(const char *ref, const char *path, job_spec *spec, spec_error *err)
{
    if (!ref || ref[0] != '@' || ref[1] != '/' || !onnx_path_is_model(ref))
        return spec_fail(err, path, "expected \"@/path/to/MODEL.onnx\"");
    free(spec->model_file);
    spec->model_file = strdup(ref);
    return spec->model_file ? true : spec_fail(err, path, "out of memory");
}

bool spec_import_model(const json_t *model, json_t **layers, spec_error *err)
{
    const char *ref = json_string_value(model);
    *layers = NULL;
    if (ref[1] != '/')
        return spec_fail(err, "model", "\"%.80s\" is an uploaded model that punchcardd "
                         "resolves at submit; run by hand, give \"@/path/to/MODEL.onnx\"", ref);
    onnx_model om;
    char msg[SPEC_MESSAGE_MAX - 64];
    if (onnx_import_file(ref + 1, NULL, false, &om, msg, sizeof msg) != 0)
        return spec_fail(err, "model", "%s", msg);
    bool ok = json_object_set_new(om.model, "imported", json_string(ref)) == 0;
    if (ok)
        *layers = json_incref(om.model);
    onnx_model_clear(&om);
    return ok ? true : spec_fail(err, "model", "out of memory");
}
