/* preempt.c — the choice of jobs to preempt (policy in preempt.h). */
#include "sched/preempt.h"

#include <stdlib.h>

bool preempt_eligible(spec_preemptible preemptible, bool has_checkpoint, bool allow_opt_out)
{
    if (preemptible == SPEC_PREEMPTIBLE_YES)
        return true;
    if (preemptible == SPEC_PREEMPTIBLE_NO && allow_opt_out)
        return false;
    return has_checkpoint;
}

void preempt_release(placement_cluster *free_cap, placement_need need, const placement *a)
{
    for (int i = 0; i < a->n; i++) {
        int h = a->part[i].host;
        if (h < 0 || h >= free_cap->n_hosts)
            continue;
        free_cap->slots[h] += a->part[i].ranks;
        free_cap->gpus[h] += placement_part_gpus(need, a, i);
        if (free_cap->mem[h] >= 0)
            free_cap->mem[h] += need.mem_per_rank * a->part[i].ranks;
    }
}

/* Candidate a before b: lower priority, then started later. */
static bool preempt_before(const preempt_running *a, const preempt_running *b)
{
    if (a->priority != b->priority)
        return a->priority < b->priority;
    return a->started_at > b->started_at;
}

/* Does need fit free_cap with the jobs of chosen[0..k) released, except
 * the one at position skip (k for none)? */
static bool preempt_fits(const placement_cluster *free_cap, placement_need need,
                         const preempt_running *run, const size_t *chosen, size_t k, size_t skip)
{
    placement_cluster cap = *free_cap;
    for (size_t i = 0; i < k; i++)
        if (i != skip)
            preempt_release(&cap, run[chosen[i]].need, &run[chosen[i]].alloc);
    placement a;
    return placement_pack(&cap, need, &a);
}

size_t preempt_choose(const placement_cluster *free_cap, placement_need need, int priority,
                      const preempt_running *run, size_t n, size_t *chosen)
{
    if (n == 0 || preempt_fits(free_cap, need, run, chosen, 0, 0))
        return 0;
    /* Candidates in preference order (insertion sort: a cluster runs tens
     * of jobs, not thousands). */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!run[i].eligible || run[i].priority >= priority)
            continue;
        size_t at = k++;
        while (at > 0 && preempt_before(&run[i], &run[chosen[at - 1]])) {
            chosen[at] = chosen[at - 1];
            at--;
        }
        chosen[at] = i;
    }
    size_t used = 0;
    bool fits = false;
    while (!fits && used < k) {
        used++;
        fits = preempt_fits(free_cap, need, run, chosen, used, used);
    }
    if (!fits)
        return 0;
    /* Drop those not needed, least preferred (last taken) first. */
    for (size_t i = used; i-- > 0;) {
        if (!preempt_fits(free_cap, need, run, chosen, used, i))
            continue;
        for (size_t j = i; j + 1 < used; j++)
            chosen[j] = chosen[j + 1];
        used--;
    }
    return used;
}
