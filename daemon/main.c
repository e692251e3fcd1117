/* main.c — punchcardd: startup checks, the signal/tick loop, clean shutdown.
 * `punchcardd --supervise ...` is the per-job supervisor (supervisor.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/cgroup.h"
#include "daemon.h"
#include "api/events.h"
#include "http/http.h"
#include "log.h"
#include "sched/memest.h"
#include "http/metrics.h"
#include "sched/monitor.h"
#include "api/pagecache.h"
#include "run/retention.h"
#include "sched/slurm.h"
#include "run/supervisor.h"

/* mkdir -p with mode 0700 for what it creates. */
static bool main_mkdirs(const char *path, char *err, size_t errlen)
{
    char buf[CONFIG_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; ; p++) {
        char c = *p;
        if (c == '/' || c == '\0') {
            *p = '\0';
            if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "--data-dir %s: cannot create %s: %s", path, buf,
                         strerror(errno));
                return false;
            }
            *p = c;
        }
        if (c == '\0')
            break;
    }
    return true;
}

/* Create the data dir and runs/, prove it writable, and lock it so two
 * daemons never share a queue. Returns the lock fd. */
static int main_prepare_data_dir(const config *cfg, char *err, size_t errlen)
{
    char path[CONFIG_PATH_MAX + 32];
    if (!main_mkdirs(cfg->data_dir, err, errlen))
        return -1;
    /* Whoever can write the data dir can replace the queue or a job's run
     * directory (and so what root reads and signals). */
    struct stat st;
    if (stat(cfg->data_dir, &st) != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, errlen,
                 "--data-dir %s is writable by its group or by others (mode %03o): another "
                 "user could replace the queue or a job's files; chmod go-w it",
                 cfg->data_dir, (unsigned)(st.st_mode & 0777));
        return -1;
    }
    snprintf(path, sizeof path, "%s/runs", cfg->data_dir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "--data-dir %s: cannot create runs/: %s", cfg->data_dir,
                 strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/punchcardd.lock", cfg->data_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "--data-dir %s is not writable: %s", cfg->data_dir, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "--data-dir %s is in use by another punchcardd", cfg->data_dir);
        close(fd);
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t)n) != n) {
        snprintf(err, errlen, "--data-dir %s is not writable: %s", cfg->data_dir, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Run directories and dataset roots go to mpirun and the ranks (and, with a
 * hostfile, to other hosts): make them absolute. */
static bool main_absolute_paths(config *cfg, char *err, size_t errlen)
{
    char real[PATH_MAX];
    if (!realpath(cfg->data_dir, real) || strlen(real) >= sizeof cfg->data_dir) {
        snprintf(err, errlen, "--data-dir %s: %s", cfg->data_dir, strerror(errno));
        return false;
    }
    snprintf(cfg->data_dir, sizeof cfg->data_dir, "%s", real);
    char roots[sizeof cfg->datasets] = "";
    size_t used = 0;
    char *save = NULL, *copy = strdup(cfg->datasets);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (char *root = strtok_r(copy, ":", &save); root; root = strtok_r(NULL, ":", &save)) {
        /* A root that does not exist (yet) is kept as given, with a warning. */
        const char *use = realpath(root, real) ? real : root;
        if (use == root)
            log_warn("dataset root %s: %s", root, strerror(errno));
        int n = snprintf(roots + used, sizeof roots - used, "%s%s", used ? ":" : "", use);
        if (n < 0 || (size_t)n >= sizeof roots - used)
            break;
        used += (size_t)n;
    }
    free(copy);
    snprintf(cfg->datasets, sizeof cfg->datasets, "%s", roots);
    return true;
}

/* An executable on PATH into out. */
static bool main_which(const char *name, char *out, size_t cap)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, path, name) < cap &&
            access(out, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

/* The engine: --engine, else ../engine/punch-train next to this binary
 * (the build tree), else punch-train next to it (installed), else PATH. */
/* Whether uid:gid may execute path (every directory above it included):
 * asked in a child that becomes that user, as a job will. */
static bool main_user_can_exec(uid_t uid, gid_t gid, const char *path)
{
    pid_t pid = fork();
    if (pid < 0)
        return true; /* cannot tell: the jobs' own errors will say */
    if (pid == 0) {
        bool ok = setgroups(0, NULL) == 0 && setgid(gid) == 0 && setuid(uid) == 0 &&
                  access(path, X_OK) == 0;
        _exit(ok ? 0 : 1);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return true;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void main_find_programs(daemon_ctx *d)
{
    ssize_t n = readlink("/proc/self/exe", d->self_exe, sizeof d->self_exe - 1);
    d->self_exe[n > 0 ? n : 0] = '\0';
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", d->self_exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (d->cfg.engine[0]) {
        snprintf(d->engine, sizeof d->engine, "%s", d->cfg.engine);
    } else {
        const char *cands[] = {"%s/../engine/punch-train", "%s/punch-train"};
        d->engine[0] = '\0';
        for (size_t i = 0; i < 2 && !d->engine[0]; i++) {
            char c[PATH_MAX + 32];
            snprintf(c, sizeof c, cands[i], dir);
            char real[PATH_MAX];
            if (access(c, X_OK) == 0 && realpath(c, real))
                snprintf(d->engine, sizeof d->engine, "%s", real);
        }
        if (!d->engine[0] && !main_which("punch-train", d->engine, sizeof d->engine))
            snprintf(d->engine, sizeof d->engine, "punch-train");
    }
    if (d->cfg.mpirun[0])
        snprintf(d->mpirun, sizeof d->mpirun, "%s", d->cfg.mpirun);
    else if (!main_which("mpirun", d->mpirun, sizeof d->mpirun))
        snprintf(d->mpirun, sizeof d->mpirun, "mpirun");
    if (access(d->engine, X_OK) != 0)
        log_warn("engine %s is not executable: jobs will fail until it is (set --engine)",
                 d->engine);
    else if (d->run_uid && !main_user_can_exec(d->run_uid, d->run_gid, d->engine))
        log_warn("run_as %s cannot execute the engine %s (a directory above it closed to "
                 "others, e.g. /root?): jobs will fail until it can",
                 d->cfg.run_as, d->engine);
    if (access(d->mpirun, X_OK) != 0)
        log_warn("mpirun %s is not executable: jobs will fail until it is (set --mpirun)",
                 d->mpirun);
    d->lc = (launcher_config){d->self_exe, d->mpirun, d->engine, d->cfg.hostfile,
                              d->cfg.datasets, d->cfg.engine_env, d->cfg.mpirun_args,
                              config_slurm(&d->cfg), geteuid() == 0 && !d->cfg.run_as[0],
                              d->cfg.run_as};
}

/* The first directory on the way to path (path itself included) that the
 * account cannot pass, into out; false when it passes them all. */
static bool main_first_closed(uid_t uid, gid_t gid, const char *path, char *out, size_t cap)
{
    char prefix[CONFIG_PATH_MAX + 8];
    size_t n = strlen(path);
    for (size_t i = 1; i <= n && i < sizeof prefix; i++) {
        if (i < n && path[i] != '/')
            continue;
        snprintf(prefix, sizeof prefix, "%.*s", (int)i, path);
        if (!main_user_can_exec(uid, gid, prefix)) {
            snprintf(out, cap, "%s", prefix);
            return true;
        }
    }
    return false;
}

/* Who jobs run as. Started as root, punchcardd runs them as run_as, or as
 * root only when told so (--allow-root-jobs): a job as root can do
 * anything to the host. The run directories must be reachable by run_as,
 * so the data dir and runs/ get o+x (traverse, not list). */
static bool main_job_user(daemon_ctx *d, char *err, size_t errlen)
{
    d->run_uid = 0;
    d->run_gid = 0;
    bool root = geteuid() == 0;
    if (!d->cfg.run_as[0]) {
        if (root && !d->cfg.allow_root_jobs) {
            snprintf(err, errlen, "punchcardd runs as root and would run every job as root: set "
                                  "run_as (--run-as USER) to an unprivileged account, or pass "
                                  "--allow-root-jobs to run them as root anyway");
            return false;
        }
        if (root)
            log_warn("jobs run as root (--allow-root-jobs): set run_as to run them as an "
                     "unprivileged account");
        return true;
    }
    if (!root) {
        snprintf(err, errlen, "run_as %s: punchcardd must start as root to run jobs as another "
                              "account", d->cfg.run_as);
        return false;
    }
    const struct passwd *pw = getpwnam(d->cfg.run_as);
    if (!pw || pw->pw_uid == 0) {
        snprintf(err, errlen, "run_as %s: %s", d->cfg.run_as,
                 pw ? "is root; name an unprivileged account" : "no such user");
        return false;
    }
    d->run_uid = pw->pw_uid;
    d->run_gid = pw->pw_gid;
    char runs[CONFIG_PATH_MAX + 8];
    snprintf(runs, sizeof runs, "%s/runs", d->cfg.data_dir);
    const char *dirs[] = {d->cfg.data_dir, runs};
    for (size_t i = 0; i < 2; i++) {
        struct stat st;
        if (stat(dirs[i], &st) != 0 || chmod(dirs[i], (st.st_mode & 07777) | S_IXOTH) != 0) {
            snprintf(err, errlen, "run_as %s: cannot let it reach %s: %s", d->cfg.run_as,
                     dirs[i], strerror(errno));
            return false;
        }
    }
    /* The directories above the data dir are not ours to open: a job as
     * run_as behind one it cannot pass would fail with "./job.json: cannot
     * open: Permission denied". */
    char closed[CONFIG_PATH_MAX + 8];
    if (main_first_closed(d->run_uid, d->run_gid, runs, closed, sizeof closed)) {
        snprintf(err, errlen, "run_as %s cannot reach the run directories in %s: %s is closed "
                 "to it (chmod o+x %s, or put data_dir where %s can pass)", d->cfg.run_as,
                 runs, closed, closed, d->cfg.run_as);
        return false;
    }
    log_info("jobs run as %s (uid %d)", d->cfg.run_as, (int)pw->pw_uid);
    return true;
}

/* The rsh agent mpirun uses: `--mca plm_rsh_agent X` in mpirun_args, else
 * OMPI_MCA_plm_rsh_agent from the environment, else NULL (Open MPI's ssh). */
static const char *main_rsh_agent(const char *mpirun_args)
{
    static char agent[CONFIG_PATH_MAX];
    char copy[CONFIG_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", mpirun_args);
    char *save = NULL, *prev = NULL;
    for (char *tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
        if (prev && strcmp(prev, "plm_rsh_agent") == 0) {
            snprintf(agent, sizeof agent, "%s", tok);
            return agent;
        }
        prev = tok;
    }
    return getenv("OMPI_MCA_plm_rsh_agent");
}

/* The hosts, their slots and GPUs. Open MPI 4.1 rejects unknown tokens in
 * a hostfile line, so a host cannot declare its GPUs there: every host has
 * --gpus of them. */
static bool main_resources(daemon_ctx *d, char *err, size_t errlen)
{
    int slots = d->cfg.slots;
    if (d->cfg.hostfile[0] && slots > 0)
        log_warn("--slots %d is ignored with --hostfile: each host has the slots its line "
                 "gives", slots);
    if (slots <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        slots = n > 0 ? (int)n : 1;
    }
    d->cl = cluster_open(d->cfg.hostfile, slots, d->cfg.gpus, err, errlen);
    if (!d->cl)
        return false;
    d->hosts = cluster_hosts(d->cl);
    d->total_slots = cluster_total_slots(d->cl);
    d->total_gpus = d->cfg.gpus * d->hosts;
    d->host_memory = memest_host_memory(d->cfg.host_memory_mb);
    /* Cores: this machine's, or with a hostfile the largest host's slots
     * (other hosts' cores are not known here; slots count them). */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    d->host_cores = cores > 0 ? (int)cores : 0;
    if (d->cfg.hostfile[0]) {
        placement_cluster *cap = malloc(sizeof *cap);
        d->host_cores = 0;
        if (cap) {
            cluster_capacity(d->cl, cap, false);
            for (int h = 0; h < cap->n_hosts; h++)
                d->host_cores = cap->slots[h] > d->host_cores ? cap->slots[h] : d->host_cores;
        }
        free(cap);
    }
    char mem[32];
    if (d->host_memory > 0)
        log_info("jobs may use %s of each host's memory (host_memory_mb %s)",
                 memest_format(d->host_memory, mem, sizeof mem),
                 d->cfg.host_memory_mb > 0 ? "set" : "0: MemTotal less headroom");
    else
        log_warn("cannot tell this host's memory (/proc/meminfo) and host_memory_mb is not "
                 "set: jobs are admitted whatever their memory estimate");
    cluster_probe_command(d->cfg.host_probe, main_rsh_agent(d->cfg.mpirun_args), d->probe_cmd,
                          sizeof d->probe_cmd);
    if (d->cfg.hostfile[0])
        log_info("%d hosts from %s; a down host is probed every %d s with: %s", d->hosts,
                 d->cfg.hostfile, d->cfg.host_probe_interval_s, d->probe_cmd);
    return true;
}

/* scheduler = slurm: the run directories are written here and read and
 * written by the job on Slurm's nodes, so the data dir must be storage
 * every node mounts at the same path. Its writability was checked with the
 * lock; a file system that is local to this machine is only warned about
 * (a single-node Slurm, or a path shared by other means, is fine). */
static void main_slurm_checks(const daemon_ctx *d)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } local_fs[] = {
        {0xEF53, "ext2/3/4"},      {0x58465342, "xfs"},     {0x9123683E, "btrfs"},
        {0x01021994, "tmpfs"},     {0x794C7630, "overlayfs"}, {0xF2F52010, "f2fs"},
        {0x2FC12FC1, "zfs"},
    };
    struct statfs fs;
    if (statfs(d->cfg.data_dir, &fs) != 0) {
        log_warn("scheduler slurm: cannot tell the data dir's file system: %s", strerror(errno));
        return;
    }
    for (size_t i = 0; i < sizeof local_fs / sizeof local_fs[0]; i++)
        if ((unsigned long)fs.f_type == local_fs[i].magic)
            log_warn("scheduler slurm: data dir %s is on %s, a file system local to this "
                     "machine; Slurm's nodes must see it at the same path (shared storage)",
                     d->cfg.data_dir, local_fs[i].name);
    char sbatch[CONFIG_PATH_MAX + 16];
    slurm_site site = {d->cfg.slurm_bin_dir, NULL, NULL, NULL, NULL};
    if (slurm_command(&site, "sbatch", sbatch, sizeof sbatch))
        log_info("scheduler slurm: jobs go to %s%s%s; slots, hostfile, gpus and max-running "
                 "are Slurm's business", sbatch, d->cfg.slurm_partition[0] ? " --partition=" : "",
                 d->cfg.slurm_partition);
}

/* Serve until SIGTERM/SIGINT; SIGHUP reloads the secrets; the tick runs
 * every period and whenever a handler wakes us. */
/* cgroup v2: move into OWN/daemon so jobs' memory cgroups can go beside it
 * (cgroup.h). Before any thread starts, though the move takes them all. */
static void main_cgroup(void)
{
    char dir[4096], why[4400];
    if (cgroup_daemon_setup(dir, sizeof dir, why, sizeof why))
        log_info("cgroup v2: punchcardd moved into %s/" CGROUP_DAEMON_LEAF
                 "; each job's memory ceiling is a cgroup beside it",
                 dir);
    else
        log_info("cgroup v2 not delegated (%s): job memory ceilings use cgroup v1's memory "
                 "hierarchy where writable, else none (Delegate=memory in the systemd unit)",
                 why);
}

static void main_loop(daemon_ctx *d, http_server *http, const sigset_t *set)
{
    struct timespec period = {d->cfg.tick_ms / 1000, (long)(d->cfg.tick_ms % 1000) * 1000000L};
    monitor_tick(d);
    for (;;) {
        siginfo_t info;
        int sig = sigtimedwait(set, &info, &period);
        if (sig == SIGTERM || sig == SIGINT) {
            log_info("%s: no longer accepting connections; running jobs stay with their "
                     "supervisors", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            http_quiesce(http);
            return;
        }
        if (sig == SIGHUP) {
            char err[512];
            if (auth_reload(d->au, err, sizeof err))
                log_info("SIGHUP: secrets reloaded (%zu entries)", auth_count(d->au));
            else
                log_error("SIGHUP: keeping the old secrets: %s", err);
            continue;
        }
        if (sig == DAEMON_WAKE_SIGNAL) {
            /* Coalesce a burst of wake-ups into one tick; only the wake
             * signal, or a SIGTERM collected here would be lost. */
            sigset_t wake;
            sigemptyset(&wake);
            sigaddset(&wake, DAEMON_WAKE_SIGNAL);
            struct timespec zero = {0, 0};
            while (sigtimedwait(&wake, &info, &zero) == DAEMON_WAKE_SIGNAL) {
            }
        }
        monitor_tick(d);
        retention_tick(d, daemon_now());
    }
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--supervise") == 0)
        return supervisor_main(argc - 2, argv + 2);

    static daemon_ctx d;
    char err[4096];
    char self[PATH_MAX];
    ssize_t n_self = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n_self > 0 ? n_self : 0] = '\0';
    config_result cr = config_parse(&d.cfg, argc, argv, self, err, sizeof err);
    if (cr == CONFIG_EXIT)
        return 0;
    if (cr == CONFIG_ERROR) {
        fprintf(stderr, "punchcardd: %s\n", err);
        return 2;
    }
    if (d.cfg.verbose)
        log_set_level(LOG_DEBUG);
    daemon_wake_register(getpid());
    signal(SIGPIPE, SIG_IGN);
    /* Everything punchcardd creates (the store, run directories, logs) is
     * its own: other users read jobs through the API only. */
    umask(077);
    /* Block the signals the loop collects before any thread exists, so every
     * thread inherits the mask. */
    sigset_t set;
    daemon_signal_set(&set);
    sigaddset(&set, DAEMON_WAKE_SIGNAL);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    int status = 1;
    int lock_fd = -1;
    http_server *http = NULL;
    if (!main_resources(&d, err, sizeof err))
        goto fail;
    char why[2048];
    d.au = auth_open(d.cfg.secrets, why, sizeof why);
    if (!d.au) {
        snprintf(err, sizeof err, "secrets file %s", why);
        goto fail;
    }
    struct stat sst;
    if (stat(d.cfg.secrets, &sst) == 0 && (sst.st_mode & 0077))
        log_warn("secrets file %s is readable by other users (chmod 600 it)", d.cfg.secrets);
    lock_fd = main_prepare_data_dir(&d.cfg, err, sizeof err);
    if (lock_fd < 0 || !main_absolute_paths(&d.cfg, err, sizeof err) ||
        !main_job_user(&d, err, sizeof err))
        goto fail;
    char db[CONFIG_PATH_MAX + 32];
    snprintf(db, sizeof db, "%s/punchcard.db", d.cfg.data_dir);
    /* A connection each for the HTTP threads and the main thread, and a
     * spare: under WAL, readers never wait for the writer or each other. */
    /* A store made before the umask (or by hand) may be readable by all:
     * it holds every user's jobs. */
    for (int i = 0; i < 3; i++) {
        char f[CONFIG_PATH_MAX + 40];
        snprintf(f, sizeof f, "%s%s", db, (const char *[]){"", "-wal", "-shm"}[i]);
        if (chmod(f, 0600) != 0 && errno != ENOENT)
            log_warn("%s: cannot make it private (chmod 600): %s", f, strerror(errno));
    }
    d.st = store_open(db, d.cfg.http_threads + 2, err, sizeof err);
    if (!d.st)
        goto fail;
    d.pages = pagecache_new(); /* NULL: every page is encoded afresh */
    main_find_programs(&d);
    if (config_slurm(&d.cfg))
        main_slurm_checks(&d);
    else
        main_cgroup();
    int port = 0;
    int fd = http_listen(d.cfg.listen, &port, err, sizeof err);
    if (fd < 0)
        goto fail;
    http = http_start(&d, fd, err, sizeof err);
    if (!http) {
        close(fd);
        goto fail;
    }
    if (!events_start(&d, err, sizeof err))
        goto fail;
    const char *colon = strrchr(d.cfg.listen, ':');
    int host_len = colon ? (int)(colon - d.cfg.listen) : (int)strlen(d.cfg.listen);
    log_info("punchcardd %s listening on %s://%.*s:%d (port %d); data %s; %d slots; %d GPUs; "
             "%zu secrets; engine %s%s",
             DAEMON_VERSION, d.cfg.tls_cert[0] ? "https" : "http", host_len, d.cfg.listen, port,
             port, d.cfg.data_dir, d.total_slots,
             d.total_gpus, auth_count(d.au), d.engine, d.cfg.hold ? "; holding the queue" : "");
    main_loop(&d, http, &set);
    status = 0;
    goto out;
fail:
    /* Once: the log is stderr already (an error is never below its level). */
    log_error("not starting: %s", err);
out:
    events_stop();
    http_stop(http);
    monitor_cleanup();
    pagecache_free(d.pages);
    store_close(d.st);
    auth_close(d.au);
    cluster_close(d.cl);
    if (lock_fd >= 0)
        close(lock_fd);
    if (status == 0)
        log_info("punchcardd stopped");
    return status;
}
