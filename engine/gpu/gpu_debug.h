/* gpu_debug.h — the PUNCH_GPU_SYNC debug switch. Plain C with no CUDA
 * dependence, built in every build, so the engine's start-up sets it
 * without an #ifdef.
 *
 * CUDA reports a fault inside a kernel at some later call that waits for
 * the device, so the file:line in the message is that later call's, not
 * the kernel's. With the switch on, every checked call (GPU_CHECK and
 * GPU_MUST in gpu_check.h: every kernel launcher, cuBLAS, cuDNN, NCCL and
 * runtime call) is followed by a device synchronisation and
 * cudaGetLastError(), and a failure found there names that call's
 * file:line. Slow: for finding a fault, never for timing.
 *
 * The value comes from the environment once, with the other knobs
 * (train/options.h reads PUNCH_GPU_SYNC; main.c sets it here); off until
 * set. */
#ifndef PUNCH_GPU_DEBUG_H
#define PUNCH_GPU_DEBUG_H

#include <stdbool.h>

#define GPU_SYNC_ENV "PUNCH_GPU_SYNC"

void gpu_debug_set_sync(bool on);
bool gpu_debug_sync(void);

#endif
