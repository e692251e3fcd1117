/* stall.c — the stall rule (stall.h). */
#include "sched/stall.h"

void stall_watch_start(stall_watch *w, double now)
{
    w->last_report = now;
    w->slowest_gap = 0;
}

void stall_watch_report(stall_watch *w, double now)
{
    double gap = now - w->last_report;
    if (gap > w->slowest_gap)
        w->slowest_gap = gap;
    w->last_report = now;
}

double stall_limit(const stall_watch *w, int grace_s, int factor)
{
    if (grace_s <= 0)
        return 0;
    double by_steps = (double)factor * w->slowest_gap;
    return by_steps > grace_s ? by_steps : (double)grace_s;
}

bool stall_is_stalled(const stall_watch *w, double now, int grace_s, int factor)
{
    double limit = stall_limit(w, grace_s, factor);
    return limit > 0 && now - w->last_report > limit;
}
