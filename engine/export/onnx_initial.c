/* onnx_initial.c — the export of a model that was never trained: its
 * initial weights (model_init_params from training.seed) with no input
 * scaling, for looking at an architecture in ONNX tools and for checking
 * every preset's export without training it. */
#include "export/onnx_export.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"
#include "cpu/cpu.h"

int onnx_export_initial(const job_spec *spec, const char *path, char *err, size_t errlen)
{
    /* The weights are made on the host: a job asking for GPUs exports on a
     * machine without one too. */
    backend *be = backend_cpu_create(1, err, errlen);
    model *m = be ? model_create(spec, be, 1, err, errlen) : NULL;
    float *params = m ? malloc((size_t)(m->n_params + 1) * sizeof *params) : NULL;
    float *state = m ? malloc((size_t)(m->n_state + 1) * sizeof *state) : NULL;
    tensor_entry *t = NULL;
    int rc = -1;
    if (m && (!params || !state))
        snprintf(err, errlen, "ONNX export: out of memory");
    else if (m && model_init_params(m, spec->training.seed, err, errlen) == 0) {
        model_get_params(m, params);
        model_get_state(m, state);
        int n = model_tensors(m, params, state, &t);
        if (n < 0)
            snprintf(err, errlen, "ONNX export: out of memory");
        else
            rc = onnx_export_tensors(spec, t, n, path, err, errlen);
    }
    free(t);
    free(params);
    free(state);
    model_free(m);
    if (be)
        be->destroy(be);
    return rc;
}
