/* dist_async_recovery.c — running under `mpirun --enable-recovery`, which
 * punchcardd asks for with the parameter-server trainers so that the
 * server can train on when a worker dies (docs/distributed.md, "A lost
 * worker"). Measured with Open MPI 4.1.4, such an mpirun keeps the other
 * ranks running when one dies, but also exits 0 whatever its ranks do:
 * a rank's non-zero exit, its death by a signal, even MPI_Abort (which
 * then ends the caller alone). A rank that must fail the job therefore
 * ends its launcher (mpirun, or orted on another host) with SIGTERM, which
 * makes mpirun end every rank and exit non-zero. And MPI_Finalize, whose
 * fence counts every rank, may wait forever for a dead one: once a rank is
 * lost the survivors leave without it. */
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "distributed/dist_async_recovery.h"

static int dist_recovery_lost_ranks;

bool dist_recovery_on(void)
{
    const char *v = getenv("OMPI_MCA_orte_enable_recovery");
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
}

/* Only a launcher of Open MPI's is ended: a rank started some other way
 * (a singleton, a test harness) leaves its parent alone. */
static bool dist_recovery_parent_is_launcher(pid_t ppid)
{
    char path[64], name[64] = "";
    snprintf(path, sizeof path, "/proc/%ld/comm", (long)ppid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    if (!ok)
        return false;
    name[strcspn(name, "\n")] = '\0';
    return strcmp(name, "mpirun") == 0 || strcmp(name, "mpiexec") == 0 ||
           strcmp(name, "orterun") == 0 || strcmp(name, "orted") == 0;
}

void dist_recovery_fail_job(void)
{
    if (!dist_recovery_on())
        return;
    pid_t ppid = getppid();
    if (ppid > 1 && dist_recovery_parent_is_launcher(ppid))
        kill(ppid, SIGTERM);
}

void dist_recovery_note_lost(int ranks)
{
    dist_recovery_lost_ranks = ranks;
}

int dist_recovery_lost(void)
{
    return dist_recovery_lost_ranks;
}

int dist_recovery_test_die_step(int rank)
{
    const char *r = getenv("PUNCH_TEST_DIE_RANK"), *s = getenv("PUNCH_TEST_DIE_STEP");
    if (!r || !s || atoi(r) != rank)
        return -1;
    int step = atoi(s);
    return step > 0 ? step : -1;
}
