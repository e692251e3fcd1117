/* busy.c — busy.h's wait: Retry-After honoured, capped, and counted. The
 * sleep is a plain nanosleep, so Ctrl-C (SIGINT's default action) ends
 * punch at once; a caught signal ends the retrying instead. */
#include "busy.h"

#include <stdio.h>
#include <time.h>

bool busy_wait(const httpc_response *r, busy_budget *b)
{
    if ((r->status != 503 && r->status != 429) || r->retry_after < 0)
        return false;
    long s = r->retry_after < BUSY_MAX_WAIT_S ? r->retry_after : BUSY_MAX_WAIT_S;
    if (b->waited_s + s > BUSY_TOTAL_WAIT_S)
        return false;
    fprintf(stderr, "server busy (%s): retrying in %ld s\n",
            r->status == 503 ? "predict_queue full" : "predict_per_user reached", s);
    struct timespec ts = {.tv_sec = s};
    if (nanosleep(&ts, NULL) != 0)
        return false;
    /* A Retry-After of 0 still counts a second, so the retries stay bounded. */
    b->waited_s += s > 0 ? s : 1;
    return true;
}
