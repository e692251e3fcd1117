/* monitor.c — supervision and scheduling tick (contract in monitor.h). */
#include "sched/monitor.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "grow/grow.h"
#include "io/tensorfile.h"
#include "sched/admission.h"
#include "run/finalstate.h"
#include "sched/gpualloc.h"
#include "cluster/hostfail.h"
#include "log.h"
#include "sched/liveness.h"
#include "sched/memest.h"
#include "sched/preemption.h"
#include "http/metrics.h"
#include "run/quota.h"
#include "run/rundir.h"
#include "sched/scheduler.h"
#include "sched/slurmsched.h"
#include "sweep/sweep.h"

/* Jobs already sent SIGTERM by this process (after a restart they get one
 * more, which is harmless). */
static char (*term_sent)[STORE_ID_LEN + 1];
static size_t n_term_sent, cap_term_sent;

static bool monitor_term_was_sent(const char *id)
{
    for (size_t i = 0; i < n_term_sent; i++)
        if (strcmp(term_sent[i], id) == 0)
            return true;
    return false;
}

static void monitor_term_mark(const char *id)
{
    if (!grow_reserve((void **)&term_sent, &cap_term_sent, n_term_sent + 1, sizeof *term_sent))
        return;
    snprintf(term_sent[n_term_sent++], STORE_ID_LEN + 1, "%s", id);
}

static void monitor_term_forget(const char *id)
{
    for (size_t i = 0; i < n_term_sent; i++)
        if (strcmp(term_sent[i], id) == 0) {
            memcpy(term_sent[i], term_sent[--n_term_sent], sizeof term_sent[i]);
            return;
        }
}

void monitor_cleanup(void)
{
    free(term_sent);
    term_sent = NULL;
    n_term_sent = cap_term_sent = 0;
    liveness_cleanup();
}

/* Replace each `from` in s (of capacity cap) with `to`. */
static void monitor_replace(char *s, size_t cap, const char *from, const char *to)
{
    size_t lf = strlen(from), lt = strlen(to);
    char *p = lf ? strstr(s, from) : NULL;
    while (p) {
        size_t tail = strlen(p + lf);
        if ((size_t)(p - s) + lt + tail + 1 > cap)
            return;
        memmove(p + lt, p + lf, tail + 1);
        memcpy(p, to, lt);
        p = strstr(p + lt, from);
    }
}

/* A job's error is read by its user: paths in the run directory become
 * relative to it ("./checkpoints/ckpt.bin"), data set paths relative to
 * their root, so no server path (data dir, dataset roots) shows. */
static void monitor_relative_paths(const daemon_ctx *d, const char *dir, char *error,
                                   size_t cap)
{
    char with_slash[4200];
    snprintf(with_slash, sizeof with_slash, "%s/", dir);
    monitor_replace(error, cap, with_slash, "./");
    monitor_replace(error, cap, dir, "the run directory");
    char roots[sizeof d->cfg.datasets];
    snprintf(roots, sizeof roots, "%s", d->cfg.datasets);
    char *save = NULL;
    for (char *root = strtok_r(roots, ":", &save); root; root = strtok_r(NULL, ":", &save)) {
        snprintf(with_slash, sizeof with_slash, "%s/", root);
        monitor_replace(error, cap, with_slash, "");
        monitor_replace(error, cap, root, "the dataset root");
    }
    snprintf(with_slash, sizeof with_slash, "%s/", d->cfg.data_dir);
    monitor_replace(error, cap, with_slash, "");
}

/* Keep an error message printable ASCII: it goes into JSON and logs. */
static void monitor_sanitize(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

/* A failed job's train.log (at log_path) shows Open MPI losing one of its
 * hosts: the error names the host instead, and the host is marked down so
 * nothing new is placed on it until its probe answers. Only with a
 * hostfile: on the local host alone there is no other host to lose. When
 * the log does not say which host, the error names the job's hosts and
 * none is marked down. Returns what it found (the host lost is copied to
 * lost). */
typedef enum monitor_blame { BLAME_NONE, BLAME_HOST, BLAME_SUSPECTS } monitor_blame;

static monitor_blame monitor_blame_host(daemon_ctx *d, const store_job *job,
                                        const char *log_path, char *error, size_t cap,
                                        char *lost, size_t lost_cap)
{
    placement a;
    const char *const *names = cluster_names(d->cl);
    if (!d->cfg.hostfile[0] || !job->hosts ||
        !placement_from_json(job->hosts, names, cluster_hosts(d->cl), &a) || a.n == 0)
        return BLAME_NONE;
    const char *mine[PLACEMENT_MAX_HOSTS];
    char list[300] = "";
    size_t used = 0;
    for (int i = 0; i < a.n; i++) {
        mine[i] = names[a.part[i].host];
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", mine[i]);
        if (w > 0 && (size_t)w < sizeof list - used)
            used += (size_t)w;
    }
    size_t len = 0;
    bool whole = false;
    char *tail = rundir_read_tail(log_path, 64 * 1024, &len, &whole);
    if (!tail)
        return BLAME_NONE;
    char host[256];
    const char *what = hostfail_find(tail, mine, a.n, host, sizeof host);
    free(tail);
    if (!what)
        return BLAME_NONE;
    if (!host[0]) {
        snprintf(error, cap, "one of hosts %s failed: %s (train.log does not say which)", list,
                 what);
        char reason[400];
        snprintf(reason, sizeof reason, "job %s: %s", job->id, what);
        monitor_sanitize(reason);
        for (int i = 0; i < a.n; i++)
            cluster_suspect(d->cl, mine[i], reason);
        return BLAME_SUSPECTS;
    }
    snprintf(error, cap, "host %s failed: %s", host, what);
    char reason[400];
    snprintf(reason, sizeof reason, "job %s: %s", job->id, what);
    monitor_sanitize(reason);
    if (cluster_mark_down(d->cl, host, reason, daemon_now()))
        log_warn("host %s: down (%s); no job is placed there until it answers its probe",
                 host, reason);
    snprintf(lost, lost_cap, "%s", host);
    return BLAME_HOST;
}

/* Checkpoint retention: prune the job's model_checkpoint saves to the
 * spec's training.checkpoint_keep, kept at submit (a job submitted before
 * migration 0013 reads its job.json; a spec that no longer parses keeps
 * everything). */
static void monitor_prune_checkpoints(const store_job *job, const char *dir)
{
    int keep = job->checkpoint_keep;
    if (keep < 0) {
        char path[4200];
        if (snprintf(path, sizeof path, "%s/job.json", dir) >= (int)sizeof path)
            return;
        spec_error err;
        job_spec *spec = spec_load_file(path, &err);
        if (!spec)
            return;
        keep = spec->training.checkpoint_keep;
        spec_free(spec);
    }
    int removed = rundir_prune_checkpoints(dir, keep);
    if (removed > 0)
        log_debug("job %s (%s): removed %d old checkpoint files (checkpoint_keep %d)", job->id,
                  job->owner, removed, keep);
}

/* Send sig to the job's processes (mpirun's session), provided the session's
 * leader is still the mpirun that supervisor.json names, by pid and start
 * time: a number recorded before a restart may belong to a stranger now.
 * Returns how many were signalled, -1 if the session is not (any more)
 * verifiably the job's. */
int monitor_signal_job(const store_job *job, const char *dir, int sig)
{
    rundir_supervisor sup;
    if (job->sid <= 1 || !rundir_read_supervisor(dir, &sup) || sup.sid != job->sid)
        return -1;
    if (sig != SIGTERM)
        return launcher_signal_session(job->sid, sup.sid_start, sig);
    /* A stop: the ranks alone, as the supervisor does (supervisor.c says
     * why mpirun must not get it); mpirun only when no rank is here. */
    int n = launcher_signal_members(job->sid, sup.sid_start, SIGTERM);
    return n > 0 ? n : launcher_signal_session(job->sid, sup.sid_start, SIGTERM);
}

/* The supervisor of a job that ended without exit.json is gone; when its pid
 * now names another process, say so (that process was left alone). */
static void monitor_note_reused(const store_job *job, char *error, size_t cap)
{
    long long start;
    if (job->supervisor_pid <= 1 ||
        !launcher_proc_stat(job->supervisor_pid, &start, NULL, NULL) ||
        start == job->supervisor_start)
        return;
    size_t used = strlen(error);
    snprintf(error + used, cap - used,
             " (its pid %d now belongs to another process, which was left alone)",
             (int)job->supervisor_pid);
}

void monitor_settle(daemon_ctx *d, const store_job *job, const char *dir, const rundir_exit *ex,
                    const job_state *decided, const char *decided_error)
{
    rundir_progress p;
    rundir_read_progress(dir, &p);
    char last[300] = "", log_path[4200];
    if (snprintf(log_path, sizeof log_path, "%s/train.log", dir) < (int)sizeof log_path)
        rundir_failure_line(log_path, last, sizeof last);
    finalstate_facts facts = {job->stop_reason, job->time_limit_s, ex, p.end_status,
                              p.end_error, last};
    char error[512], lost[256] = "";
    monitor_blame blame = BLAME_NONE;
    job_state final_state = finalstate_decide(&facts, error, sizeof error);
    if (decided) {
        final_state = *decided;
        snprintf(error, sizeof error, "%s", decided_error ? decided_error : "");
    } else if (final_state == JOB_FAILED && !ex) {
        monitor_note_reused(job, error, sizeof error);
    } else if (final_state == JOB_FAILED) {
        blame = monitor_blame_host(d, job, log_path, error, sizeof error, lost, sizeof lost);
    }
    monitor_relative_paths(d, dir, error, sizeof error);
    monitor_sanitize(error);
    monitor_prune_checkpoints(job, dir);
    char *progress = json_dumps(p.progress, JSON_COMPACT | JSON_REAL_PRECISION(15));
    char *result = p.result ? json_dumps(p.result, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    int code = ex ? ex->exit_code : 0;
    store_status rs = store_job_finish(d->st, job->id, final_state, ex ? &code : NULL,
                                       error[0] ? error : NULL, progress, result, daemon_now());
    if (rs == STORE_OK) {
        log_info("job %s (%s): %s%s%s", job->id, job->owner, job_state_name(final_state),
                 error[0] ? ": " : "", error);
        monitor_term_forget(job->id);
        liveness_forget(job->id);
        if (blame == BLAME_HOST)
            liveness_host_lost(d, job, lost);
        else if (blame == BLAME_SUSPECTS)
            liveness_await_probes(d, job);
        /* After a requeue above, the sweep sees the trial queued again. */
        sweep_job_ended(d, job->id);
    } else if (rs == STORE_ERROR) {
        log_error("job %s (%s): ended %s but the store did not record it; retrying next tick",
                  job->id, job->owner, job_state_name(final_state));
    }
    free(progress);
    free(result);
    rundir_progress_clear(&p);
    /* Belt and braces: nothing of a finished job may stay behind (its
     * session, if its leader is still the job's mpirun). */
    monitor_signal_job(job, dir, SIGKILL);
}

static void monitor_finish(daemon_ctx *d, const store_job *job, const char *dir,
                           const rundir_exit *ex)
{
    if (preemption_requeue(d, job, dir, ex))
        return;
    monitor_settle(d, job, dir, ex, NULL, NULL);
}

/* Deliver the stop the store asks for: SIGTERM once, SIGKILL after grace. */
static void monitor_enforce_stop(daemon_ctx *d, const store_job *job, const char *dir,
                                 double now)
{
    if (!job->stop_reason[0])
        return;
    if (!monitor_term_was_sent(job->id)) {
        int n = monitor_signal_job(job, dir, SIGTERM);
        /* The supervisor forwards it if mpirun is not started yet, and kills
         * what is left of the session once mpirun has ended. */
        launcher_signal_verified(job->supervisor_pid, job->supervisor_start, SIGTERM);
        log_info("job %s (%s): %s: SIGTERM to %d processes", job->id, job->owner,
                 job->stop_reason, n > 0 ? n : 0);
        monitor_term_mark(job->id);
    }
    if (!job->killed && job->sid > 1 && now >= job->stop_requested_at + d->cfg.kill_grace) {
        int n = monitor_signal_job(job, dir, SIGKILL);
        if (n < 0)
            n = 0;
        log_warn("job %s (%s): still running %d s after SIGTERM: SIGKILL to %d processes",
                 job->id, job->owner, d->cfg.kill_grace, n);
        /* Unrecorded, the next tick sends SIGKILL once more: harmless. */
        if (store_job_mark_killed(d->st, job->id) != STORE_OK)
            log_error("job %s (%s): could not record the SIGKILL; repeating it next tick",
                      job->id, job->owner);
    }
}

/* A supervisor writes supervisor.json within moments of its fork; until
 * then a starting job whose supervisor the store does not know may still be
 * launching. Past this many seconds it never was (the daemon died before the
 * fork) and the job is settled as failed. */
#define MONITOR_LAUNCH_GRACE_S 10.0

/* A started job whose supervisor's identity never reached the store: the
 * daemon stopped between the fork and recording it, or the store failed
 * then. Adopt the supervisor from its record, only if the process with its
 * pid started when the record says: otherwise the supervisor has ended and
 * the pid may be a stranger's. False while the job must wait for a later
 * tick (still launching, or the store failed again); true to go on checking
 * it (adopted, or there is nothing left to adopt). */
static bool monitor_adopt(daemon_ctx *d, store_job *job, const rundir_supervisor *sup,
                          double now)
{
    long long start;
    if (!sup)
        return isnan(job->started_at) || now >= job->started_at + MONITOR_LAUNCH_GRACE_S;
    if (!launcher_proc_stat(sup->supervisor_pid, &start, NULL, NULL) ||
        sup->supervisor_start < 0 || start != sup->supervisor_start) {
        /* It has ended: exit.json or its absence says how. Kept in memory
         * only, so the error can say whether the pid is someone else's. */
        job->supervisor_pid = sup->supervisor_pid;
        job->supervisor_start = sup->supervisor_start;
        return true;
    }
    if (store_job_set_supervisor(d->st, job->id, sup->supervisor_pid, start) != STORE_OK) {
        log_error("job %s (%s): could not record supervisor pid %d; retrying next tick",
                  job->id, job->owner, (int)sup->supervisor_pid);
        return false;
    }
    job->supervisor_pid = sup->supervisor_pid;
    job->supervisor_start = start;
    return true;
}

/* How often (seconds) the run directories of running jobs have their old
 * checkpoints pruned and are measured against job_output_quota_mb: a walk
 * of each directory, too slow for every tick. A job may overshoot its
 * quota by what it writes in that time. */
#define MONITOR_QUOTA_EVERY_S 5.0

/* Stop and fail a job whose run directory holds more than its quota.
 * True if it did (the job is settled). */
static bool monitor_over_quota(daemon_ctx *d, const store_job *job, const char *dir)
{
    double quota = (double)d->cfg.job_output_quota_mb * 1024 * 1024;
    if (quota <= 0)
        return false;
    double used = quota_dir_bytes(dir);
    if (used <= quota)
        return false;
    char b[2][32], error[300];
    snprintf(error, sizeof error,
             "its run directory holds %s, over the job output quota of %s "
             "(job_output_quota_mb); the job was stopped",
             memest_format(used, b[0], sizeof b[0]), memest_format(quota, b[1], sizeof b[1]));
    log_warn("job %s (%s): %s", job->id, job->owner, error);
    monitor_signal_job(job, dir, SIGKILL);
    launcher_signal_verified(job->supervisor_pid, job->supervisor_start, SIGKILL);
    job_state failed = JOB_FAILED;
    monitor_settle(d, job, dir, NULL, &failed, error);
    return true;
}

/* Stop and fail a job that writes checkpoints or weights while the data
 * dir's file system is below its reserve (quota.h), and remove what its
 * unfinished writes left: the space is for other jobs and users. True if
 * it did (the job is settled). A job may overshoot by what it writes
 * between two checks. */
static bool monitor_below_reserve(daemon_ctx *d, const store_job *job, const char *dir,
                                  double now)
{
    double free_b, reserve;
    if (!quota_below_reserve(&d->cfg, &free_b, &reserve) ||
        !quota_job_writing(dir, now - 2 * MONITOR_QUOTA_EVERY_S))
        return false;
    char b[2][32], error[300], ckpt[4200];
    snprintf(error, sizeof error,
             "the data dir's file system is below its reserve of %s (%s free, "
             "disk_reserve_mb); the job stopped to leave room for others",
             memest_format(reserve, b[0], sizeof b[0]), memest_format(free_b, b[1], sizeof b[1]));
    log_warn("job %s (%s): %s", job->id, job->owner, error);
    monitor_signal_job(job, dir, SIGKILL);
    launcher_signal_verified(job->supervisor_pid, job->supervisor_start, SIGKILL);
    atomic_write_sweep(dir);
    if (snprintf(ckpt, sizeof ckpt, "%s/checkpoints", dir) < (int)sizeof ckpt)
        atomic_write_sweep(ckpt);
    job_state failed = JOB_FAILED;
    monitor_settle(d, job, dir, NULL, &failed, error);
    return true;
}

/* One started job: advance starting -> running, settle it if it ended,
 * apply its time limit and any stop request. Returns true if still active.
 * A change the store fails to record is left for the next tick, which sees
 * the same run directory and tries again. */
static bool monitor_check_job(daemon_ctx *d, store_job *job, double now, bool check_quota)
{
    char dir[4096];
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL))
        return false;
    rundir_supervisor sup;
    bool have_sup = rundir_read_supervisor(dir, &sup);
    if (job->supervisor_pid == 0 && !monitor_adopt(d, job, have_sup ? &sup : NULL, now))
        return true;
    if (job->state == JOB_STARTING && have_sup) {
        store_status rs = store_job_mark_running(d->st, job->id, sup.sid, now);
        if (rs == STORE_OK) {
            job->state = JOB_RUNNING;
            job->sid = sup.sid;
            log_info("job %s (%s): running (mpirun session %d)", job->id, job->owner,
                     (int)sup.sid);
        } else if (rs == STORE_ERROR) {
            log_error("job %s (%s): could not record it running; retrying next tick", job->id,
                      job->owner);
        }
    }
    rundir_exit ex;
    if (rundir_read_exit(dir, &ex)) {
        monitor_finish(d, job, dir, &ex);
        return false;
    }
    if (!launcher_alive(job->supervisor_pid, job->supervisor_start)) {
        /* It may have written exit.json between the two checks. */
        if (rundir_read_exit(dir, &ex))
            monitor_finish(d, job, dir, &ex);
        else
            monitor_finish(d, job, dir, NULL);
        return false;
    }
    if (check_quota)
        monitor_prune_checkpoints(job, dir);
    if (check_quota && monitor_over_quota(d, job, dir))
        return false;
    if (check_quota && monitor_below_reserve(d, job, dir, now))
        return false;
    if (liveness_check(d, job, dir, now))
        return false;
    if (job->time_limit_s > 0 && !job->stop_reason[0] && !isnan(job->started_at) &&
        now >= job->started_at + (double)job->time_limit_s) {
        store_status rs = store_job_request_stop(d->st, job->id, "timeout", now);
        if (rs == STORE_OK) {
            snprintf(job->stop_reason, sizeof job->stop_reason, "timeout");
            job->stop_requested_at = now;
            log_info("job %s (%s): time limit of %ld s reached", job->id, job->owner,
                     job->time_limit_s);
        } else if (rs == STORE_ERROR) {
            log_error("job %s (%s): could not record its time limit; retrying next tick",
                      job->id, job->owner);
        }
    }
    monitor_enforce_stop(d, job, dir, now);
    return true;
}

/* ---- collecting rows --------------------------------------------------------- */

bool monitor_collect(const store_job *job, void *arg)
{
    job_list *l = arg;
    if (!grow_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        l->short_of_memory = true;
        return false;
    }
    /* Take a deep copy: the row's strings are freed after the callback. */
    store_job *c = &l->v[l->n++];
    *c = *job;
    c->error = job->error ? strdup(job->error) : NULL;
    c->hosts = job->hosts ? strdup(job->hosts) : NULL;
    c->progress = NULL;
    c->result = NULL;
    return true;
}

void monitor_list_free(job_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        store_job_clear(&l->v[i]);
    free(l->v);
}

/* ---- starting jobs ----------------------------------------------------------- */

/* A job that left the queue cannot start after all. Should the store fail
 * to record that too, the job stays in starting without a supervisor and
 * monitor_check_job settles it as failed after MONITOR_LAUNCH_GRACE_S. */
static void monitor_fail_start(daemon_ctx *d, const store_job *job, const char *why)
{
    char msg[600], dir[4096];
    snprintf(msg, sizeof msg, "could not start: %s", why);
    monitor_sanitize(msg);
    log_error("job %s (%s): %s", job->id, job->owner, msg);
    if (rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL))
        monitor_relative_paths(d, dir, msg, sizeof msg);
    if (store_job_finish(d->st, job->id, JOB_FAILED, NULL, msg, "{}", NULL, daemon_now()) ==
        STORE_ERROR)
        log_error("job %s (%s): could not record the failure; it fails later as a job "
                  "without a supervisor", job->id, job->owner);
}

/* GPUs hand-out of one pass: how many are free, and on a single host which
 * devices are taken. */
typedef struct gpu_pool {
    int n_free;
    bool by_device;   /* one host: give out devices, not only a count */
    uint64_t in_use;
} gpu_pool;

/* Choose job's devices from the pool (only on a single host); *text is ""
 * for none. False if the pool cannot supply them. */
static bool monitor_take_gpus(daemon_ctx *d, gpu_pool *pool, const store_job *job, char *text,
                              size_t cap)
{
    text[0] = '\0';
    if (job->gpus == 0 || !pool->by_device)
        return true;
    uint64_t set;
    if (!gpualloc_take(pool->in_use, d->cfg.gpus, job->gpus, &set) ||
        !gpualloc_format(set, text, cap))
        return false;
    pool->in_use |= set;
    return true;
}

/* Write the job's own hostfile into its run directory (with a cluster
 * hostfile only: on the local host mpirun needs none). */
static bool monitor_write_hostfile(daemon_ctx *d, const char *dir, const placement *a,
                                   char *err, size_t cap)
{
    if (!d->cfg.hostfile[0])
        return true;
    size_t size = (size_t)a->n * 300 + 1;
    char *text = malloc(size);
    bool ok = text && placement_hostfile(a, cluster_names(d->cl), text, size) &&
              rundir_write_atomic(dir, "hostfile", text, strlen(text), err, cap);
    if (!text || (!ok && !err[0]))
        snprintf(err, cap, "cannot write the job's hostfile");
    free(text);
    return ok;
}

char *monitor_queued_spec(daemon_ctx *d, const store_job *job)
{
    char *spec = NULL;
    store_status rs = store_job_spec(d->st, job->id, &spec);
    if (rs == STORE_OK)
        return spec;
    if (rs == STORE_ERROR)
        log_error("job %s (%s): cannot read its spec; left queued", job->id, job->owner);
    return NULL;
}

/* The memory ceiling of a job about to start (memest_ceiling), from the
 * estimate stored at submit. A job submitted before migration 0009 has
 * none and its spec is estimated here; 0 (none) if that no longer parses,
 * which punch-train then reports. */
static double monitor_memory_ceiling(const daemon_ctx *d, const store_job *job,
                                     const char *spec_text)
{
    memest m = {.per_rank = job->mem_per_rank, .ranks = job->ranks};
    m.total = m.per_rank * m.ranks;
    if (job->mem_per_rank <= 0) {
        spec_error err;
        job_spec *spec = spec_parse(spec_text, strlen(spec_text), &err);
        if (!spec)
            return 0;
        memest_job(spec, &m);
        spec_free(spec);
    }
    return memest_ceiling(&m, d->host_memory);
}

static void monitor_start_job(daemon_ctx *d, const store_job *job, const placement *alloc,
                              gpu_pool *pool)
{
    double now = daemon_now();
    char devices[sizeof job->gpu_devices];
    if (!monitor_take_gpus(d, pool, job, devices, sizeof devices)) {
        /* Cannot happen: the scheduler saw at most the free devices. */
        log_error("job %s (%s): no %d free GPU devices; left queued", job->id, job->owner,
                  job->gpus);
        return;
    }
    /* Read the spec while the job is still queued: should the store fail,
     * the job simply waits for the next tick. */
    char *spec = monitor_queued_spec(d, job);
    if (!spec)
        return;
    char *hosts = placement_to_json(alloc, cluster_names(d->cl));
    if (!hosts) {
        log_error("job %s (%s): out of memory for its allocation; left queued", job->id,
                  job->owner);
        free(spec);
        return;
    }
    /* Leave the queue first: a cancel from now on goes the stop route. A
     * conflict means it was cancelled since the scan. */
    store_status rs = store_job_mark_starting(d->st, job->id, devices, hosts, now);
    if (rs != STORE_OK) {
        if (rs == STORE_ERROR)
            log_error("job %s (%s): could not record its start; left queued", job->id,
                      job->owner);
        free(spec);
        free(hosts);
        return;
    }
    char dir[4096], err[600];
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL)) {
        free(spec);
        free(hosts);
        monitor_fail_start(d, job, "run directory path too long");
        return;
    }
    preemption_started(d, job, dir);
    err[0] = '\0';
    bool ok = rundir_create(dir, spec, err, sizeof err) &&
              monitor_write_hostfile(d, dir, alloc, err, sizeof err) &&
              (d->run_uid == 0 || rundir_give(dir, d->run_uid, d->run_gid, err, sizeof err));
    double memory_max = monitor_memory_ceiling(d, job, spec);
    free(spec);
    if (!ok) {
        free(hosts);
        monitor_fail_start(d, job, err);
        return;
    }
    pid_t pid = launcher_start(&d->lc, dir, job->ranks, job->threads, devices, memory_max, err,
                               sizeof err);
    if (pid < 0) {
        free(hosts);
        monitor_fail_start(d, job, err);
        return;
    }
    long long start = 0;
    launcher_proc_stat(pid, &start, NULL, NULL);
    /* Unrecorded, the supervisor is adopted from its supervisor.json. */
    if (store_job_set_supervisor(d->st, job->id, pid, start) != STORE_OK)
        log_error("job %s (%s): could not record supervisor pid %d; adopting it next tick",
                  job->id, job->owner, (int)pid);
    if (devices[0])
        log_info("job %s (%s): starting %d ranks on %s, GPUs %s (supervisor pid %d)", job->id,
                 job->owner, job->ranks, hosts, devices, (int)pid);
    else
        log_info("job %s (%s): starting %d ranks on %s%s (supervisor pid %d)", job->id,
                 job->owner, job->ranks, hosts, job->gpus ? " with GPUs" : "", (int)pid);
    free(hosts);
}

/* The GPUs the active jobs hold. On a single host, devices recorded for
 * them are taken; a job without a record (started under another --gpus or
 * hostfile) still counts, so the free count is the smaller of the two. */
static gpu_pool monitor_gpu_pool(daemon_ctx *d, const job_list *active, int *used)
{
    gpu_pool pool = {0, d->hosts == 1, 0};
    *used = 0;
    for (size_t i = 0; i < active->n; i++) {
        const store_job *j = &active->v[i];
        *used += j->gpus;
        uint64_t set;
        if (pool.by_device && j->gpu_devices[0] && gpualloc_parse(j->gpu_devices, &set))
            pool.in_use |= set;
    }
    pool.n_free = d->total_gpus > *used ? d->total_gpus - *used : 0;
    if (pool.by_device) {
        int unclaimed = d->cfg.gpus - gpualloc_count(pool.in_use);
        if (unclaimed < pool.n_free)
            pool.n_free = unclaimed > 0 ? unclaimed : 0;
    }
    return pool;
}

/* Drop from the queue the jobs that no longer fit the cluster at all (only
 * possible if --slots, --gpus or the hostfile shrank since they were
 * accepted), failing them with the message a submit would get. One the
 * store cannot fail stays queued, to be tried again next tick. */
static void monitor_drop_unfit(daemon_ctx *d, job_list *queue)
{
    size_t keep = 0;
    for (size_t i = 0; i < queue->n; i++) {
        store_job *q = &queue->v[i];
        int workers = q->workers > 0 ? q->workers : 1;
        const char *field;
        char why[400];
        if (admission_check(d, q->ranks, q->gpus / workers, workers, &field, why, sizeof why)) {
            store_job tmp = queue->v[keep];
            queue->v[keep++] = *q;
            *q = tmp;
            continue;
        }
        store_status rs =
            store_job_finish(d->st, q->id, JOB_FAILED, NULL, why, "{}", NULL, daemon_now());
        if (rs == STORE_OK)
            log_warn("job %s (%s): failed: %s", q->id, q->owner, why);
        else if (rs == STORE_ERROR)
            log_error("job %s (%s): could not fail it (%s); retrying next tick", q->id,
                      q->owner, why);
    }
    /* monitor_list_free sees the first n rows only: release the dropped ones. */
    for (size_t i = keep; i < queue->n; i++)
        store_job_clear(&queue->v[i]);
    queue->n = keep;
}

/* Charge an active job's slots and GPUs to the hosts it holds: its stored
 * allocation, or, for a job started before allocations were stored, a
 * placement of it over the hosts (all slots when it no longer fits). */
static void monitor_charge(daemon_ctx *d, placement_cluster *free_cap, const store_job *job)
{
    placement_need need = placement_need_of(job);
    placement a;
    if (job->hosts &&
        placement_from_json(job->hosts, cluster_names(d->cl), cluster_hosts(d->cl), &a) &&
        a.n > 0) {
        placement_take(free_cap, need, &a);
        return;
    }
    placement_cluster any = *free_cap;
    for (int h = 0; h < any.n_hosts; h++)
        any.down[h] = false;
    if (placement_pack(&any, need, &a)) {
        placement_take(free_cap, need, &a);
        return;
    }
    for (int h = 0; h < free_cap->n_hosts; h++)
        free_cap->slots[h] = 0;
}

static void monitor_schedule(daemon_ctx *d, const job_list *active)
{
    int used = 0;
    placement_cluster *free_cap = malloc(sizeof *free_cap);
    if (!free_cap) {
        log_error("out of memory; no job starts this tick");
        return;
    }
    cluster_capacity(d->cl, free_cap, true);
    for (int h = 0; h < free_cap->n_hosts && d->host_memory > 0; h++)
        free_cap->mem[h] = d->host_memory;
    for (size_t i = 0; i < active->n; i++) {
        used += active->v[i].ranks;
        monitor_charge(d, free_cap, &active->v[i]);
    }
    cluster_set_used(d->cl, free_cap);
    metrics_set_slots(d->total_slots, used);
    int used_gpus;
    gpu_pool pool = monitor_gpu_pool(d, active, &used_gpus);
    metrics_set_gpus(d->total_gpus, used_gpus);
    if (pool.by_device && free_cap->gpus[0] > pool.n_free)
        free_cap->gpus[0] = pool.n_free;
    int free_slots = 0;
    for (int h = 0; h < free_cap->n_hosts; h++)
        free_slots += free_cap->down[h] ? 0 : free_cap->slots[h];
    job_list queue = {0};
    size_t *picked = NULL;
    placement *allocs = NULL;
    size_t n_picked = 0;
    if (d->cfg.hold)
        goto out;
    /* With every slot taken nothing starts, but the head of the queue may
     * preempt: one row is enough to know it. */
    if (store_queue_scan_startable(d->st, free_slots > 0 ? 1000 : 1, d->cfg.max_running,
                                   monitor_collect, &queue) != STORE_OK ||
        queue.short_of_memory) {
        /* Starting from part of the queue could break its order. */
        log_error("cannot read the queue; no job starts this tick");
        goto out;
    }
    monitor_drop_unfit(d, &queue);
    picked = calloc(queue.n + 1, sizeof *picked);
    allocs = calloc(queue.n + 1, sizeof *allocs);
    if (!picked || !allocs) {
        log_error("out of memory; no job starts this tick");
        goto out;
    }
    placement_cluster *avail = malloc(sizeof *avail);
    if (!avail) {
        log_error("out of memory; no job starts this tick");
        goto out;
    }
    *avail = *free_cap;
    if (free_slots > 0)
        n_picked = sched_pick(queue.v, queue.n, active->v, active->n, avail, d->cfg.max_running,
                              picked, allocs);
    free(avail);
    for (size_t i = 0; i < n_picked; i++) {
        monitor_start_job(d, &queue.v[picked[i]], &allocs[i], &pool);
        placement_take(free_cap, placement_need_of(&queue.v[picked[i]]), &allocs[i]);
    }
    cluster_set_used(d->cl, free_cap);
    preemption_tick(d, &queue, picked, n_picked, active, free_cap, daemon_now());
out:
    free(picked);
    free(allocs);
    free(free_cap);
    monitor_list_free(&queue);
}

/* ---- the tick ------------------------------------------------------------------ */

void monitor_tick(daemon_ctx *d)
{
    /* Our own supervisors end as children of ours; adopted ones are reaped by
     * init. Either way their state is read from the run directory. */
    int status;
    pid_t reaped;
    while ((reaped = waitpid(-1, &status, WNOHANG)) > 0)
        cluster_probe_reaped(d->cl, reaped, status, daemon_now());
    if (config_slurm(&d->cfg)) {
        slurmsched_tick(d);
        return;
    }
    cluster_probe_tick(d->cl, d->probe_cmd, d->cfg.host_probe_interval_s, daemon_now());
    liveness_tick(d);
    job_list active = {0};
    if (store_active_jobs(d->st, monitor_collect, &active) != STORE_OK ||
        active.short_of_memory) {
        /* Without every active job, free slots and GPUs are unknown. */
        log_error("cannot list the active jobs; nothing is checked or started this tick");
        monitor_list_free(&active);
        return;
    }
    double now = daemon_now();
    static double quota_checked_at;
    bool check_quota = !(now < quota_checked_at + MONITOR_QUOTA_EVERY_S);
    if (check_quota)
        quota_checked_at = now;
    size_t keep = 0;
    for (size_t i = 0; i < active.n; i++) {
        if (monitor_check_job(d, &active.v[i], now, check_quota)) {
            if (keep != i) {
                store_job tmp = active.v[keep];
                active.v[keep] = active.v[i];
                active.v[i] = tmp;
            }
            keep++;
        }
    }
    job_list still = {active.v, keep, active.cap, false};
    monitor_schedule(d, &still);
    /* Free all rows, including the settled ones beyond `keep`. */
    monitor_list_free(&active);
}
