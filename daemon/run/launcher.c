/* launcher.c — fork/exec of the supervisor, /proc-based process checks, and
 * signals that reach only the process that was meant (launcher.h). */
#include "run/launcher.h"
#include "jobspec/spec.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <unistd.h>

void launcher_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* Append a formatted argument; on failure leaves *ok false. */
static void launcher_push(char **argv, int *n, bool *ok, const char *fmt, const char *s)
{
    char *a = NULL;
    if (asprintf(&a, fmt, s) < 0) {
        *ok = false;
        return;
    }
    argv[(*n)++] = a;
}

/* Do the words of args set MCA parameter `name` (--mca NAME VALUE)? */
static bool launcher_args_set_mca(const char *args, const char *name)
{
    static const char *const flags[] = {"--mca", "-mca", "--gmca", "-gmca"};
    char *copy = strdup(args);
    if (!copy)
        return false;
    bool found = false, after_flag = false;
    char *save = NULL;
    for (char *tok = strtok_r(copy, " \t\n", &save); tok && !found;
         tok = strtok_r(NULL, " \t\n", &save)) {
        found = after_flag && strcmp(tok, name) == 0;
        after_flag = false;
        for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
            after_flag |= strcmp(tok, flags[i]) == 0;
    }
    free(copy);
    return found;
}

double launcher_rank_memory_max(double memory_max, int ranks, const char *gpu_devices)
{
    if (memory_max <= 0 || ranks < 1 || (gpu_devices && gpu_devices[0]))
        return 0;
    /* RLIMIT_DATA also counts what no estimate sees: the libraries'
     * writable segments (about 190 MiB in a CUDA build) and OpenBLAS's
     * 128 MiB buffer per thread, which it retries forever when malloc
     * fails. A floor of 2 GiB keeps a rank clear of that; the limit is
     * there to stop a runaway rank on a host the cgroup does not reach. */
    const double floor = 2.0 * 1024 * 1024 * 1024;
    double share = memory_max / ranks;
    if (share < floor)
        share = memory_max < floor ? memory_max : floor;
    return share;
}

/* Whether the job's trainer (its store record's name for it) is a
 * parameter-server one, whose server trains on when a worker dies, provided
 * mpirun lets the job outlive it (docs/distributed.md, "A lost worker").
 * The name comes from the store, never from parsing job.json at start. */
static bool launcher_trainer_is_async(const char *trainer)
{
    if (!trainer)
        return false;
    for (spec_trainer t = TRAINER_SINGLE; t <= TRAINER_EAMSGD; t++)
        if (strcmp(trainer, spec_trainer_name(t)) == 0)
            return spec_trainer_is_async(t);
    return false;
}

char **launcher_mpirun_argv(const launcher_config *lc, const char *rundir, int ranks,
                            int threads, const char *gpu_devices, double rank_memory_max,
                            const char *trainer)
{
    const char *extra = lc->mpirun_args ? lc->mpirun_args : "";
    size_t n_extra = 0;
    for (const char *p = extra; *p; p++)
        n_extra += !isspace((unsigned char)p[0]) && (p[1] == '\0' || isspace((unsigned char)p[1]));
    char **argv = calloc(40 + n_extra, sizeof *argv);
    if (!argv)
        return NULL;
    int n = 0;
    bool ok = true;
    bool hosts = lc->hostfile && lc->hostfile[0];
    char num[32];
    launcher_push(argv, &n, &ok, "%s", lc->mpirun);
    snprintf(num, sizeof num, "%d", ranks);
    const char *fixed[] = {"-np", num, "--oversubscribe", "--bind-to", "none", "--mca", "pml",
                           "ob1"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        launcher_push(argv, &n, &ok, "%s", fixed[i]);
    if (launcher_trainer_is_async(trainer))
        launcher_push(argv, &n, &ok, "%s", "--enable-recovery");
    if (!launcher_args_set_mca(extra, "btl")) {
        launcher_push(argv, &n, &ok, "%s", "--mca");
        launcher_push(argv, &n, &ok, "%s", "btl");
        launcher_push(argv, &n, &ok, "%s", hosts || lc->slurm ? "self,vader,tcp" : "self,vader");
    }
    if (hosts && !lc->slurm) {
        launcher_push(argv, &n, &ok, "%s", "--hostfile");
        launcher_push(argv, &n, &ok, "%s/hostfile", rundir);
        launcher_push(argv, &n, &ok, "%s", "--map-by");
        launcher_push(argv, &n, &ok, "%s", "slot");
    }
    if (lc->root_jobs)
        launcher_push(argv, &n, &ok, "%s", "--allow-run-as-root");
    if (gpu_devices && gpu_devices[0]) {
        /* Set in mpirun's environment by the supervisor; -x also carries it
         * to a host named in a one-host hostfile. */
        launcher_push(argv, &n, &ok, "%s", "-x");
        launcher_push(argv, &n, &ok, "%s", "CUDA_VISIBLE_DEVICES");
    }
    /* The engine runs OpenBLAS on one thread per pool thread and says so
     * (openblas_set_num_threads(1)), but only after OpenBLAS has started
     * its own server at load: a thread and a buffer per core, 2.2 GB of
     * data on a 16-core host, enough to crash a rank under its
     * RLIMIT_DATA share before main() runs. Set before load, nothing starts. */
    launcher_push(argv, &n, &ok, "%s", "-x");
    launcher_push(argv, &n, &ok, "%s", "OPENBLAS_NUM_THREADS=1");
    if (rank_memory_max > 0) {
        launcher_push(argv, &n, &ok, "%s", "-x");
        snprintf(num, sizeof num, "%.0f", rank_memory_max);
        launcher_push(argv, &n, &ok, "PUNCH_RANK_MEMORY_MAX=%s", num);
    }
    char *copy = strdup(extra), *save = NULL;
    ok = ok && copy;
    for (char *tok = copy ? strtok_r(copy, " \t\n", &save) : NULL; tok;
         tok = strtok_r(NULL, " \t\n", &save))
        launcher_push(argv, &n, &ok, "%s", tok);
    free(copy);
    launcher_push(argv, &n, &ok, "%s", lc->engine);
    launcher_push(argv, &n, &ok, "%s/job.json", rundir);
    launcher_push(argv, &n, &ok, "%s", "--out");
    launcher_push(argv, &n, &ok, "%s", rundir);
    launcher_push(argv, &n, &ok, "%s", "--datasets");
    launcher_push(argv, &n, &ok, "%s", lc->datasets);
    launcher_push(argv, &n, &ok, "%s", "--threads");
    snprintf(num, sizeof num, "%d", threads);
    launcher_push(argv, &n, &ok, "%s", num);
    /* A resumed job (POST .../resume) continues from its checkpoint; a new
     * job's run directory has none. */
    char ckpt[4200];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints/ckpt.bin", rundir);
    if (access(ckpt, F_OK) == 0)
        launcher_push(argv, &n, &ok, "%s", "--resume");
    if (!ok) {
        launcher_argv_free(argv);
        return NULL;
    }
    return argv;
}

pid_t launcher_start(const launcher_config *lc, const char *rundir, int ranks, int threads,
                     const char *gpu_devices, double memory_max, const char *trainer, char *err,
                     size_t errlen)
{
    char **mpi = launcher_mpirun_argv(lc, rundir, ranks, threads, gpu_devices,
                                      launcher_rank_memory_max(memory_max, ranks, gpu_devices),
                                      trainer);
    bool gpus = gpu_devices && gpu_devices[0];
    char *cuda_env = NULL;
    if (gpus && asprintf(&cuda_env, "CUDA_VISIBLE_DEVICES=%s", gpu_devices) < 0)
        cuda_env = NULL;
    int n_mpi = 0;
    while (mpi && mpi[n_mpi])
        n_mpi++;
    /* argv: SELF --supervise RUNDIR [--memory-max BYTES] [--run-as USER]
     *       [--env NAME=VALUE]... -- MPIRUN... */
    char *env_copy = strdup(lc->engine_env ? lc->engine_env : "");
    size_t n_env = 0;
    for (const char *p = env_copy ? env_copy : ""; *p; p++)
        n_env += *p == '=';
    char **argv = mpi && env_copy && (!gpus || cuda_env)
                      ? calloc((size_t)n_mpi + 2 * n_env + 11, sizeof *argv)
                      : NULL;
    char log_path[4096];
    if (!argv || snprintf(log_path, sizeof log_path, "%s/train.log", rundir) >= (int)sizeof log_path) {
        launcher_argv_free(mpi);
        free(argv);
        free(env_copy);
        free(cuda_env);
        snprintf(err, errlen, "out of memory or path too long");
        return -1;
    }
    argv[0] = (char *)lc->self_exe;
    argv[1] = (char *)"--supervise";
    argv[2] = (char *)rundir;
    int k = 3;
    char limit[32];
    if (memory_max > 0) {
        snprintf(limit, sizeof limit, "%.0f", memory_max);
        argv[k++] = (char *)"--memory-max";
        argv[k++] = limit;
    }
    if (lc->run_as && lc->run_as[0]) {
        argv[k++] = (char *)"--run-as";
        argv[k++] = (char *)lc->run_as;
    }
    char *save = NULL;
    for (char *tok = strtok_r(env_copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (!strchr(tok, '='))
            continue;
        argv[k++] = (char *)"--env";
        argv[k++] = tok;
    }
    if (cuda_env) {
        /* After --engine-env: the daemon's allocation wins over a fixed value. */
        argv[k++] = (char *)"--env";
        argv[k++] = cuda_env;
    }
    argv[k++] = (char *)"--";
    for (int i = 0; i < n_mpi; i++)
        argv[k++] = mpi[i];
    pid_t pid = fork();
    if (pid == 0) {
        /* Child of a multithreaded process: async-signal-safe calls only. */
        setsid();
        int logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int nullfd = open("/dev/null", O_RDONLY);
        if (logfd < 0 || nullfd < 0)
            _exit(126);
        dup2(nullfd, STDIN_FILENO);
        dup2(logfd, STDOUT_FILENO);
        dup2(logfd, STDERR_FILENO);
        /* Nothing of the daemon's (listening socket, database) may leak into
         * a process that outlives it. */
        syscall(SYS_close_range, 3U, ~0U, 0U);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(lc->self_exe, argv);
        _exit(127);
    }
    int saved = errno;
    free(argv);
    free(env_copy);
    free(cuda_env);
    launcher_argv_free(mpi);
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(saved));
        return -1;
    }
    return pid;
}

bool launcher_proc_stat(pid_t pid, long long *start, char *state, pid_t *session)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* The command name (field 2) may contain spaces and parentheses: the
     * fields we want follow the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return false;
    char st = 0;
    int ppid = 0, pgrp = 0, sid = 0;
    unsigned long long starttime = 0;
    /* Fields 3..22: state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime cutime cstime priority nice threads
     * itrealvalue starttime. */
    if (sscanf(p + 1, " %c %d %d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &st, &ppid, &pgrp, &sid, &starttime) != 5)
        return false;
    if (start)
        *start = (long long)starttime;
    if (state)
        *state = st;
    if (session)
        *session = sid;
    return true;
}

bool launcher_alive(pid_t pid, long long start)
{
    long long s;
    char st;
    if (pid <= 1 || !launcher_proc_stat(pid, &s, &st, NULL))
        return false;
    return s == start && st != 'Z' && st != 'X';
}

/* A pidfd for pid if it is (still) the process that started at `start`, in
 * session `sid` unless sid is 0; -1 otherwise. The pidfd is opened first and
 * the start time read after: if the number had been reused in between, the
 * start time read would be the newcomer's, and the check fails. */
static int launcher_pidfd_verified(pid_t pid, long long start, pid_t sid)
{
    if (pid <= 1)
        return -1;
    int fd = pidfd_open(pid, 0);
    if (fd < 0)
        return -1;
    long long s;
    char st;
    pid_t in;
    if (!launcher_proc_stat(pid, &s, &st, &in) || (start >= 0 && s != start) ||
        (sid > 0 && in != sid) || st == 'X') {
        close(fd);
        return -1;
    }
    return fd;
}

bool launcher_signal_verified(pid_t pid, long long start, int sig)
{
    if (start < 0)
        return false;
    int fd = launcher_pidfd_verified(pid, start, 0);
    if (fd < 0)
        return false;
    bool ok = pidfd_send_signal(fd, sig, NULL, 0) == 0;
    close(fd);
    return ok;
}

static int launcher_signal_in_session(pid_t sid, long long sid_start, int sig, bool members_only)
{
    if (sid <= 1 || sid_start < 0)
        return -1;
    /* The leader, leader of its own session, holds the number sid. */
    int leader = launcher_pidfd_verified(sid, sid_start, sid);
    if (leader < 0)
        return -1;
    DIR *d = opendir("/proc");
    if (!d) {
        close(leader);
        return 0;
    }
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        pid_t s;
        char st;
        if ((members_only && pid == sid) || !launcher_proc_stat(pid, NULL, &st, &s) ||
            s != sid || st == 'Z' || st == 'X')
            continue;
        int fd = launcher_pidfd_verified(pid, -1, sid);
        if (fd < 0)
            continue;
        /* The member was seen in session sid after its pidfd was opened;
         * the leader still holding its number now means that session was
         * the job's all along. */
        long long again;
        if (launcher_proc_stat(sid, &again, NULL, NULL) && again == sid_start &&
            pidfd_send_signal(fd, sig, NULL, 0) == 0)
            count++;
        close(fd);
    }
    closedir(d);
    close(leader);
    return count;
}

int launcher_signal_session(pid_t sid, long long sid_start, int sig)
{
    return launcher_signal_in_session(sid, sid_start, sig, false);
}

int launcher_signal_members(pid_t sid, long long sid_start, int sig)
{
    return launcher_signal_in_session(sid, sid_start, sig, true);
}
