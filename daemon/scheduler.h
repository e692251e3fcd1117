/* scheduler.h — the run policy, as pure functions over plain arrays (the
 * periodic tick in monitor.c feeds them from the store).
 *
 * Order: priority (higher first), then fair share between users, then FIFO.
 * Fair share is start-time fair queuing: a submitted job's start tag is
 * max(global clock, its owner's previous finish tag) and its finish tag adds
 * the slots it needs; the clock advances to the tag of each started job. A
 * user with many queued jobs thus alternates with newcomers instead of
 * holding the queue, and wide jobs count for their width. The store keeps the
 * tags; ties break by submission order.
 *
 * Starting: walk the queue in that order, skip jobs whose owner is at the
 * per-user running limit, and start each job that fits the free resources
 * (MPI slots and GPUs). A job that does not fit reserves what it needs: the
 * jobs behind it may only use what is left after that reservation. Short of
 * slots, it thus stops the walk (every job needs a slot: no backfill, so a
 * wide job is never starved by a stream of narrow ones); short of GPUs only,
 * jobs behind it that need no GPUs may still use the slots it does not need,
 * but nothing may take a GPU before it. The reservation never delays the
 * waiting job, and needs no run-time estimates. */
#ifndef PUNCH_SCHEDULER_H
#define PUNCH_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

typedef struct sched_job {
    const char *owner;
    int ranks;
    int priority;
    double vstart;
    int64_t seq;
    int gpus;       /* GPUs held while running: resources.gpus x workers */
} sched_job;

/* Free (or needed) resources of the cluster. */
typedef struct sched_resources {
    int slots;
    int gpus;
} sched_resources;

/* Jobs an owner has in starting/running. */
typedef struct sched_owner {
    const char *owner;
    int running;
} sched_owner;

/* The start tag of a new job. */
double sched_start_tag(double vclock, double owner_finish_tag);

/* qsort-style comparison in run order. */
int sched_compare(const sched_job *a, const sched_job *b);

/* Choose which of `queue` (n jobs, already in run order) start now, given the
 * free resources, the owners' running counts and the per-user running limit
 * (<= 0: no limit). Writes the chosen indices to picked (capacity n) in start
 * order and returns how many. The chosen jobs' needs never exceed `avail`. */
size_t sched_pick(const sched_job *queue, size_t n, const sched_owner *owners, size_t n_owners,
                  sched_resources avail, int max_running_per_user, size_t *picked);

#endif
