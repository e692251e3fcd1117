/* dist_async_recovery.h — running on after a lost rank under mpirun --enable-recovery. */
#ifndef PUNCH_DIST_ASYNC_RECOVERY_H
#define PUNCH_DIST_ASYNC_RECOVERY_H

#include <stdbool.h>

/* dist_async_recovery.c: under `mpirun --enable-recovery` (the
 * parameter-server trainers under punchcardd), where mpirun outlives a
 * dead rank and exits 0 whatever its ranks do. */
bool dist_recovery_on(void);
/* Makes the job fail: ends this rank's Open MPI launcher (SIGTERM), under
 * recovery only; call before exiting on an error. Async-signal-safe
 * enough for the watchdog thread (no MPI). */
void dist_recovery_fail_job(void);
/* Ranks lost during the run: the survivors then skip the final barrier
 * and MPI_Finalize, whose fence would wait for the dead. */
void dist_recovery_note_lost(int ranks);
int dist_recovery_lost(void);
/* The test hook PUNCH_TEST_DIE_RANK / PUNCH_TEST_DIE_STEP: the step (a
 * worker's local step, counted from 1; the server's commit count) at
 * which this rank SIGKILLs itself, or -1. */
int dist_recovery_test_die_step(int rank);

#endif
