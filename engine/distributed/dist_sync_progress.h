/* dist_sync_progress.h — a thread driving MPI requests while the rank computes. */
#ifndef PUNCH_DIST_SYNC_PROGRESS_H
#define PUNCH_DIST_SYNC_PROGRESS_H

#include <mpi.h>

typedef struct dist_progress dist_progress;

/* A thread that polls the watched requests with MPI_Testall; NULL when
 * MPI's thread level is below MPI_THREAD_SERIALIZED or on failure (then
 * nothing drives the requests but the caller). */
dist_progress *dist_progress_start(void);
void dist_progress_stop(dist_progress *p);
/* Hold the lock around every MPI call while requests are watched. */
void dist_progress_lock(dist_progress *p);
void dist_progress_unlock(dist_progress *p);
/* With the lock held: poll req[0, n) from now on / stop polling. */
void dist_progress_watch(dist_progress *p, MPI_Request *req, int n);
void dist_progress_idle(dist_progress *p);

#endif
