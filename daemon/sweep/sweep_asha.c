/* sweep_asha.c — ASHA's rungs and promotion rule (sweep_asha.h). */
#include "sweep/sweep_asha.h"

#include <math.h>

int sweep_asha_rungs(int min_epochs, int max_epochs, int eta, int *rungs, int cap)
{
    if (min_epochs < 1 || max_epochs < min_epochs || eta < 2 || cap < 1)
        return 0;
    int n = 0;
    long long e = min_epochs;
    while (e < max_epochs && n < cap - 1) {
        rungs[n++] = (int)e;
        e *= eta;
    }
    rungs[n++] = max_epochs;
    return n;
}

/* Does a rank before b? */
static bool sweep_asha_better(const sweep_asha_entry *a, const sweep_asha_entry *b,
                              bool maximize)
{
    if (isnan(a->metric) || isnan(b->metric))
        return !isnan(a->metric) && isnan(b->metric);
    return maximize ? a->metric > b->metric : a->metric < b->metric;
}

int sweep_asha_pick(const sweep_asha_entry *e, size_t n, int eta, bool maximize)
{
    if (eta < 2)
        return -1;
    size_t top = n / (size_t)eta;
    /* An entry's rank is the number of entries that beat it (earlier ones
     * on a tie): quadratic, but a rung holds at most a sweep's trials and
     * this runs once per freed slot. */
    int pick = -1;
    size_t pick_rank = top;
    for (size_t i = 0; i < n; i++) {
        if (e[i].promoted || isnan(e[i].metric))
            continue;
        size_t rank = 0;
        for (size_t j = 0; j < n && rank < pick_rank; j++)
            if (j != i && (sweep_asha_better(&e[j], &e[i], maximize) ||
                           (j < i && !sweep_asha_better(&e[i], &e[j], maximize))))
                rank++;
        if (rank < pick_rank) {
            pick = (int)i;
            pick_rank = rank;
        }
    }
    return pick;
}
