/* dist_error.c — how a distributed job fails: one message naming the rank,
 * then MPI_Abort so no other rank is left waiting in a collective. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "distributed/dist_internal.h"

static int dist_error_rank = -1;
static const char *dist_error_out_dir;

void dist_error_setup(int rank, const char *out_dir)
{
    dist_error_rank = rank;
    dist_error_out_dir = out_dir;
}

_Noreturn void dist_die(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "punch-train: rank %d: %s\n", dist_error_rank, msg);
    fflush(stderr);
    if (dist_error_rank == 0 && dist_error_out_dir)
        dist_report_failed(dist_error_out_dir, msg);
    int init = 0, fini = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    if (init && !fini)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

void dist_mpi_check(int rc, const char *call, const char *file, int line)
{
    if (rc == MPI_SUCCESS)
        return;
    char why[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, why, &len) != MPI_SUCCESS)
        snprintf(why, sizeof why, "MPI error %d", rc);
    dist_die("%s failed at %s:%d: %s (a peer rank probably died)", call, file, line, why);
}
