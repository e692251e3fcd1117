/* scheduler.c — the start decision over the ordered queue (policy in
 * scheduler.h; the order itself is the store's SQL). */
#include "scheduler.h"

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

static bool sched_fits(const store_job *j, sched_resources avail)
{
    return j->ranks <= avail.slots && j->gpus <= avail.gpus;
}

/* What stays free for the jobs behind a waiting job j: j keeps first call on
 * everything it needs, including the whole of a resource it is short of. */
static sched_resources sched_reserve(sched_resources avail, const store_job *j)
{
    avail.slots = avail.slots > j->ranks ? avail.slots - j->ranks : 0;
    avail.gpus = avail.gpus > j->gpus ? avail.gpus - j->gpus : 0;
    return avail;
}

size_t sched_pick(const store_job *queue, size_t n, const store_job *active, size_t n_active,
                  sched_resources avail, int max_running_per_user, size_t *picked)
{
    size_t n_picked = 0;
    for (size_t i = 0; i < n && avail.slots > 0; i++) {
        const store_job *j = &queue[i];
        if (max_running_per_user > 0 &&
            sched_running_of(j->owner, active, n_active, queue, picked, n_picked) >=
                max_running_per_user)
            continue;
        if (!sched_fits(j, avail)) {
            avail = sched_reserve(avail, j);
            continue;
        }
        picked[n_picked++] = i;
        avail.slots -= j->ranks;
        avail.gpus -= j->gpus;
    }
    return n_picked;
}
