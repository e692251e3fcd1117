/* dist_sync_heartbeat.c — which rank is late. Every rank of a synchronous
 * trainer counts the collectives it has arrived at and writes the count
 * into its slot of a window on rank 0 (MPI_Put, passive target: rank 0
 * need not call MPI for it to land). When rank 0's watchdog fires inside a
 * collective, it reads the slots straight from memory and names the ranks
 * that never arrived: the hung ones. If the window cannot be made (an
 * MPI without passive-target progress), the watchdog says less, nothing
 * else changes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_sync_heartbeat.h"

static struct {
    MPI_Win win;
    int64_t *slots;         /* rank 0: size entries */
    int64_t arrived;
    int rank, size;
    bool on;
} dist_hb;

void dist_heartbeat_start(MPI_Comm comm)
{
    MPI_Comm_rank(comm, &dist_hb.rank);
    MPI_Comm_size(comm, &dist_hb.size);
    MPI_Aint bytes = dist_hb.rank == 0 ? (MPI_Aint)dist_hb.size * (MPI_Aint)sizeof(int64_t) : 0;
    if (MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, comm, &dist_hb.slots,
                         &dist_hb.win) != MPI_SUCCESS)
        return;
    MPI_Win_set_errhandler(dist_hb.win, MPI_ERRORS_RETURN);
    if (dist_hb.rank == 0)
        memset(dist_hb.slots, 0, (size_t)bytes);
    /* Everyone's slots are zero before anyone writes. */
    if (MPI_Barrier(comm) != MPI_SUCCESS || MPI_Win_lock_all(0, dist_hb.win) != MPI_SUCCESS) {
        MPI_Win_free(&dist_hb.win);
        return;
    }
    dist_hb.arrived = 0;
    dist_hb.on = true;
}

void dist_heartbeat_arrive(void)
{
    if (!dist_hb.on)
        return;
    dist_hb.arrived++;
    if (dist_hb.rank == 0) {
        atomic_store((_Atomic int64_t *)&dist_hb.slots[0], dist_hb.arrived);
        return;
    }
    if (MPI_Put(&dist_hb.arrived, 1, MPI_INT64_T, 0, dist_hb.rank, 1, MPI_INT64_T,
                dist_hb.win) != MPI_SUCCESS ||
        MPI_Win_flush(0, dist_hb.win) != MPI_SUCCESS)
        dist_hb.on = false;
}

void dist_heartbeat_stop(void)
{
    if (!dist_hb.on)
        return;
    dist_hb.on = false;
    MPI_Win_unlock_all(dist_hb.win);
    MPI_Win_free(&dist_hb.win);
}

int dist_heartbeat_late(char *buf, size_t len)
{
    if (!dist_hb.on || dist_hb.rank != 0 || len == 0)
        return 0;
    int64_t most = 0;
    for (int r = 0; r < dist_hb.size; r++) {
        int64_t v = atomic_load((_Atomic int64_t *)&dist_hb.slots[r]);
        most = v > most ? v : most;
    }
    size_t used = 0;
    int n = 0;
    buf[0] = '\0';
    for (int r = 0; r < dist_hb.size && used < len; r++) {
        if (atomic_load((_Atomic int64_t *)&dist_hb.slots[r]) >= most)
            continue;
        int w = snprintf(buf + used, len - used, "%s%d", n ? ", " : "", r);
        used += w > 0 ? (size_t)w : 0;
        n++;
    }
    return n;
}
