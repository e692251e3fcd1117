/* slurmsched.h — scheduler = slurm: the tick that hands queued jobs to
 * Slurm and follows them there (issue 15; docs/daemon.md, "Running on a
 * Slurm cluster").
 *
 * A queued job is written a batch script (slurm.h) in its run directory and
 * submitted with sbatch; its Slurm id is stored at once. It stays queued in
 * punchcard while Slurm keeps it pending (waiting_for: Slurm's reason), is
 * starting and running once Slurm runs it, and is settled when Slurm ends
 * it: from the supervisor's exit record like a local job, except that
 * Slurm's TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY and a job with no
 * record take Slurm's state and reason. One squeue a tick follows every job;
 * a job Slurm has already forgotten is settled from its exit record. A stop
 * (cancel) is one scancel, remembered as the job's `killed` mark. A Slurm
 * job named pc-ID whose punchcard job has ended is cancelled, and one whose
 * job is queued without an id (punchcardd stopped between sbatch and the
 * store) is adopted. When sbatch or squeue cannot reach slurmctld,
 * d->slurm_down is set (submits get 503) and nothing changes until it
 * answers. Runs on the main thread only. */
#ifndef PUNCH_SLURMSCHED_H
#define PUNCH_SLURMSCHED_H

#include "daemon.h"

void slurmsched_tick(daemon_ctx *d);

#endif
