/* scheduler.c — run order and admission (policy documented in scheduler.h). */
#include "scheduler.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

double sched_start_tag(double vclock, double owner_finish_tag)
{
    return owner_finish_tag > vclock ? owner_finish_tag : vclock;
}

int sched_compare(const sched_job *a, const sched_job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->vstart != b->vstart)
        return a->vstart < b->vstart ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Running count of `owner`: from the table plus what this pass started. */
static int sched_running_of(const char *owner, const sched_owner *owners, size_t n_owners,
                            const sched_job *queue, const size_t *picked, size_t n_picked)
{
    int count = 0;
    for (size_t i = 0; i < n_owners; i++)
        if (strcmp(owners[i].owner, owner) == 0)
            count += owners[i].running;
    for (size_t i = 0; i < n_picked; i++)
        if (strcmp(queue[picked[i]].owner, owner) == 0)
            count++;
    return count;
}

static bool sched_fits(const sched_job *j, sched_resources avail)
{
    return j->ranks <= avail.slots && j->gpus <= avail.gpus;
}

/* What stays free for the jobs behind a waiting job j: j keeps first call on
 * everything it needs, including the whole of a resource it is short of. */
static sched_resources sched_reserve(sched_resources avail, const sched_job *j)
{
    avail.slots = avail.slots > j->ranks ? avail.slots - j->ranks : 0;
    avail.gpus = avail.gpus > j->gpus ? avail.gpus - j->gpus : 0;
    return avail;
}

size_t sched_pick(const sched_job *queue, size_t n, const sched_owner *owners, size_t n_owners,
                  sched_resources avail, int max_running_per_user, size_t *picked)
{
    size_t n_picked = 0;
    for (size_t i = 0; i < n && avail.slots > 0; i++) {
        const sched_job *j = &queue[i];
        if (max_running_per_user > 0 &&
            sched_running_of(j->owner, owners, n_owners, queue, picked, n_picked) >=
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
