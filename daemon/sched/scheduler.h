/* scheduler.h — which queued jobs start now.
 *
 * Order is the store's: store_queue_scan() returns the queue by priority
 * (higher first), then fair share between users, then FIFO. Fair share is
 * start-time fair queuing, kept in SQL (store.c): a submitted job's start
 * tag is max(global clock, its owner's previous finish tag), its finish tag
 * adds the slots it needs, and the clock advances to the tag of each job
 * that starts. A user with many queued jobs thus alternates with newcomers
 * instead of holding the queue, wide jobs count for their width, and time
 * spent idle earns no credit. tests/daemon/test_scheduler.c drives that SQL
 * together with sched_pick() as monitor.c does.
 *
 * Starting (sched_pick): walk the queue in that order, skip jobs whose owner
 * is at the per-user running limit, and start each job that placement_pack()
 * can place on the free slots and GPUs of the hosts (placement.h). A job
 * that does not fit reserves what it needs: the jobs behind it may only use
 * what is left after that reservation. Short of slots (it would not fit
 * even ignoring GPUs), it stops the walk (every job needs a slot: no
 * backfill, so a wide job is never starved by a stream of narrow ones);
 * short of GPUs only, it keeps the slots its placement would take and every
 * free GPU, so jobs behind it that need no GPUs may still use the other
 * slots, but nothing may take a GPU before it. The reservation never delays
 * the waiting job, and needs no run-time estimates. */
#ifndef PUNCH_SCHEDULER_H
#define PUNCH_SCHEDULER_H

#include <stddef.h>

#include "sched/placement.h"
#include "store/store.h"

/* Choose which of `queue` (n queued rows in run order, as store_queue_scan
 * gives them) start now, given the free capacity per host (updated: what
 * the chosen jobs take and the waiting jobs reserve is subtracted), the
 * n_active jobs in starting or running (store_active_jobs: their owners
 * count against the per-user running limit) and that limit (<= 0: no
 * limit). Reads each row's owner, ranks, workers and gpus only. Writes the
 * chosen indices to picked and their allocations to allocs (capacity n
 * each) in start order and returns how many; the chosen allocations never
 * exceed the free capacity of any host. */
size_t sched_pick(const store_job *queue, size_t n, const store_job *active, size_t n_active,
                  placement_cluster *avail, int max_running_per_user, size_t *picked,
                  placement *allocs);

#endif
