/* dist_error.h — the job-ending error helpers of every rank: dist_die and the MPI
 * call check. */
#ifndef PUNCH_DIST_ERROR_H
#define PUNCH_DIST_ERROR_H

/* Print "punch-train: rank R: <message>" and end the whole job
 * (MPI_Abort). Never returns. */
_Noreturn void dist_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Who this rank is, and where rank 0 records a failure ("end" event). */
void dist_error_setup(int rank, const char *out_dir);

/* Check an MPI call (communicators use MPI_ERRORS_RETURN): on failure the
 * job is aborted with the call, file:line and MPI's own message. */
#define DIST_MPI(call) dist_mpi_check((call), #call, __FILE__, __LINE__)
void dist_mpi_check(int rc, const char *call, const char *file, int line);

#endif
