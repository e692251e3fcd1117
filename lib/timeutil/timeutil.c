/* timeutil.c — wall and monotonic clocks as seconds (see timeutil.h). */
#include "timeutil/timeutil.h"

#include <time.h>

static double timeutil_read(clockid_t id)
{
    struct timespec ts;
    /* Both clocks exist on every Linux; clock_gettime fails only for an
     * invalid id, which these are not. */
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double timeutil_wall_s(void) { return timeutil_read(CLOCK_REALTIME); }

double timeutil_mono_s(void) { return timeutil_read(CLOCK_MONOTONIC); }
