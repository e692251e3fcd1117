/* settle.h — how a started job ends, for every scheduler (the local one in
 * monitor.c, Slurm's in slurmsched.c) and for the checks that end a job
 * early (liveness.c, preemption.c): its final state decided and recorded,
 * its processes signalled only while they are verifiably the job's, and its
 * error written for its user (no server paths, printable ASCII).
 *
 * The store is the only record: when it fails to take the end, the job
 * stays as the store has it and the next tick settles it again from the
 * same run directory. Runs on the main thread only. */
#ifndef PUNCH_SETTLE_H
#define PUNCH_SETTLE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon.h"
#include "run/rundir.h"

/* Settle a started job whose mpirun has ended (ex != NULL) or whose
 * supervisor vanished without a record (ex == NULL): its progress and
 * result from the run directory dir, its final state and error decided by
 * finalstate_decide(), or given (decided, decided_error) by a caller that
 * knows better (Slurm's own final state). */
void settle_job(daemon_ctx *d, const store_job *job, const char *dir, const rundir_exit *ex,
                const job_state *decided, const char *decided_error);

/* Send sig to a started job's processes (mpirun's session), only while the
 * session's leader is still the mpirun supervisor.json names; SIGTERM goes
 * to the ranks alone, as for a cancel. How many were signalled, -1 if the
 * session is not (any more) verifiably the job's. */
int settle_signal_job(const store_job *job, const char *dir, int sig);

/* The jobs this process has sent SIGTERM to (a stop is sent once); a job
 * is forgotten when it is settled. */
bool settle_term_was_sent(const char *id);
void settle_term_mark(const char *id);

/* Prune the job's model_checkpoint saves in dir to its checkpoint_keep. */
void settle_prune_checkpoints(const store_job *job, const char *dir);

/* A job's error for its user: paths in the run directory dir relative to
 * it, dataset paths relative to their root, the data dir gone. */
void settle_relative_paths(const daemon_ctx *d, const char *dir, char *error, size_t cap);

/* Replace every byte outside printable ASCII in s with '?'. */
void settle_sanitize(char *s);

/* Release what settle keeps (at exit). */
void settle_cleanup(void);

#endif
