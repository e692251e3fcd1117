/* monitor.c — supervision and scheduling tick (contract in monitor.h). */
#include "sched/monitor.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "io/tensorfile.h"
#include "sched/admission.h"
#include "sched/gpualloc.h"
#include "log.h"
#include "sched/liveness.h"
#include "sched/memest.h"
#include "sched/preemption.h"
#include "http/metrics.h"
#include "run/quota.h"
#include "run/rundir.h"
#include "sched/scheduler.h"
#include "sched/settle.h"
#include "sched/slurmsched.h"

void monitor_cleanup(void)
{
    settle_cleanup();
    liveness_cleanup();
}


static void monitor_finish(daemon_ctx *d, const store_job *job, const char *dir,
                           const rundir_exit *ex)
{
    if (preemption_requeue(d, job, dir, ex))
        return;
    settle_job(d, job, dir, ex, NULL, NULL);
}

/* Deliver the stop the store asks for: SIGTERM once, SIGKILL after grace. */
static void monitor_enforce_stop(daemon_ctx *d, const store_job *job, const char *dir,
                                 double now)
{
    if (!job->stop_reason[0])
        return;
    if (!settle_term_was_sent(job->id)) {
        int n = settle_signal_job(job, dir, SIGTERM);
        /* The supervisor forwards it if mpirun is not started yet, and kills
         * what is left of the session once mpirun has ended. */
        launcher_signal_verified(job->supervisor_pid, job->supervisor_start, SIGTERM);
        log_info("job %s (%s): %s: SIGTERM to %d processes", job->id, job->owner,
                 job->stop_reason, n > 0 ? n : 0);
        settle_term_mark(job->id);
    }
    if (!job->killed && job->sid > 1 && now >= job->stop_requested_at + d->cfg.kill_grace) {
        int n = settle_signal_job(job, dir, SIGKILL);
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

/* Kill a running job and fail it with error, which names the limit it
 * crossed (the output quota, the disk reserve). */
static void monitor_fail_running(daemon_ctx *d, const store_job *job, const char *dir,
                                 const char *error)
{
    log_warn("job %s (%s): %s", job->id, job->owner, error);
    settle_signal_job(job, dir, SIGKILL);
    launcher_signal_verified(job->supervisor_pid, job->supervisor_start, SIGKILL);
    job_state failed = JOB_FAILED;
    settle_job(d, job, dir, NULL, &failed, error);
}

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
    monitor_fail_running(d, job, dir, error);
    return true;
}

/* End a job liveness finds stalled: kill it, fail it with the stall's
 * error, and await its hosts' probes. True if it did (the job is settled). */
static bool monitor_stalled(daemon_ctx *d, const store_job *job, const char *dir, double now)
{
    char error[300];
    bool probing = false;
    if (!liveness_stalled(d, job, dir, now, error, sizeof error, &probing))
        return false;
    settle_signal_job(job, dir, SIGKILL);
    launcher_signal_verified(job->supervisor_pid, job->supervisor_start, SIGTERM);
    job_state failed = JOB_FAILED;
    settle_job(d, job, dir, NULL, &failed, error);
    if (probing)
        liveness_await_probes(d, job);
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
    monitor_fail_running(d, job, dir, error);
    /* Its ranks are dead (SIGKILL above): what their writes left is junk. */
    atomic_write_sweep(dir);
    if (snprintf(ckpt, sizeof ckpt, "%s/checkpoints", dir) < (int)sizeof ckpt)
        atomic_write_sweep(ckpt);
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
        settle_prune_checkpoints(job, dir);
    if (check_quota && monitor_over_quota(d, job, dir))
        return false;
    if (check_quota && monitor_below_reserve(d, job, dir, now))
        return false;
    if (monitor_stalled(d, job, dir, now))
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

/* ---- starting jobs ----------------------------------------------------------- */

/* A job that left the queue cannot start after all. Should the store fail
 * to record that too, the job stays in starting without a supervisor and
 * monitor_check_job settles it as failed after MONITOR_LAUNCH_GRACE_S. */
static void monitor_fail_start(daemon_ctx *d, const store_job *job, const char *why)
{
    char msg[600], dir[4096];
    snprintf(msg, sizeof msg, "could not start: %s", why);
    settle_sanitize(msg);
    log_error("job %s (%s): %s", job->id, job->owner, msg);
    if (rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL))
        settle_relative_paths(d, dir, msg, sizeof msg);
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
    char *spec = sched_queued_spec(d->st, job);
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
    pid_t pid = launcher_start(&d->lc, dir, job->ranks, job->threads, devices, memory_max,
                               job->trainer, err, sizeof err);
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
static bool monitor_fits(void *arg, const store_job *q)
{
    daemon_ctx *d = arg;
    int workers = q->workers > 0 ? q->workers : 1;
    const char *field;
    char why[400];
    if (admission_check(d, q->ranks, q->gpus / workers, workers, &field, why, sizeof why))
        return true;
    store_status rs =
        store_job_finish(d->st, q->id, JOB_FAILED, NULL, why, "{}", NULL, daemon_now());
    if (rs == STORE_OK)
        log_warn("job %s (%s): failed: %s", q->id, q->owner, why);
    else if (rs == STORE_ERROR)
        log_error("job %s (%s): could not fail it (%s); retrying next tick", q->id, q->owner,
                  why);
    return false;
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
    sched_plan plan = {0};
    bool oom = false;
    if (d->cfg.hold)
        goto out;
    if (sched_pass(d->st, active, free_cap, d->cfg.max_running, monitor_fits, d, &plan, &oom) !=
        STORE_OK) {
        /* Starting from part of the queue could break its order. */
        log_error(oom ? "out of memory; no job starts this tick"
                      : "cannot read the queue; no job starts this tick");
        goto out;
    }
    for (size_t i = 0; i < plan.n_picked; i++) {
        const store_job *job = &plan.queue.v[plan.picked[i]];
        monitor_start_job(d, job, &plan.allocs[i], &pool);
        placement_take(free_cap, placement_need_of(job), &plan.allocs[i]);
    }
    cluster_set_used(d->cl, free_cap);
    preemption_tick(d, &plan.queue, plan.picked, plan.n_picked, active, free_cap, daemon_now());
out:
    free(free_cap);
    sched_plan_free(&plan);
}

/* ---- the tick ------------------------------------------------------------------ */

/* The local scheduler's tick: probe hosts, supervise the started jobs,
 * then one sched_pass() and start what it picks. */
static void monitor_local_tick(daemon_ctx *d)
{
    cluster_probe_tick(d->cl, d->probe_cmd, d->cfg.host_probe_interval_s, daemon_now());
    liveness_tick(d);
    job_list active = {0};
    if (store_active_jobs(d->st, joblist_collect, &active) != STORE_OK ||
        active.short_of_memory) {
        /* Without every active job, free slots and GPUs are unknown. */
        log_error("cannot list the active jobs; nothing is checked or started this tick");
        joblist_free(&active);
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
    joblist_free(&active);
}

/* A scheduler behind the tick: what it does each tick, after the reaping
 * every scheduler needs. The only place that chooses between them. */
typedef struct monitor_scheduler {
    void (*tick)(daemon_ctx *d);
} monitor_scheduler;

static const monitor_scheduler monitor_local = {monitor_local_tick};
static const monitor_scheduler monitor_slurm = {slurmsched_tick};

void monitor_tick(daemon_ctx *d)
{
    /* Our own supervisors end as children of ours; adopted ones are reaped by
     * init. Either way their state is read from the run directory. */
    int status;
    pid_t reaped;
    while ((reaped = waitpid(-1, &status, WNOHANG)) > 0)
        cluster_probe_reaped(d->cl, reaped, status, daemon_now());
    const monitor_scheduler *s = config_slurm(&d->cfg) ? &monitor_slurm : &monitor_local;
    s->tick(d);
}
