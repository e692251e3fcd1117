/* dist_sync_heartbeat.h — the per-rank arrival counters the watchdog reads to name the
 * ranks that are late to a collective. */
#ifndef PUNCH_DIST_SYNC_HEARTBEAT_H
#define PUNCH_DIST_SYNC_HEARTBEAT_H

#include <stddef.h>
#include <mpi.h>

/* Collective: a window on rank 0 with one arrival counter per rank. */
void dist_heartbeat_start(MPI_Comm comm);
/* This rank has arrived at its next collective. */
void dist_heartbeat_arrive(void);
/* Collective: release the window. */
void dist_heartbeat_stop(void);
/* Rank 0 (from any thread): the ranks that have arrived at fewer
 * collectives than the others, as "1, 3" in buf; returns how many. */
int dist_heartbeat_late(char *buf, size_t len);

#endif
