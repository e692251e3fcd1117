/* gpu_debug.c — PUNCH_GPU_SYNC's value; see gpu_debug.h. */
#include "gpu/gpu_debug.h"

#include <stddef.h>
#include <strings.h>

bool gpu_debug_sync_parse(const char *value)
{
    static const char *const on[] = {"1", "true", "yes", "on"};
    if (!value)
        return false;
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        if (strcasecmp(value, on[i]) == 0)
            return true;
    return false;
}
