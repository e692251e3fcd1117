/* dist_error.c — how a distributed job fails: one message naming the rank,
 * rank 0's failure line in progress.jsonl, then MPI_Abort so no other rank
 * is left waiting in a collective. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <mpi.h>

#include "distributed/dist_error.h"
#include "distributed/dist_async_recovery.h"
#include "train/runlog.h"

static int dist_error_rank = -1;
static const char *dist_error_out_dir;

void dist_error_setup(int rank, const char *out_dir)
{
    dist_error_rank = rank;
    dist_error_out_dir = out_dir;
}

/* The run's last line. A rank can fail before the report opened (no CUDA
 * device, bad data): the run directory may not exist yet. The failure is
 * still recorded, and the user sees only the one line of the cause. */
static void dist_error_record(const char *out_dir, const char *why)
{
    char err[512];
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        return;
    if (runlog_failed(out_dir, why, err, sizeof err) < 0)
        fprintf(stderr, "punch-train: %s\n", err);
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
        dist_error_record(dist_error_out_dir, msg);
    int init = 0, fini = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    /* Under --enable-recovery MPI_Abort ends this rank alone. */
    dist_recovery_fail_job();
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
