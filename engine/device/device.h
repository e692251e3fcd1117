/* device.h — the backend a job asks for. It sits above cpu/ and gpu/
 * because it calls both constructors; backend/ below them only defines
 * the seam (backend.h), so no floor calls up (tests/layout/check_layers.sh
 * checks the symbols). */
#ifndef PUNCH_DEVICE_H
#define PUNCH_DEVICE_H

#include <stddef.h>

#include "backend/backend.h"
#include "jobspec/spec.h"

/* CUDA on the device of `local_rank` when spec->resources.gpus > 0 (an
 * error, not a fallback, when it is unavailable), else the CPU with
 * `threads`. NULL + message on failure. */
backend *device_backend_create(const job_spec *spec, int threads, int local_rank, char *err,
                               size_t errlen);

#endif
