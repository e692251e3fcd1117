/* dist_watchdog.c — turns a hang into a prompt failure. A rank blocked in
 * a collective whose peer is stopped or spinning never returns from MPI;
 * this thread notices that the rank has not ticked for the limit and ends
 * the process with a message saying which rank and what it was waiting
 * for. It exits the process instead of calling MPI_Abort, because MPI may
 * only be called from the main thread here (MPI_THREAD_FUNNELED); mpirun
 * then tears down every other rank of the job (under --enable-recovery,
 * once this rank has ended it: dist_async_recovery.c). */
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <mpi.h>

#include "distributed/dist_watchdog.h"
#include "distributed/dist_async_recovery.h"
#include "distributed/dist_sync_heartbeat.h"
#include "timeutil/timeutil.h"

static struct {
    pthread_t thread;
    bool running;
    atomic_bool stop;
    atomic_long last_ms;
    _Atomic(const char *) doing;
    atomic_long limit_ms;   /* for the current activity */
    double limit_s;
    int rank;
} dist_wd;

static long dist_wd_now_ms(void)
{
    return (long)(timeutil_mono_s() * 1000.0);
}

static void *dist_wd_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&dist_wd.stop)) {
        usleep(200 * 1000);
        long idle = dist_wd_now_ms() - atomic_load(&dist_wd.last_ms);
        if (idle < atomic_load(&dist_wd.limit_ms))
            continue;
        const char *doing = atomic_load(&dist_wd.doing);
        char late[256];
        if (dist_heartbeat_late(late, sizeof late) > 0)
            fprintf(stderr,
                    "punch-train: rank %d: rank(s) %s did not reach the collective the "
                    "others wait in: hung\n",
                    dist_wd.rank, late);
        fprintf(stderr,
                "punch-train: rank %d: no progress for %.0f s while %s: a rank is hung or "
                "dead; ending the job (watchdog, PUNCH_WATCHDOG_S)\n",
                dist_wd.rank, (double)idle / 1000.0, doing ? doing : "training");
        fflush(stderr);
        dist_recovery_fail_job();
        _exit(70);
    }
    return NULL;
}

int dist_watchdog_start(double limit_s)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &dist_wd.rank);
    dist_wd.limit_s = limit_s;
    atomic_store(&dist_wd.stop, false);
    atomic_store(&dist_wd.last_ms, dist_wd_now_ms());
    atomic_store(&dist_wd.limit_ms, (long)(limit_s * 1000));
    atomic_store(&dist_wd.doing, "starting");
    if (pthread_create(&dist_wd.thread, NULL, dist_wd_main, NULL) != 0)
        return -1;
    dist_wd.running = true;
    return 0;
}

void dist_watchdog_tick(const char *doing)
{
    atomic_store(&dist_wd.last_ms, dist_wd_now_ms());
    atomic_store(&dist_wd.limit_ms, (long)(dist_wd.limit_s * 1000));
    atomic_store(&dist_wd.doing, doing);
}

void dist_watchdog_tick_for(const char *doing, double seconds)
{
    atomic_store(&dist_wd.last_ms, dist_wd_now_ms());
    atomic_store(&dist_wd.limit_ms, (long)(seconds * 1000));
    atomic_store(&dist_wd.doing, doing);
}

void dist_watchdog_tick_patient(const char *doing)
{
    dist_watchdog_tick_for(doing, 2 * dist_wd.limit_s);
}

void dist_watchdog_stop(void)
{
    if (!dist_wd.running)
        return;
    atomic_store(&dist_wd.stop, true);
    pthread_join(dist_wd.thread, NULL);
    dist_wd.running = false;
}
