/* warmstart.c — training.init_from, or an imported model's own weights
 * (warmstart.h): the weights file read
 * with lib/io, compared tensor by tensor with the model's own list
 * (model_tensors) so a mismatch names the tensor and both shapes, then
 * loaded with model_load_tensors. */
#include "train/warmstart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "io/tensorfile.h"
#include "jobspec/spec_tensors.h"
#include "cpu/cpu.h"
#include "onnx/onnx_import.h"
#include "train/weights.h"

int warmstart_load(model *m, const job_spec *spec, char *err, size_t errlen)
{
    const char *ref = spec->training.init_from_file;
    const char *what = "training.init_from";
    if (!ref && spec->model_file) {
        /* An imported model starts from the file's own weights. */
        ref = spec->model_file;
        what = "model.imported";
    }
    if (!ref)
        return 0;
    if (ref[0] != '@' || ref[1] != '/') {
        snprintf(err, errlen, "%s: \"%s\" is resolved by punchcardd at submit; "
                 "run by hand, give \"@/path/to/the/file\"", what, ref);
        return -1;
    }
    const char *path = ref + 1;
    tensor_entry *file = NULL, *mine = NULL;
    int n_file = 0, rc = -1;
    char why[600];
    if (onnx_path_is_model(path)) {
        if (weights_read(path, &file, &n_file, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: %s", what, why);
            return -1;
        }
    } else if (spec_tensors_read_file(path, &file, &n_file, why, sizeof why) != 0) {
        snprintf(err, errlen, "training.init_from: %s", why);
        return -1;
    }
    float *hp = calloc((size_t)m->n_params + 1, sizeof *hp);
    float *hs = calloc((size_t)m->n_state + 1, sizeof *hs);
    int count = hp && hs ? model_tensors(m, hp, hs, &mine) : -1;
    if (count < 0) {
        snprintf(err, errlen, "%s: out of memory", what);
        goto out;
    }
    if (spec_tensors_compare(mine, count, file, n_file, what, strrchr(path, '/') + 1, err,
                             errlen) != 0)
        goto out;
    if (model_load_tensors(m, file, n_file, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", what, why);
        goto out;
    }
    rc = 0;
out:
    free(mine);
    free(hp);
    free(hs);
    tensorfile_free(file, n_file);
    return rc;
}

int warmstart_check(const job_spec *spec, char *err, size_t errlen)
{
    if (!spec->training.init_from_file && !spec->model_file)
        return 0;
    backend *be = backend_cpu_create(1, err, errlen);
    if (!be)
        return -1;
    model *m = model_create(spec, be, 1, err, errlen);
    int rc = m ? warmstart_load(m, spec, err, errlen) : -1;
    model_free(m);
    be->destroy(be);
    return rc;
}
