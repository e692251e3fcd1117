/* preempt.h — which running jobs a queued job that cannot start preempts:
 * a pure choice over capacities, unit-tested (tests/daemon/test_preempt.c);
 * preemption.c acts on it.
 *
 * Only jobs of strictly lower priority that may be preempted (eligible:
 * preempt_eligible) are candidates, taken lowest priority first and, among
 * equals, most recently started first (it loses the least work). They are
 * added until the waiting job fits what is free plus what they hold; then
 * any that is not needed after all is dropped again (trying the least
 * preferred first), so the set is the fewest this order finds. */
#ifndef PUNCH_PREEMPT_H
#define PUNCH_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>

#include "jobspec/spec.h"
#include "sched/placement.h"

/* A running job as a candidate. */
typedef struct preempt_running {
    int priority;
    double started_at;
    bool eligible;          /* preempt_eligible() */
    placement_need need;
    placement alloc;        /* what it holds */
} preempt_running;

/* May a job be preempted: resources.preemptible true always; false never,
 * unless the daemon disallows opting out (then as unset); unset only once
 * it has a checkpoint to resume from. */
bool preempt_eligible(spec_preemptible preemptible, bool has_checkpoint, bool allow_opt_out);

/* Give back to free_cap what a job of this need holds under alloc (the
 * inverse of placement_take). */
void preempt_release(placement_cluster *free_cap, placement_need need, const placement *a);

/* The running jobs (run, n) to preempt so that a waiting job of `need` and
 * `priority` fits free_cap: their indices in chosen (capacity n), in the
 * order taken, and their count; 0 when it fits already or no eligible set
 * of lower-priority jobs makes room. */
size_t preempt_choose(const placement_cluster *free_cap, placement_need need, int priority,
                      const preempt_running *run, size_t n, size_t *chosen);

#endif
