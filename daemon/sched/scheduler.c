/* scheduler.c — the start decision over the ordered queue (policy in
 * scheduler.h; the order itself is the store's SQL, the hosts placement.c's). */
#include "sched/scheduler.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

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

/* Drop the rows keep rejects, keeping the order of the rest. */
static void sched_filter(job_list *queue, sched_keep_fn keep, void *keep_arg)
{
    size_t kept = 0;
    for (size_t i = 0; i < queue->n; i++) {
        store_job *q = &queue->v[i];
        if (!keep(keep_arg, q))
            continue;
        store_job tmp = queue->v[kept];
        queue->v[kept++] = *q;
        *q = tmp;
    }
    /* joblist_free sees the first n rows only: release the dropped ones. */
    for (size_t i = kept; i < queue->n; i++)
        store_job_clear(&queue->v[i]);
    queue->n = kept;
}

store_status sched_pass(store *st, const job_list *active, const placement_cluster *free_cap,
                        int max_running, sched_keep_fn keep, void *keep_arg, sched_plan *out,
                        bool *oom)
{
    *out = (sched_plan){0};
    *oom = false;
    int free_slots = 0;
    for (int h = 0; h < free_cap->n_hosts; h++)
        free_slots += free_cap->down[h] ? 0 : free_cap->slots[h];
    /* With every slot taken nothing starts, but the head of the queue may
     * preempt: one row is enough to know it. */
    store_status rs = store_queue_scan_startable(st, free_slots > 0 ? SCHED_SCAN_ROWS : 1,
                                                 max_running, joblist_collect, &out->queue);
    if (rs != STORE_OK || out->queue.short_of_memory)
        return STORE_ERROR;
    if (keep)
        sched_filter(&out->queue, keep, keep_arg);
    out->picked = calloc(out->queue.n + 1, sizeof *out->picked);
    out->allocs = calloc(out->queue.n + 1, sizeof *out->allocs);
    placement_cluster *avail = malloc(sizeof *avail);
    if (!out->picked || !out->allocs || !avail) {
        free(avail);
        *oom = true;
        return STORE_ERROR;
    }
    /* The pick reserves for waiting jobs too: the caller's free capacity
     * only loses what the started jobs take. */
    *avail = *free_cap;
    if (free_slots > 0)
        out->n_picked = sched_pick(out->queue.v, out->queue.n, active->v, active->n, avail,
                                   max_running, out->picked, out->allocs);
    free(avail);
    return STORE_OK;
}

void sched_plan_free(sched_plan *p)
{
    free(p->picked);
    free(p->allocs);
    joblist_free(&p->queue);
    *p = (sched_plan){0};
}

char *sched_queued_spec(store *st, const store_job *job)
{
    char *spec = NULL;
    store_status rs = store_job_spec(st, job->id, &spec);
    if (rs == STORE_OK)
        return spec;
    if (rs == STORE_ERROR)
        log_error("job %s (%s): cannot read its spec; left queued", job->id, job->owner);
    return NULL;
}
