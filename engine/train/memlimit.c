/* memlimit.c — PUNCH_RANK_MEMORY_MAX as RLIMIT_DATA (memlimit.h). */
#include "train/memlimit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#if defined(__SANITIZE_ADDRESS__)
#define MEMLIMIT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMLIMIT_ASAN 1
#endif
#endif

int memlimit_apply(double bytes, char *err, size_t errlen)
{
#ifdef MEMLIMIT_ASAN
    (void)bytes;
    snprintf(err, errlen, "not applied: AddressSanitizer's shadow memory counts as data");
    return 1;
#else
    struct rlimit cur;
    if (getrlimit(RLIMIT_DATA, &cur) != 0) {
        snprintf(err, errlen, "getrlimit(RLIMIT_DATA): %s", strerror(errno));
        return -1;
    }
    rlim_t want = (rlim_t)bytes;
    /* Never raise a limit someone else set lower. */
    if (cur.rlim_max != RLIM_INFINITY && want > cur.rlim_max)
        want = cur.rlim_max;
    struct rlimit lim = {.rlim_cur = want, .rlim_max = want};
    if (setrlimit(RLIMIT_DATA, &lim) != 0) {
        snprintf(err, errlen, "setrlimit(RLIMIT_DATA, %.0f bytes): %s", bytes, strerror(errno));
        return -1;
    }
    return 0;
#endif
}
