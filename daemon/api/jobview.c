/* jobview.c — builds the public job object. */
#include "api/jobview.h"
#include "sched/preemption.h"

#include <math.h>

#include "run/quota.h"
#include "run/rundir.h"

static json_t *jobview_time(double t) { return isnan(t) ? json_null() : json_real(t); }

/* Parse frozen JSON text from the store; `fallback` when absent or bad. */
static json_t *jobview_frozen(const char *text, json_t *fallback)
{
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    if (!j)
        return fallback;
    json_decref(fallback);
    return j;
}

bool jobview_needs_active(const daemon_ctx *d)
{
    return !d->cfg.hold && !config_slurm(&d->cfg) && d->cfg.max_running > 0;
}

/* Why a queued job has not started (the scheduler's rules, scheduler.h):
 * the queue is held; its owner is at the per-user running limit, so it is
 * skipped whatever its place; else slots or GPUs, in use or reserved for
 * the jobs ahead of it. Under Slurm: "submitting" until sbatch has taken
 * it, then Slurm's own reason ("Priority", "Resources", ...; "slurm" when
 * it gives none). */
static const char *jobview_waiting_for(const daemon_ctx *d, const store_job *job,
                                       int owner_active)
{
    if (d->cfg.hold)
        return "hold";
    if (config_slurm(&d->cfg))
        return !job->slurm_id ? "submitting" : job->slurm_reason[0] ? job->slurm_reason : "slurm";
    if (preemption_waiting(job->id))
        return "preemption";
    if (d->cfg.max_running <= 0)
        return "resources";
    return owner_active >= d->cfg.max_running ? "running_limit" : "resources";
}

static json_t *jobview_figure(double v) { return v >= 0 ? json_real(v) : json_null(); }

/* What the job used: CPU time and peak memory from the supervisor's exit
 * record (once it has ended), the run directory's size (quota.c's
 * measure, kept in the store once the job is over); null where unknown. */
static json_t *jobview_resources(daemon_ctx *d, const store_job *job)
{
    rundir_exit ex = {.cpu_s = -1, .peak_rss_bytes = -1};
    json_t *rundir_bytes = json_null();
    char dir[4096];
    bool started = job->state != JOB_QUEUED && !job->files_removed &&
                   rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL);
    if (started) {
        if (job_state_is_final(job->state) && !rundir_read_exit(dir, &ex))
            ex.cpu_s = ex.peak_rss_bytes = -1;
        json_decref(rundir_bytes);
        rundir_bytes = json_integer((json_int_t)quota_job_bytes(d, job));
    }
    json_t *o = json_object();
    json_object_set_new(o, "cpu_s", jobview_figure(ex.cpu_s));
    json_object_set_new(o, "peak_rss_bytes", ex.peak_rss_bytes >= 0
                                                 ? json_integer((json_int_t)ex.peak_rss_bytes)
                                                 : json_null());
    json_object_set_new(o, "rundir_bytes", rundir_bytes);
    return o;
}

json_t *jobview_json(daemon_ctx *d, const store_job *job)
{
    int pos = 0, active = 0;
    if (job->state == JOB_QUEUED) {
        if (jobview_needs_active(d) && (active = store_owner_active(d->st, job->owner)) < 0)
            return NULL;
        pos = store_queue_position(d->st, job);
    }
    json_t *o = jobview_json_with(d, job, pos, active);
    if (o)
        json_object_set_new(o, "resources_used", jobview_resources(d, job));
    return o;
}

json_t *jobview_json_with(daemon_ctx *d, const store_job *job, int pos, int owner_active)
{
    const char *waiting_for =
        job->state == JOB_QUEUED ? jobview_waiting_for(d, job, owner_active) : NULL;
    json_t *progress = NULL, *result = NULL;
    if (job_state_is_final(job->state)) {
        progress = jobview_frozen(job->progress, json_object());
        result = jobview_frozen(job->result, json_null());
    } else if (job->state == JOB_QUEUED) {
        progress = json_object();
        result = json_null();
    } else {
        char dir[4096];
        rundir_progress p = {0};
        if (rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL))
            rundir_read_progress(dir, &p);
        progress = p.progress ? json_incref(p.progress) : json_object();
        result = p.result ? json_incref(p.result) : json_null();
        rundir_progress_clear(&p);
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(job->id));
    json_object_set_new(o, "name", json_string(job->name));
    json_object_set_new(o, "owner", json_string(job->owner));
    json_object_set_new(o, "state", json_string(job_state_name(job->state)));
    json_object_set_new(o, "queue_position", pos > 0 ? json_integer(pos) : json_null());
    json_object_set_new(o, "waiting_for", waiting_for ? json_string(waiting_for) : json_null());
    json_object_set_new(o, "priority", json_integer(job->priority));
    json_object_set_new(o, "ranks", json_integer(job->ranks));
    json_object_set_new(o, "trainer", json_string(job->trainer));
    /* Kept at submit; a job from before migration 0016 has none. */
    json_object_set_new(o, "hparams", jobview_frozen(job->hparams[0] ? job->hparams : NULL,
                                                     json_null()));
    json_object_set_new(o, "workers", json_integer(job->workers));
    json_object_set_new(o, "gpus", json_integer(job->gpus));
    json_object_set_new(o, "gpu_devices",
                        job->gpu_devices[0] ? json_string(job->gpu_devices) : json_null());
    json_t *hosts = job->hosts ? json_loads(job->hosts, 0, NULL) : NULL;
    json_object_set_new(o, "hosts", json_is_array(hosts) ? hosts : json_array());
    if (hosts && !json_is_array(hosts))
        json_decref(hosts);
    json_object_set_new(o, "time_limit_s", json_integer(job->time_limit_s));
    json_object_set_new(o, "submitted_at", jobview_time(job->submitted_at));
    json_object_set_new(o, "started_at", jobview_time(job->started_at));
    json_object_set_new(o, "finished_at", jobview_time(job->finished_at));
    json_object_set_new(o, "exit_code", job->has_exit_code ? json_integer(job->exit_code)
                                                           : json_null());
    json_object_set_new(o, "error", job->error ? json_string(job->error) : json_null());
    json_object_set_new(o, "cancel_requested", json_boolean(job->stop_reason[0] == 'c'));
    json_object_set_new(o, "files_removed", json_boolean(job->files_removed));
    json_object_set_new(o, "progress", progress);
    json_object_set_new(o, "result", result);
    return o;
}
