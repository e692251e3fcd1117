/* monitor.h — the one periodic function: reap children, follow every started
 * job through its run directory and supervisor, enforce cancels and time
 * limits (SIGTERM, then SIGKILL after the grace period), record final states,
 * and start queued jobs as the scheduler allows. Runs only on the main
 * thread; HTTP threads record their requests in the store and wake it. After
 * a restart the same checks re-adopt running jobs or settle how they ended.
 *
 * The store is the only record: when it fails to take a change (a job's
 * start, its supervisor, running, its stop, its end), the tick logs which job
 * and what, leaves the job as the store has it, and the next tick, seeing
 * the same run directory, makes the change again. A tick that cannot list
 * the active jobs or read the queue starts nothing. */
#ifndef PUNCH_MONITOR_H
#define PUNCH_MONITOR_H

#include "daemon.h"
#include "run/rundir.h"

/* The scheduler behind the tick is chosen here, in one place: the local
 * one (this file: supervise, then sched_pass() and start what it picks) or,
 * under scheduler = slurm, Slurm's (slurmsched.h). Both settle jobs through
 * settle.h. */
void monitor_tick(daemon_ctx *d);

/* Release the monitor's memory (at exit). */
void monitor_cleanup(void);

#endif
