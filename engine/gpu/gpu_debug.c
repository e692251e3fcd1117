/* gpu_debug.c — the PUNCH_GPU_SYNC switch's value; see gpu_debug.h. */
#include "gpu/gpu_debug.h"

#include <stdatomic.h>

/* Set once at start-up, read by every check (of any thread). */
static atomic_bool gpu_debug_sync_on;

void gpu_debug_set_sync(bool on)
{
    atomic_store_explicit(&gpu_debug_sync_on, on, memory_order_relaxed);
}

bool gpu_debug_sync(void)
{
    return atomic_load_explicit(&gpu_debug_sync_on, memory_order_relaxed);
}
