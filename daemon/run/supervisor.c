/* supervisor.c — runs one job's mpirun and records how it ended. */
#include "run/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/io_file.h"
#include "io/tensorfile.h"
#include "run/cgroup.h"
#include "daemon.h"
#include "run/launcher.h"
#include "sched/memest.h"
#include "run/rundir.h"
#include "timeutil/timeutil.h"

static void supervisor_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line in train.log, where the user reads the job's story: without the
 * server's paths (rundir_hide_internals). */
static void supervisor_say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rundir_hide_internals(line);
    fprintf(stderr, "punchcardd supervisor: %s\n", line);
    fflush(stderr);
}

/* A usage figure for exit.json: null when unknown. */
static void supervisor_figure(char *buf, size_t len, double v, const char *fmt)
{
    if (v < 0)
        snprintf(buf, len, "null");
    else
        snprintf(buf, len, fmt, v);
}

/* What the job used on this host: the cgroup's counts where it has them
 * (every process of the job, strays included), else the rusage of the
 * children waited for (mpirun and, through it, the local ranks; peak is
 * then the largest single process's RSS). */
static void supervisor_usage(const cgroup_job *cg, double *cpu_s, double *peak_bytes)
{
    double cg_cpu, cg_peak;
    cgroup_job_usage(cg, &cg_cpu, &cg_peak);
    struct rusage ru;
    double ru_cpu = -1, ru_peak = -1;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
        ru_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        ru_peak = (double)ru.ru_maxrss * 1024; /* kilobytes on Linux */
    }
    *cpu_s = cg_cpu >= 0 ? cg_cpu : ru_cpu;
    *peak_bytes = cg_peak > 0 ? cg_peak : ru_peak;
}

static int supervisor_write_exit(const char *rundir, int code, int sig, double cpu_s,
                                 double peak_bytes)
{
    char text[256], err[512], cpu[32], peak[32];
    supervisor_figure(cpu, sizeof cpu, cpu_s, "%.3f");
    supervisor_figure(peak, sizeof peak, peak_bytes, "%.0f");
    snprintf(text, sizeof text,
             "{\"exit_code\": %d, \"signal\": %d, \"ended_at\": %.3f, \"cpu_s\": %s, "
             "\"peak_rss_bytes\": %s}\n", code, sig, timeutil_wall_s(), cpu, peak);
    if (!rundir_write_atomic(rundir, "exit.json", text, strlen(text), err, sizeof err)) {
        supervisor_say("cannot record the exit status: %s", err);
        return 1;
    }
    return 0;
}

/* In mpirun's child: become user `name` for good (groups, gid, uid), with
 * HOME in the run directory (the account's may not exist or be writable). */
/* No process of the job is left to finish a write: what a killed rank had
 * half-written (a checkpoint's temporary file, 39 MB for convnet) would
 * otherwise stay in the run directory for good. */
static void supervisor_sweep(const char *rundir)
{
    static const char *const dirs[] = {"", "/checkpoints"};
    int removed = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s%s", rundir, dirs[i]);
        int n = atomic_write_sweep(path);
        removed += n > 0 ? n : 0;
    }
    if (removed > 0)
        supervisor_say("removed %d unfinished temporary files of a killed write", removed);
}

static bool supervisor_become(const char *name, const char *rundir)
{
    const struct passwd *pw = getpwnam(name);
    if (!pw) {
        fprintf(stderr, "punchcardd supervisor: run_as %s: no such user\n", name);
        return false;
    }
    if (initgroups(name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0 || setuid(0) == 0) {
        fprintf(stderr, "punchcardd supervisor: cannot become %s: %s\n", name, strerror(errno));
        return false;
    }
    setenv("HOME", rundir, 1);
    setenv("USER", name, 1);
    setenv("LOGNAME", name, 1);
    return true;
}

int supervisor_main(int argc, char **argv)
{
    /* RUNDIR [--memory-max BYTES] [--run-as USER] [--env NAME=VALUE]... --
     * COMMAND [ARGS...] */
    int i = 1;
    double memory_max = 0;
    const char *run_as = NULL;
    if (i + 1 < argc && strcmp(argv[i], "--memory-max") == 0) {
        memory_max = strtod(argv[i + 1], NULL);
        i += 2;
    }
    if (i + 1 < argc && strcmp(argv[i], "--run-as") == 0) {
        run_as = argv[i + 1];
        i += 2;
    }
    int first_env = i;
    while (i + 1 < argc && strcmp(argv[i], "--env") == 0)
        i += 2;
    if (argc < i + 2 || strcmp(argv[i], "--") != 0) {
        fprintf(stderr, "usage: punchcardd --supervise RUNDIR [--memory-max BYTES] "
                        "[--run-as USER] [--env NAME=VALUE]... -- COMMAND [ARGS...]\n");
        return 2;
    }
    const char *rundir = argv[0];
    char **cmd = argv + i + 1;
    int n_env = (i - first_env) / 2;
    char **env = argv + first_env;
    /* Signals arrive through sigtimedwait only, so none is lost between a
     * check and a wait. */
    sigset_t set;
    daemon_signal_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    cgroup_job cg = {.dir = ""};
    if (memory_max > 0) {
        char why[600], mem[32];
        const char *base = strrchr(rundir, '/');
        if (cgroup_job_create(&cg, base ? base + 1 : rundir, memory_max, why, sizeof why))
            supervisor_say("memory ceiling %s (cgroup v%d)",
                           memest_format(memory_max, mem, sizeof mem), cg.version);
        else
            supervisor_say("no memory ceiling for this job: %s", why);
    }
    /* The child says when its session exists: supervisor.json names the
     * session only then, so a stop that follows at once finds it. */
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) {
        supervisor_say("pipe: %s", strerror(errno));
        return supervisor_write_exit(rundir, 127, 0, -1, -1);
    }
    pid_t child = fork();
    if (child < 0) {
        supervisor_say("fork: %s", strerror(errno));
        return supervisor_write_exit(rundir, 127, 0, -1, -1);
    }
    if (child == 0) {
        setsid();
        close(ready[0]);
        if (write(ready[1], "s", 1) != 1)
            _exit(127);
        close(ready[1]);
        if (cg.dir[0] && !cgroup_job_enter(&cg))
            fprintf(stderr, "punchcardd supervisor: cannot enter its cgroup: %s; the job runs "
                            "without a memory ceiling\n", strerror(errno));
        for (int e = 0; e < n_env; e++)
            putenv(env[2 * e + 1]);
        if (run_as && !supervisor_become(run_as, rundir))
            _exit(126);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execvp(cmd[0], cmd);
        fprintf(stderr, "punchcardd supervisor: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    close(ready[1]);
    char byte;
    (void)io_read_full(ready[0], &byte, 1); /* mpirun is exec'd: the pipe closes */
    close(ready[0]);
    /* mpirun is our child and is not reaped until the end, so its pid (the
     * session id) stays its own while we read its start time. */
    long long self_start = -1, child_start = -1;
    launcher_proc_stat(getpid(), &self_start, NULL, NULL);
    launcher_proc_stat(child, &child_start, NULL, NULL);
    char text[200], err[512];
    snprintf(text, sizeof text,
             "{\"supervisor_pid\": %d, \"supervisor_start\": %lld, \"sid\": %d, "
             "\"sid_start\": %lld}\n",
             (int)getpid(), self_start, (int)child, child_start);
    if (!rundir_write_atomic(rundir, "supervisor.json", text, strlen(text), err, sizeof err))
        supervisor_say("%s", err);

    bool forwarded = false;
    for (;;) {
        /* WNOWAIT: an ended mpirun stays a zombie, holding the session's
         * number, until the strays below are killed. */
        siginfo_t info = {0};
        int w = waitid(P_PID, (id_t)child, &info, WEXITED | WNOHANG | WNOWAIT);
        if (w == 0 && info.si_pid == child)
            break;
        if (w < 0 && errno != EINTR) {
            supervisor_say("waitid: %s", strerror(errno));
            break;
        }
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(&set, NULL, &tick);
        if ((sig == SIGTERM || sig == SIGINT) && !forwarded) {
            /* Asked to stop: SIGTERM to the ranks, which end their step and
             * checkpoint, not to mpirun, which would SIGKILL them a second
             * later (Open MPI's odls_base_sigkill_timeout; raising it makes
             * mpirun sleep that long on every abnormal end). mpirun sees
             * its ranks end and ends. With no rank here (all on other
             * hosts), mpirun itself is told to stop its job. */
            supervisor_say("stop requested: SIGTERM to the job (session %d)", (int)child);
            if (launcher_signal_members(child, child_start, SIGTERM) <= 0)
                launcher_signal_session(child, child_start, SIGTERM);
            forwarded = true;
        }
    }
    /* mpirun is gone; nothing of the job may outlive it. */
    int strays = launcher_signal_session(child, child_start, SIGKILL);
    if (strays > 0)
        supervisor_say("killed %d stray processes", strays);
    supervisor_sweep(rundir);
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(child, &status, 0)) < 0 && errno == EINTR)
        ;
    if (reaped != child) {
        supervisor_say("waitpid: %s", strerror(errno));
        status = 127 << 8;
    }
    int code = 0, sig = 0;
    if (WIFEXITED(status)) {
        code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        sig = WTERMSIG(status);
        code = 128 + sig;
    }
    supervisor_say("mpirun ended: exit code %d, signal %d", code, sig);
    /* Last, so the job's error names it (rundir_failure_line). */
    long ooms = cgroup_job_oom_kills(&cg);
    if (ooms > 0) {
        char mem[32];
        supervisor_say("the job went past its memory ceiling of %s: the kernel killed %ld of "
                       "its processes", memest_format(memory_max, mem, sizeof mem), ooms);
    }
    double cpu_s, peak_bytes;
    supervisor_usage(&cg, &cpu_s, &peak_bytes);
    cgroup_job_remove(&cg);
    return supervisor_write_exit(rundir, code, sig, cpu_s, peak_bytes);
}
