/* gpualloc.c — device sets of a single host (contract in gpualloc.h). */
#include "sched/gpualloc.h"

#include <stdio.h>

bool gpualloc_take(uint64_t in_use, int total, int n, uint64_t *out)
{
    if (total > GPUALLOC_MAX)
        total = GPUALLOC_MAX;
    uint64_t set = 0;
    int got = 0;
    for (int dev = 0; dev < total && got < n; dev++) {
        uint64_t bit = UINT64_C(1) << dev;
        if (in_use & bit)
            continue;
        set |= bit;
        got++;
    }
    if (got < n)
        return false;
    *out = set;
    return true;
}

int gpualloc_count(uint64_t set)
{
    int n = 0;
    for (; set; set &= set - 1)
        n++;
    return n;
}

bool gpualloc_format(uint64_t set, char *buf, size_t cap)
{
    if (cap == 0)
        return false;
    size_t used = 0;
    buf[0] = '\0';
    for (int dev = 0; dev < GPUALLOC_MAX; dev++) {
        if (!(set & (UINT64_C(1) << dev)))
            continue;
        int n = snprintf(buf + used, cap - used, "%s%d", used ? "," : "", dev);
        if (n < 0 || (size_t)n >= cap - used)
            return false;
        used += (size_t)n;
    }
    return true;
}

bool gpualloc_parse(const char *text, uint64_t *out)
{
    uint64_t set = 0;
    const char *p = text;
    while (*p) {
        if (*p < '0' || *p > '9')
            return false;
        int dev = 0;
        while (*p >= '0' && *p <= '9') {
            dev = dev * 10 + (*p++ - '0');
            if (dev >= GPUALLOC_MAX)
                return false;
        }
        set |= UINT64_C(1) << dev;
        if (*p == ',' && p[1])
            p++;
        else if (*p)
            return false;
    }
    *out = set;
    return true;
}
