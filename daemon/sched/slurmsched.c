/* slurmsched.c — queued jobs to sbatch, Slurm's states back (contract in
 * slurmsched.h). */
#include "sched/slurmsched.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "sched/joblist.h"
#include "sched/scheduler.h"
#include "sched/settle.h"
#include "run/rundir.h"
#include "sched/slurm.h"
#include "sweep/sweep.h"
#include "timeutil/timeutil.h"

/* squeue at most this often: every tick would load slurmctld for nothing. */
#define SLURMSCHED_POLL_S 1.0
/* The most of a command's output kept. */
#define SLURMSCHED_OUT_MAX (1 << 20)
/* Slurm jobs read from one squeue. */
#define SLURMSCHED_MAX_JOBS 4096
/* Longest a Slurm command may take before it is killed and counts as
 * failed (the client's own retries last about MessageTimeout, 10 s). */
#define SLURMSCHED_COMMAND_TIMEOUT_S 30

static double last_poll = -1e9;

typedef struct out_buf {
    char *p;
    size_t n;
} out_buf;

static void slurmsched_append(out_buf *b, const char *data, size_t len)
{
    if (b->n + len > SLURMSCHED_OUT_MAX)
        return;
    char *p = realloc(b->p, b->n + len + 1);
    if (!p)
        return;
    memcpy(p + b->n, data, len);
    b->n += len;
    p[b->n] = '\0';
    b->p = p;
}

/* Run argv to its end (at most SLURMSCHED_COMMAND_TIMEOUT_S) with stdin
 * from /dev/null; its stdout and stderr into *out and *err (heap,
 * NUL-terminated, never NULL unless out of memory). True if it exited 0. */
static bool slurmsched_run(char *const *argv, char **out, char **err)
{
    out_buf b[2] = {{NULL, 0}, {NULL, 0}};
    int po[2], pe[2];
    *out = *err = NULL;
    if (pipe2(po, O_CLOEXEC) != 0)
        return false;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* The daemon's blocked signals would stay blocked in the command. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
            _exit(127);
        execvp(argv[0], argv);
        /* Only async-signal-safe calls after fork in a threaded process. */
        static const char msg[] = "cannot run a Slurm command (execvp failed)\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return false;
    }
    /* A hung command (slurmctld overloaded) must not hold the tick, and so
     * the daemon's signal handling, for ever: past the deadline it is
     * killed (our child, not yet reaped, so the pid is still ours). */
    double deadline = timeutil_mono_s() + SLURMSCHED_COMMAND_TIMEOUT_S;
    bool timed_out = false;
    int open_fds = 2;
    while (open_fds > 0) {
        double left = deadline - timeutil_mono_s();
        if (left <= 0) {
            timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        int ready = poll(fds, 2, (int)(left * 1000) + 1);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            char chunk[4096];
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            slurmsched_append(&b[i], chunk, (size_t)r);
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    *out = b[0].p ? b[0].p : strdup("");
    if (timed_out) {
        free(b[1].p);
        b[1].p = NULL;
        if (asprintf(err, "%s: no answer within %d s (killed)", argv[0],
                     SLURMSCHED_COMMAND_TIMEOUT_S) < 0)
            *err = NULL;
        return false;
    }
    *err = b[1].p ? b[1].p : strdup("");
    return *out && *err && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The first line of text, printable, into out. */
static void slurmsched_first_line(const char *text, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", (int)strcspn(text ? text : "", "\n"), text ? text : "");
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
}

/* A failed command: was it because slurmctld cannot be reached? Then note
 * it (once in the log) and return true. */
static bool slurmsched_note_down(daemon_ctx *d, const char *what, const char *err)
{
    if (!slurm_unreachable(err ? err : ""))
        return false;
    char line[300];
    slurmsched_first_line(err, line, sizeof line);
    if (!atomic_exchange(&d->slurm_down, true))
        log_error("Slurm: %s cannot reach slurmctld (%s); submits get 503 until it answers", what,
                  line);
    return true;
}

static void slurmsched_note_up(daemon_ctx *d)
{
    if (atomic_exchange(&d->slurm_down, false))
        log_info("Slurm: slurmctld answers again; following its jobs");
}

static slurm_site slurmsched_site(const daemon_ctx *d)
{
    return (slurm_site){d->cfg.slurm_bin_dir, d->cfg.slurm_partition, d->cfg.slurm_account,
                        d->cfg.slurm_qos, d->cfg.slurm_args};
}

static slurm_job slurmsched_job(const store_job *job, const char *dir)
{
    int workers = job->workers > 0 ? job->workers : 1;
    return (slurm_job){.id = job->id,
                       .owner = job->owner,
                       .rundir = dir,
                       .ranks = job->ranks,
                       .threads = job->threads,
                       .gpus_per_worker = job->gpus / workers,
                       .time_limit_s = job->time_limit_s,
                       .priority = job->priority,
                       .mem_per_rank = job->mem_per_rank};
}

static void slurmsched_scancel(daemon_ctx *d, long slurm_id)
{
    slurm_site site = slurmsched_site(d);
    char path[CONFIG_PATH_MAX + 16], id[32];
    if (!slurm_command(&site, "scancel", path, sizeof path))
        return;
    snprintf(id, sizeof id, "%ld", slurm_id);
    char *argv[] = {path, id, NULL};
    char *out = NULL, *err = NULL;
    if (slurmsched_run(argv, &out, &err)) {
        log_info("Slurm: scancel %ld", slurm_id);
    } else if (!slurmsched_note_down(d, "scancel", err)) {
        char line[300];
        slurmsched_first_line(err, line, sizeof line);
        log_warn("Slurm: scancel %ld failed: %s", slurm_id, line);
    }
    free(out);
    free(err);
}

static void slurmsched_fail(daemon_ctx *d, const store_job *job, const char *why)
{
    char msg[600];
    snprintf(msg, sizeof msg, "could not submit to Slurm: %s", why);
    log_error("job %s (%s): %s", job->id, job->owner, msg);
    store_status rs =
        store_job_finish(d->st, job->id, JOB_FAILED, NULL, msg, "{}", NULL, daemon_now());
    if (rs == STORE_ERROR)
        log_error("job %s (%s): could not record the failure; retrying next tick", job->id,
                  job->owner);
    /* A trial that never reached Slurm ends as settle_job's do, so its
     * sweep frees the slot and goes on (not only when someone reads it). */
    else if (rs == STORE_OK)
        sweep_job_ended(d, job->id);
}

/* The batch script: exec the supervisor (with --engine-env's words) around
 * mpirun, as launcher_start() does on the local host. */
static char *slurmsched_script(daemon_ctx *d, const store_job *job, const char *dir)
{
    char **mpi = launcher_mpirun_argv(&d->lc, dir, job->ranks, job->threads, NULL, 0,
                                       job->trainer);
    char *env = strdup(d->cfg.engine_env);
    size_t n_mpi = 0, n_env = 0;
    while (mpi && mpi[n_mpi])
        n_mpi++;
    for (const char *p = env ? env : ""; *p; p++)
        n_env += *p == '=';
    char **cmd = mpi && env ? calloc(n_mpi + 2 * n_env + 5, sizeof *cmd) : NULL;
    char *text = NULL;
    if (cmd) {
        size_t k = 0;
        cmd[k++] = d->self_exe;
        cmd[k++] = "--supervise";
        cmd[k++] = (char *)dir;
        char *save = NULL;
        for (char *tok = strtok_r(env, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
            if (strchr(tok, '=')) {
                cmd[k++] = "--env";
                cmd[k++] = tok;
            }
        cmd[k++] = "--";
        for (size_t i = 0; i < n_mpi; i++)
            cmd[k++] = mpi[i];
        slurm_job sj = slurmsched_job(job, dir);
        text = slurm_batch_script(&sj, cmd);
    }
    free(cmd);
    free(env);
    launcher_argv_free(mpi);
    return text;
}

/* Hand one queued job to sbatch. Unreachable: it stays queued for a later
 * tick. Refused: it fails with sbatch's words. */
static void slurmsched_submit(daemon_ctx *d, const store_job *job)
{
    char dir[4096], err[600] = "";
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL)) {
        slurmsched_fail(d, job, "run directory path too long");
        return;
    }
    /* The poll just before may have adopted a Slurm job for it (an sbatch
     * that timed out yet was taken), which the tick's list does not show:
     * submitting again would make two, and the next poll cancel one. */
    store_job current;
    if (store_job_get(d->st, job->id, &current) != STORE_OK)
        return;
    bool taken = current.slurm_id != 0 || current.state != JOB_QUEUED;
    store_job_clear(&current);
    if (taken)
        return;
    char *spec = sched_queued_spec(d->st, job);
    if (!spec)
        return;
    bool ok = rundir_create(dir, spec, err, sizeof err);
    free(spec);
    char *script = ok ? slurmsched_script(d, job, dir) : NULL;
    if (ok && !script)
        snprintf(err, sizeof err, "out of memory for the batch script");
    ok = script && rundir_write_atomic(dir, SLURM_SCRIPT, script, strlen(script), err, sizeof err);
    free(script);
    if (!ok) {
        slurmsched_fail(d, job, err);
        return;
    }
    slurm_site site = slurmsched_site(d);
    slurm_job sj = slurmsched_job(job, dir);
    char **argv = slurm_sbatch_argv(&site, &sj);
    char *out = NULL, *errt = NULL;
    bool ran = argv && slurmsched_run(argv, &out, &errt);
    launcher_argv_free(argv);
    long slurm_id = ran ? slurm_parse_submit(out) : 0;
    if (!slurm_id) {
        if (!slurmsched_note_down(d, "sbatch", errt)) {
            slurmsched_first_line(errt && errt[0] ? errt : "no job id printed", err, sizeof err);
            slurmsched_fail(d, job, err);
        }
        free(out);
        free(errt);
        return;
    }
    free(out);
    free(errt);
    slurmsched_note_up(d);
    char detail[64];
    snprintf(detail, sizeof detail, "Slurm job %ld", slurm_id);
    store_status rs = store_job_set_slurm(d->st, job->id, slurm_id, NULL, detail, daemon_now());
    if (rs == STORE_OK)
        log_info("job %s (%s): submitted to Slurm as job %ld", job->id, job->owner, slurm_id);
    else if (rs == STORE_ERROR)
        log_error("job %s (%s): Slurm job %ld not recorded; adopting it by name next tick",
                  job->id, job->owner, slurm_id);
    /* STORE_CONFLICT: cancelled meanwhile; the orphan check cancels it. */
}

/* How a job Slurm ended is settled: its exit record decides, as on the
 * local host, when Slurm says COMPLETED or FAILED (the engine's own error
 * is there); Slurm's state and reason decide when Slurm ended it
 * (TIMEOUT, CANCELLED, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY) or when no
 * record was left. st NULL: Slurm no longer knows the job. */
static void slurmsched_settle(daemon_ctx *d, const store_job *job, const char *dir,
                              const slurm_status *st, job_state final)
{
    rundir_exit ex;
    bool have = rundir_read_exit(dir, &ex);
    bool own_words = st && strcmp(st->state, "COMPLETED") != 0 && strcmp(st->state, "FAILED") != 0;
    if (have && !own_words) {
        settle_job(d, job, dir, &ex, NULL, NULL);
        return;
    }
    char error[300] = "";
    if (!st) {
        final = JOB_FAILED;
        snprintf(error, sizeof error,
                 "Slurm no longer knows job %ld and it left no exit record", job->slurm_id);
    } else if (final != JOB_SUCCEEDED && !(final == JOB_CANCELLED && job->stop_reason[0])) {
        slurm_error_line(st, error, sizeof error);
    }
    if (final == JOB_SUCCEEDED && !have) {
        final = JOB_FAILED;
        snprintf(error, sizeof error, "Slurm says COMPLETED but the job left no exit record");
    }
    settle_job(d, job, dir, have ? &ex : NULL, &final, error);
}

/* A stop (cancel, time limit) asked of a job Slurm holds: scancel once,
 * recorded so a restart does not repeat it. */
static void slurmsched_deliver_stop(daemon_ctx *d, const store_job *job)
{
    slurmsched_scancel(d, job->slurm_id);
    if (store_job_mark_killed(d->st, job->id) != STORE_OK)
        log_error("job %s (%s): could not record the scancel; repeating it next tick",
                  job->id, job->owner);
}

/* A started job Slurm shows waiting again: it requeued it (preemption, node
 * failure, `scontrol requeue`). Queued again, with an event saying so; its
 * batch script passes --resume when it runs again, so it continues from its
 * last checkpoint (or starts over without one, as the event says). The
 * stopped run's exit record goes: Slurm has ended it (a job still being
 * killed shows COMPLETING), and the next run must not be settled from it.
 * One a user asked to stop is cancelled now, not when it runs again. */
static void slurmsched_requeued(daemon_ctx *d, const store_job *job, const char *dir,
                                const slurm_status *st, double now)
{
    if (job->stop_reason[0]) {
        if (!job->killed)
            slurmsched_deliver_stop(d, job);
        return;
    }
    char err[300], ckpt[4200];
    if (!rundir_clear_ended(dir, err, sizeof err)) {
        log_error("job %s (%s): %s; its requeue by Slurm is recorded next tick", job->id,
                  job->owner, err);
        return;
    }
    snprintf(ckpt, sizeof ckpt, "%s/" SLURM_CHECKPOINT, dir);
    char detail[300];
    snprintf(detail, sizeof detail, "requeued by Slurm (job %ld, %s); %s", job->slurm_id,
             st->reason[0] ? st->reason : st->state,
             access(ckpt, F_OK) == 0 ? "resumes from its last checkpoint"
                                     : "no checkpoint was written, it starts over");
    store_status rs = store_job_requeued(d->st, job->id, st->reason, detail, now);
    if (rs == STORE_OK)
        log_info("job %s (%s): %s", job->id, job->owner, detail);
    else if (rs == STORE_ERROR)
        log_error("job %s (%s): could not record Slurm's requeue; retrying next tick", job->id,
                  job->owner);
}

/* One followed job, given what Slurm says of it (st NULL: it does not know
 * it any more). */
static void slurmsched_follow(daemon_ctx *d, store_job *job, const slurm_status *st)
{
    char dir[4096];
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL))
        return;
    double now = daemon_now();
    job_state final = JOB_FAILED;
    slurm_phase phase = st ? slurm_state_map(st->state, &final) : SLURM_ENDED;
    if (phase == SLURM_UNKNOWN)
        return;
    if (phase == SLURM_WAITING) {
        if (job->state != JOB_QUEUED) {
            slurmsched_requeued(d, job, dir, st, now);
            return;
        }
        if (job->state == JOB_QUEUED && strcmp(job->slurm_reason, st->reason) != 0 &&
            store_job_set_slurm(d->st, job->id, job->slurm_id, st->reason, NULL, now) ==
                STORE_ERROR)
            log_error("job %s (%s): could not record Slurm's reason; retrying next tick",
                      job->id, job->owner);
        return;
    }
    if (job->state == JOB_QUEUED) {
        if (store_job_mark_starting(d->st, job->id, "", NULL, now) != STORE_OK)
            return;
        job->state = JOB_STARTING;
    }
    if (job->state == JOB_STARTING) {
        if (store_job_mark_running(d->st, job->id, 0, now) != STORE_OK)
            return;
        job->state = JOB_RUNNING;
        log_info("job %s (%s): running as Slurm job %ld", job->id, job->owner, job->slurm_id);
    }
    if (phase == SLURM_ACTIVE) {
        if (job->stop_reason[0] && !job->killed)
            slurmsched_deliver_stop(d, job);
        return;
    }
    slurmsched_settle(d, job, dir, st, final);
}

/* A Slurm job named pc-ID that no followed job claims: adopt it when its
 * job is queued without an id, cancel it when its job has ended (or holds
 * another Slurm job). */
static void slurmsched_orphan(daemon_ctx *d, const slurm_status *st)
{
    if (strncmp(st->name, "pc-", 3) != 0 ||
        slurm_state_map(st->state, NULL) == SLURM_ENDED ||
        slurm_state_map(st->state, NULL) == SLURM_UNKNOWN)
        return;
    store_job job;
    if (store_job_get(d->st, st->name + 3, &job) != STORE_OK)
        return;
    if (job.state == JOB_QUEUED && job.slurm_id == 0) {
        char detail[64];
        snprintf(detail, sizeof detail, "Slurm job %ld (adopted)", st->job_id);
        if (store_job_set_slurm(d->st, job.id, st->job_id, st->reason, detail, daemon_now()) ==
            STORE_OK)
            log_info("job %s (%s): adopted Slurm job %ld", job.id, job.owner, st->job_id);
    } else if (job_state_is_final(job.state) || job.slurm_id != st->job_id) {
        log_info("job %s (%s): Slurm job %ld is not its own (%s): cancelling it", job.id,
                 job.owner, st->job_id, job_state_name(job.state));
        slurmsched_scancel(d, st->job_id);
    }
    store_job_clear(&job);
}

/* scontrol show job ID: 1 and *out when Slurm shows it, 0 when it has
 * forgotten it, -1 when it could not be asked. */
static int slurmsched_show(daemon_ctx *d, long slurm_id, slurm_status *out)
{
    slurm_site site = slurmsched_site(d);
    char path[CONFIG_PATH_MAX + 16], id[32];
    if (!slurm_command(&site, "scontrol", path, sizeof path))
        return -1;
    snprintf(id, sizeof id, "%ld", slurm_id);
    char *argv[] = {path, "show", "job", id, NULL};
    char *text = NULL, *err = NULL;
    bool ok = slurmsched_run(argv, &text, &err);
    int known = ok && slurm_parse_scontrol(text, out) ? 1
                : !ok && err && strstr(err, "Invalid job id") ? 0
                                                              : -1;
    if (known < 0)
        slurmsched_note_down(d, "scontrol", err);
    free(text);
    free(err);
    return known;
}

/* One squeue for every job; scontrol for a followed job squeue no longer
 * lists. False when Slurm could not be asked. */
static bool slurmsched_poll(daemon_ctx *d, job_list *jobs)
{
    slurm_site site = slurmsched_site(d);
    char **argv = slurm_squeue_argv(&site);
    char *out = NULL, *err = NULL;
    bool ok = argv && slurmsched_run(argv, &out, &err);
    launcher_argv_free(argv);
    slurm_status *seen = ok ? calloc(SLURMSCHED_MAX_JOBS, sizeof *seen) : NULL;
    if (!ok || !seen) {
        if (!slurmsched_note_down(d, "squeue", err)) {
            char line[300];
            slurmsched_first_line(err, line, sizeof line);
            log_error("Slurm: squeue failed (%s); jobs are followed again next poll", line);
        }
        free(out);
        free(err);
        free(seen);
        return false;
    }
    slurmsched_note_up(d);
    size_t n = slurm_parse_squeue(out, seen, SLURMSCHED_MAX_JOBS);
    free(out);
    free(err);
    bool *claimed = calloc(n + 1, sizeof *claimed);
    bool complete = true;
    for (size_t i = 0; i < jobs->n; i++) {
        store_job *job = &jobs->v[i];
        if (!job->slurm_id)
            continue;
        const slurm_status *st = NULL;
        for (size_t k = 0; k < n && !st; k++)
            if (seen[k].job_id == job->slurm_id) {
                st = &seen[k];
                if (claimed)
                    claimed[k] = true;
            }
        slurm_status shown;
        if (!st) {
            int known = slurmsched_show(d, job->slurm_id, &shown);
            if (known < 0 && atomic_load(&d->slurm_down)) {
                /* Each further call would wait out its timeout too; and with
                 * jobs left unvisited, unclaimed Slurm jobs are not orphans. */
                complete = false;
                break;
            }
            if (known < 0)
                continue;
            st = known ? &shown : NULL;
        }
        slurmsched_follow(d, job, st);
    }
    for (size_t k = 0; complete && claimed && k < n; k++)
        if (!claimed[k])
            slurmsched_orphan(d, &seen[k]);
    free(claimed);
    free(seen);
    return true;
}

void slurmsched_tick(daemon_ctx *d)
{
    job_list jobs = {0};
    if (store_active_jobs(d->st, joblist_collect, &jobs) != STORE_OK ||
        store_queue_scan(d->st, INT_MAX, joblist_collect, &jobs) != STORE_OK ||
        jobs.short_of_memory) {
        log_error("cannot list the jobs; nothing is submitted or followed this tick");
        joblist_free(&jobs);
        return;
    }
    double now = daemon_now();
    if (now >= last_poll + SLURMSCHED_POLL_S) {
        last_poll = now;
        slurmsched_poll(d, &jobs);
    }
    for (size_t i = 0; i < jobs.n && !d->cfg.hold && !atomic_load(&d->slurm_down); i++)
        if (jobs.v[i].state == JOB_QUEUED && !jobs.v[i].slurm_id)
            slurmsched_submit(d, &jobs.v[i]);
    joblist_free(&jobs);
}
