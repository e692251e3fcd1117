/* preemption.h — priority preemption under the local scheduler, on the
 * main thread's tick (monitor.c calls it; the choice is preempt.c's).
 *
 * When the first queued job that cannot start (the head of the run order
 * after this tick's starts) has stayed blocked for preempt_grace seconds,
 * and running jobs of strictly lower priority hold enough for it, those
 * jobs are preempted: a marker RUNDIR/preempted.json {"by", "priority",
 * "at"} is written, then SIGTERM goes to their ranks as for a cancel (the
 * engine ends its step and writes a checkpoint), SIGKILL after kill_grace.
 * When a marked job ends without having succeeded, it goes back to the
 * queue (event "preempted by JOB (priority P)") instead of failing, its
 * marker renamed to requeued.json; when it starts again the launcher sees
 * its checkpoint and resumes (event "resumed after preemption"). The
 * markers live in the run directory, so a restarted daemon still requeues
 * a job it preempted. One preemption is in flight at a time: until every
 * marked job has ended no new one is chosen, and the job it is for shows
 * waiting_for "preemption". */
#ifndef PUNCH_PREEMPTION_H
#define PUNCH_PREEMPTION_H

#include <stdbool.h>

#include "daemon.h"
#include "run/rundir.h"
#include "sched/joblist.h"
#include "sched/placement.h"

/* After the tick's starts: queue (the rows scanned, in run order), which
 * of them started (picked, n_picked), the active jobs, and the capacity
 * left (free_cap, after the starts). */
void preemption_tick(daemon_ctx *d, const job_list *queue, const size_t *picked,
                     size_t n_picked, const job_list *active, const placement_cluster *free_cap,
                     double now);

/* A started job has ended (ex: its exit.json, NULL if none): true when it
 * was preempted and is queued again (the caller settles nothing), false
 * when it is to be settled as usual (never preempted, or it succeeded or
 * was cancelled first). */
bool preemption_requeue(daemon_ctx *d, const store_job *job, const char *dir,
                        const rundir_exit *ex);

/* A job just marked starting: if it was requeued, say so in its events. */
void preemption_started(daemon_ctx *d, const store_job *job, const char *dir);

/* Is this queued job waiting for a preemption made for it to finish
 * (any thread). */
bool preemption_waiting(const char *id);

#endif
