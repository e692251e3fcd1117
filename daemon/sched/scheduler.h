/* scheduler.h — which queued jobs start now.
 *
 * Order is the store's: store_queue_scan() returns the queue by priority
 * (higher first), then fair share between users, then FIFO. Fair share is
 * start-time fair queuing, kept in SQL (store.c): a submitted job's start
 * tag is max(global clock, its owner's previous finish tag), its finish tag
 * adds the slots it needs, and the clock advances to the tag of each job
 * that starts. A user with many queued jobs thus alternates with newcomers
 * instead of holding the queue, wide jobs count for their width, and time
 * spent idle earns no credit.
 *
 * A pass (sched_pass) is the one place that reads the queue and picks:
 * monitor.c's tick, tests/daemon/test_scheduler.c and
 * tests/daemon/bench_schedule.c all call it, so the test drives that SQL
 * together with sched_pick() exactly as production does.
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

#include "sched/joblist.h"
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

/* How many rows of the queue's head a pass reads when a slot is free. */
#define SCHED_SCAN_ROWS 1000

/* What a pass chose: the head of the queue it read (in run order, the
 * rows `keep` rejected gone), and the rows to start, as indices into
 * queue.v with their allocations, in start order. Release with
 * sched_plan_free. */
typedef struct sched_plan {
    job_list queue;
    size_t *picked;
    placement *allocs;
    size_t n_picked;
} sched_plan;

/* Rejects a queued row before the pick (false: the row is dropped from the
 * plan; the callback may record why, e.g. fail the job in the store). */
typedef bool (*sched_keep_fn)(void *arg, const store_job *queued);

/* One scheduling pass: read the head of the queue (store_queue_scan_
 * startable: SCHED_SCAN_ROWS rows without the jobs of owners at
 * max_running; one row when `free_cap` has no free slot on an up host,
 * enough for preemption to see the head), drop the rows keep (if not NULL)
 * rejects, and sched_pick over a copy of free_cap with the active jobs
 * (active). free_cap is not changed. STORE_OK with *out filled; otherwise
 * (the store failed, or memory ran out: *oom is set) *out holds nothing
 * to start, since a pick over part of the queue could break its order.
 * Release *out with sched_plan_free either way. */
store_status sched_pass(store *st, const job_list *active, const placement_cluster *free_cap,
                        int max_running, sched_keep_fn keep, void *keep_arg, sched_plan *out,
                        bool *oom);
void sched_plan_free(sched_plan *p);

/* A queued job's spec (heap), or NULL, logged when the store failed: the
 * job stays queued for a later tick. */
char *sched_queued_spec(store *st, const store_job *job);

#endif
