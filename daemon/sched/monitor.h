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

/* Under scheduler = slurm the tick hands jobs to Slurm and follows them
 * there instead (slurmsched.h). */
void monitor_tick(daemon_ctx *d);

/* Settle a started job whose mpirun has ended (ex != NULL) or whose
 * supervisor vanished without a record (ex == NULL): its progress and
 * result from the run directory dir, its final state and error decided by
 * finalstate_decide(), or given (decided, decided_error) by a caller that
 * knows better (Slurm's own final state). If the store cannot record it,
 * the job stays as it was there and the next tick settles it again from
 * the same run directory. */
void monitor_settle(daemon_ctx *d, const store_job *job, const char *dir, const rundir_exit *ex,
                    const job_state *decided, const char *decided_error);

/* Send sig to a started job's processes (mpirun's session), only while the
 * session's leader is still the mpirun supervisor.json names; SIGTERM goes
 * to the ranks alone, as for a cancel. How many were signalled, -1 if the
 * session is not (any more) verifiably the job's. */
int monitor_signal_job(const store_job *job, const char *dir, int sig);

/* A list of job rows: monitor_collect is a store_job_cb appending a deep
 * copy of each row (without progress and result); release with
 * monitor_list_free. */
typedef struct job_list {
    store_job *v;
    size_t n, cap;
    bool short_of_memory; /* a row was dropped: the list is incomplete */
} job_list;

bool monitor_collect(const store_job *job, void *arg);

/* A queued job's spec (heap), or NULL, logged when the store failed: the
 * job stays queued for a later tick. */
char *monitor_queued_spec(daemon_ctx *d, const store_job *job);
void monitor_list_free(job_list *l);

/* Release the monitor's memory (at exit). */
void monitor_cleanup(void);

#endif
