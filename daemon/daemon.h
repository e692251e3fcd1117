/* daemon.h — the state punchcardd's threads share: settings, the store, the
 * secrets, and how jobs are launched. Created by main.c; the HTTP threads
 * read it, the main thread runs the supervision tick. */
#ifndef PUNCH_DAEMON_H
#define PUNCH_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "http/auth.h"
#include "cluster/cluster.h"
#include "config.h"
#include "run/launcher.h"
#include "store/store.h"

#define DAEMON_VERSION "0.1.0"

typedef struct daemon_ctx {
    config cfg;
    store *st;
    auth *au;
    cluster *cl;       /* the hosts, their use and health */
    int total_slots;   /* of all hosts */
    int hosts;         /* 1 without a hostfile */
    int total_gpus;    /* cfg.gpus on each host */
    double host_memory; /* bytes of a host that jobs may use (memest_host_memory) */
    int host_cores;     /* cores of the largest host (threads_per_worker's bound) */
    uid_t run_uid;      /* cfg.run_as's account, owner of run directories; */
    gid_t run_gid;      /* 0 without run_as (which is never root) */
    char probe_cmd[CONFIG_PATH_MAX]; /* cluster_probe_command() of cfg.host_probe */
    char self_exe[PATH_MAX];
    char engine[PATH_MAX];
    char mpirun[PATH_MAX];
    launcher_config lc;
    atomic_bool slurm_down; /* scheduler = slurm: the last squeue or sbatch
                               could not reach slurmctld (submits get 503) */
    struct pagecache *pages; /* recent job-list replies (pagecache.h); NULL: none */
} daemon_ctx;

/* UNIX time now, in seconds: the clock of every time the daemon stores or
 * shows (timeutil_wall_s). */
double daemon_now(void);

/* Fill set with the signals every punchcardd process (the server and each
 * job's supervisor) takes through sigtimedwait instead of handlers: SIGTERM
 * and SIGINT (stop), SIGHUP, SIGCHLD (a child ended). The caller blocks
 * them before it starts any thread or child, so none is lost in between. */
void daemon_signal_set(sigset_t *set);

/* The signal that carries a wake-up. Every thread of punchcardd blocks it
 * (the mask is set before the first thread starts), so no handler ever runs:
 * the main loop collects it with sigtimedwait. */
#define DAEMON_WAKE_SIGNAL SIGUSR1

/* Name the process whose main loop collects wake-ups: main.c calls this with
 * its own pid before it starts any thread. */
void daemon_wake_register(pid_t pid);

/* Ask the main loop to run the tick now (a job was submitted or a stop
 * requested) instead of at the next period: DAEMON_WAKE_SIGNAL to the
 * registered process. Does nothing while none is registered (unit tests
 * drive the tick themselves). Safe from any thread. */
void daemon_wake(void);

#endif
