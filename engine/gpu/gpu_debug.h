/* gpu_debug.h — the PUNCH_GPU_SYNC debug switch. Plain C with no CUDA
 * dependence, so its parsing is unit-tested on machines without a GPU.
 *
 * CUDA reports a fault inside a kernel at some later call that waits for
 * the device, so the file:line in the message is that later call's, not
 * the kernel's. With PUNCH_GPU_SYNC=1 every checked call (GPU_CHECK and
 * GPU_MUST in gpu_check.h: every kernel launcher, cuBLAS, cuDNN, NCCL and
 * runtime call) is followed by a device synchronisation and
 * cudaGetLastError(), and a failure found there names that call's
 * file:line. Slow: for finding a fault, never for timing. */
#ifndef PUNCH_GPU_DEBUG_H
#define PUNCH_GPU_DEBUG_H

#include <stdbool.h>

#define GPU_SYNC_ENV "PUNCH_GPU_SYNC"

/* Whether a PUNCH_GPU_SYNC value turns the switch on: "1", "true", "yes"
 * or "on" (any case). NULL, "", "0" and anything else leave it off. */
bool gpu_debug_sync_parse(const char *value);

#endif
