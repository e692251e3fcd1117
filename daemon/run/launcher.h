/* launcher.h — starting a job's supervisor and signalling its processes.
 *
 * Process layout of a running job:
 *   punchcardd ── supervisor (punchcardd --supervise; own session) ── mpirun
 *                                                 (own session S) ── ranks
 * Open MPI puts each rank in its own process group but they stay in mpirun's
 * session, so "the job's processes" are those whose session id is S; signals
 * go to each of them. The supervisor outlives punchcardd, waits for mpirun,
 * kills anything left in S, and writes exit.json. */
#ifndef PUNCH_LAUNCHER_H
#define PUNCH_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct launcher_config {
    const char *self_exe;   /* this binary, run as the supervisor */
    const char *mpirun;
    const char *engine;     /* punch-train */
    const char *hostfile;   /* the cluster's hostfile; NULL or "" for the local host */
    const char *datasets;   /* colon-separated dataset roots */
    const char *engine_env; /* "NAME=VALUE ..." for mpirun and the ranks; NULL or "" */
    const char *mpirun_args; /* appended to every mpirun, split on whitespace; NULL or "" */
    bool slurm;             /* mpirun runs inside a Slurm allocation (scheduler = slurm) */
    bool root_jobs;         /* jobs run as root (--allow-root-jobs): mpirun gets
                               --allow-run-as-root, which it otherwise refuses */
    const char *run_as;     /* the account jobs run as; NULL or "": punchcardd's own */
} launcher_config;

/* The argv (NULL-terminated, heap) of the mpirun command for a job whose run
 * directory is rundir. gpu_devices (NULL or "": none) is the job's
 * CUDA_VISIBLE_DEVICES, which mpirun is told to export to every rank.
 *
 * Transport: `--mca btl self,vader` on the local host (shared memory);
 * with a cluster hostfile `--mca btl self,vader,tcp` (shared memory within
 * a host, TCP between hosts) and `--hostfile RUNDIR/hostfile --map-by slot`:
 * the job's own allocation (placement_hostfile(), written there by the
 * monitor), filled in order, so rank 0 runs on its first host. Inside a
 * Slurm allocation (lc->slurm) also `self,vader,tcp`, with no hostfile:
 * mpirun takes the nodes from Slurm's environment. The words of
 * lc->mpirun_args follow the daemon's own arguments; when they set the btl
 * themselves (`--mca btl ...`), the daemon's is left out, because Open MPI
 * refuses a parameter given twice. rank_memory_max > 0: every rank's data
 * memory ceiling in bytes, exported as PUNCH_RANK_MEMORY_MAX (punch-train
 * applies it as RLIMIT_DATA, engine/train/memlimit.h), which bounds ranks on
 * hosts outside the job's cgroup. A job whose trainer (the store's name for
 * it; NULL: none) is a parameter-server one (downpour, adag, dynsgd, aeasgd, eamsgd) also
 * gets `--enable-recovery`, so that its server trains on when a worker
 * dies; punch-train then ends mpirun itself on a failure, which such an
 * mpirun would otherwise not report (docs/distributed.md). Free with
 * launcher_argv_free(). */
char **launcher_mpirun_argv(const launcher_config *lc, const char *rundir, int ranks,
                            int threads, const char *gpu_devices, double rank_memory_max,
                            const char *trainer);
void launcher_argv_free(char **argv);

/* Fork the supervisor for rundir (which holds job.json); its output and that
 * of mpirun go to rundir/train.log. With lc->run_as the supervisor runs
 * mpirun as that account (it stays root itself: it writes supervisor.json
 * and exit.json, and makes the job's cgroup). A job given GPU devices ("0,1"; NULL or
 * "" for none) runs with CUDA_VISIBLE_DEVICES set to them, so punch-train's
 * ranks choose among those devices only. memory_max > 0: the job's memory
 * ceiling in bytes, which the supervisor enforces with a cgroup (cgroup.h)
 * on this host, and every rank of a CPU job as its share of it
 * (launcher_rank_memory_max) wherever it runs. A GPU job's ranks get no
 * RLIMIT_DATA: the CUDA libraries map pinned and private memory of their
 * own that no estimate here counts.
 * Returns its pid, or -1 with *err set. */
pid_t launcher_start(const launcher_config *lc, const char *rundir, int ranks, int threads,
                     const char *gpu_devices, double memory_max, const char *trainer, char *err,
                     size_t errlen);

/* Each rank's share of a job's memory ceiling: memory_max / ranks, but at
 * least 2 GiB (or memory_max when that is less); 0 for a GPU job
 * (gpu_devices non-empty) or without a ceiling. */
double launcher_rank_memory_max(double memory_max, int ranks, const char *gpu_devices);

/* Start time (clock ticks since boot) and state letter of a process from
 * /proc/PID/stat; false if it does not exist. */
bool launcher_proc_stat(pid_t pid, long long *start, char *state, pid_t *session);

/* True if pid is alive (not a zombie) and started at `start`. */
bool launcher_alive(pid_t pid, long long start);

/* A process is known by its pid and its start time together: a pid alone is
 * reused once the process is gone (pid_max wraps in minutes on a busy host),
 * and a signal sent on the strength of a pid recorded earlier could reach a
 * stranger. Every signal of the daemon and the supervisor goes through these
 * two functions; each opens a pidfd, then checks the start time, then
 * signals through the pidfd, so the number cannot change hands between the
 * check and the signal. */

/* Send sig to the process pid if it is the one that started at `start`
 * (alive, or a zombie not yet reaped). True if signalled. */
bool launcher_signal_verified(pid_t pid, long long start, int sig);

/* Send sig to every live process of session sid, whose leader (the process
 * sid, which called setsid()) must still be the one that started at
 * sid_start, alive or a zombie not yet reaped: while it holds the number, no
 * other session can have that id. Returns how many were signalled, or -1
 * when the leader is not the job's own (the number belongs to another
 * process, or nothing holds it any more and any process still in a session
 * of that id cannot be told from a stranger's): then nothing is signalled. */
int launcher_signal_session(pid_t sid, long long sid_start, int sig);

/* The same for every process of the session but its leader (mpirun). */
int launcher_signal_members(pid_t sid, long long sid_start, int sig);

#endif
