/* cpu.h — the CPU backend's public entry point: its constructor. Layers
 * and trainers use the backend it returns through backend/backend.h;
 * cpu_backend.h is the backend's own internals. */
#ifndef PUNCH_CPU_H
#define PUNCH_CPU_H

#include <stddef.h>

#include "backend/backend.h"

/* Create the CPU backend with `threads` worker threads (the calling thread
 * is one of them). The backend owns the cores: OpenBLAS is set to one
 * thread and every op is partitioned by the backend's own pool, so GEMMs
 * and element-wise loops never oversubscribe. NULL + message on failure. */
backend *backend_cpu_create(int threads, char *err, size_t errlen);

#endif
