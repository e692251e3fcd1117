/* device.c — picks the backend a job asks for. A job that asks for GPUs
 * gets the CUDA backend or a clear error, never a silent CPU fallback. */
#include "device/device.h"

#include <stdio.h>

#include "cpu/cpu.h"
#include "gpu/gpu.h"

backend *device_backend_create(const job_spec *spec, int threads, int local_rank, char *err,
                               size_t errlen)
{
    if (spec->resources.gpus > 0) {
        if (!gpu_built()) {
            snprintf(err, errlen,
                     "resources.gpus is %d but this punch-train was built without the CUDA "
                     "backend (meson -Dcuda=enabled)", spec->resources.gpus);
            return NULL;
        }
        if (spec->training.precision == PRECISION_BF16) {
            snprintf(err, errlen,
                     "training.precision: bf16 runs on the CPU backend only in this version; "
                     "use fp32 with resources.gpus");
            return NULL;
        }
        backend *be = backend_cuda_create(local_rank, err, errlen);
        if (be)
            be->nondeterministic_ok = spec->training.nondeterministic;
        return be;
    }
    backend *be = backend_cpu_create(threads, err, errlen);
    if (be)
        be->bf16 = spec->training.precision == PRECISION_BF16;
    return be;
}
