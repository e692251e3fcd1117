/* gpu_device.c — device selection for a node-local rank; see
 * gpu_device.h for the rules. */
#include "gpu/gpu_device.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* A visible-devices entry is a decimal ordinal or a device UUID
 * ("GPU-..." / "MIG-..."); the runtime stops at anything else, including a
 * negative ordinal. */
static bool gpu_entry_valid(const char *s, size_t len)
{
    if (len == 0)
        return false;
    if ((len > 4 && strncmp(s, "GPU-", 4) == 0) || (len > 4 && strncmp(s, "MIG-", 4) == 0))
        return true;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

int gpu_visible_devices_count(const char *value, int index, char *buf, size_t buflen)
{
    if (buf && buflen)
        buf[0] = '\0';
    int count = 0;
    const char *p = value;
    while (p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len > 0 && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len > 0 && isspace((unsigned char)p[len - 1]))
            len--;
        if (!gpu_entry_valid(p, len))
            break;
        if (count == index && buf && buflen)
            snprintf(buf, buflen, "%.*s", (int)len, p);
        count++;
        p = comma ? comma + 1 : NULL;
    }
    return count;
}

bool gpu_device_choose(int local_rank, int device_count, const char *visible_devices,
                       gpu_device_choice *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->device = -1;
    if (device_count <= 0) {
        if (visible_devices && gpu_visible_devices_count(visible_devices, -1, NULL, 0) == 0)
            snprintf(err, errlen,
                     "no CUDA device: CUDA_VISIBLE_DEVICES=\"%s\" hides every device",
                     visible_devices);
        else
            snprintf(err, errlen, "no CUDA device: no CUDA-capable device is detected");
        return false;
    }
    if (local_rank < 0)
        local_rank = 0;
    out->device = local_rank % device_count;
    out->shared = local_rank >= device_count;
    if (!visible_devices ||
        gpu_visible_devices_count(visible_devices, out->device, out->visible,
                                  sizeof out->visible) <= out->device)
        snprintf(out->visible, sizeof out->visible, "%d", out->device);
    return true;
}
