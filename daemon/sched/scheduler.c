/* scheduler.c — the start decision over the ordered queue (policy in
 * scheduler.h; the order itself is the store's SQL, the hosts placement.c's). */
#include "sched/scheduler.h"

#include <stdbool.h>
#include <string.h>

/* Running count of `owner`: the active jobs plus what this pass started. */
static int sched_running_of(const char *owner, const store_job *active, size_t n_active,
                            const store_job *queue, const size_t *picked, size_t n_picked)
{
    int count = 0;
    for (size_t i = 0; i < n_active; i++)
        count += strcmp(active[i].owner, owner) == 0;
    for (size_t i = 0; i < n_picked; i++)
        count += strcmp(queue[picked[i]].owner, owner) == 0;
    return count;
}

/* Reserve for a job j that does not fit now. False when it is short of
 * slots (the walk stops); else it keeps the slots of its GPU-less placement
 * and every free GPU. */
static bool sched_reserve(placement_cluster *avail, placement_need need)
{
    placement_need slots_only = need;
    slots_only.gpus = 0;
    placement held;
    if (!placement_pack(avail, slots_only, &held))
        return false;
    placement_take(avail, slots_only, &held);
    for (int h = 0; h < avail->n_hosts; h++)
        avail->gpus[h] = 0;
    return true;
}

size_t sched_pick(const store_job *queue, size_t n, const store_job *active, size_t n_active,
                  placement_cluster *avail, int max_running_per_user, size_t *picked,
                  placement *allocs)
{
    size_t n_picked = 0;
    for (size_t i = 0; i < n; i++) {
        const store_job *j = &queue[i];
        if (max_running_per_user > 0 &&
            sched_running_of(j->owner, active, n_active, queue, picked, n_picked) >=
                max_running_per_user)
            continue;
        placement_need need = placement_need_of(j);
        if (!placement_pack(avail, need, &allocs[n_picked])) {
            if (!sched_reserve(avail, need))
                break;
            continue;
        }
        placement_take(avail, need, &allocs[n_picked]);
        picked[n_picked++] = i;
    }
    return n_picked;
}
