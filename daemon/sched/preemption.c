/* preemption.c — priority preemption on the tick (contract in preemption.h). */
#include "sched/preemption.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "run/launcher.h"
#include "sched/liveness.h"
#include "sched/preempt.h"
#include "sched/settle.h"

#define PREEMPT_MARK "preempted.json"
#define PREEMPT_DONE "requeued.json"

/* The choice reads each candidate's spec: at most once a second. */
#define PREEMPT_CHECK_EVERY_S 1.0

/* The head of the queue blocked, since when (this process's memory only: a
 * restart waits the grace again). */
static char blocked_id[STORE_ID_LEN + 1];
static double blocked_since;

/* The job a preemption in flight is for, read by HTTP threads. */
static pthread_mutex_t waiting_lock = PTHREAD_MUTEX_INITIALIZER;
static char waiting_id[STORE_ID_LEN + 1];

static void preemption_set_waiting(const char *id)
{
    pthread_mutex_lock(&waiting_lock);
    snprintf(waiting_id, sizeof waiting_id, "%s", id);
    pthread_mutex_unlock(&waiting_lock);
}

bool preemption_waiting(const char *id)
{
    pthread_mutex_lock(&waiting_lock);
    bool yes = waiting_id[0] && strcmp(waiting_id, id) == 0;
    pthread_mutex_unlock(&waiting_lock);
    return yes;
}

/* The marker of a job being preempted: who for, and when it was sent
 * SIGTERM. False if there is none. */
static bool preemption_read_mark(const char *dir, const char *name, char *by, size_t cap,
                                 int *priority, double *at)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return false;
    if (access(path, F_OK) != 0)
        return false;
    json_t *o = json_load_file(path, 0, NULL);
    const char *s = json_string_value(json_object_get(o, "by"));
    snprintf(by, cap, "%s", s ? s : "?");
    *priority = (int)json_integer_value(json_object_get(o, "priority"));
    *at = json_is_number(json_object_get(o, "at")) ? json_number_value(json_object_get(o, "at"))
                                                    : 0;
    json_decref(o);
    return true;
}

/* The owner's running jobs, with this tick's starts. */
static int preemption_running_of(const char *owner, const job_list *active,
                                 const job_list *queue, const size_t *picked, size_t n_picked)
{
    int count = 0;
    for (size_t i = 0; i < active->n; i++)
        count += strcmp(active->v[i].owner, owner) == 0;
    for (size_t i = 0; i < n_picked; i++)
        count += strcmp(queue->v[picked[i]].owner, owner) == 0;
    return count;
}

/* The first queued job that did not start and is not held back by its
 * owner's running limit; NULL if none. */
static const store_job *preemption_head(const daemon_ctx *d, const job_list *queue,
                                        const size_t *picked, size_t n_picked,
                                        const job_list *active)
{
    for (size_t i = 0; i < queue->n; i++) {
        bool started = false;
        for (size_t k = 0; k < n_picked && !started; k++)
            started = picked[k] == i;
        if (started)
            continue;
        const store_job *q = &queue->v[i];
        if (d->cfg.max_running > 0 &&
            preemption_running_of(q->owner, active, queue, picked, n_picked) >=
                d->cfg.max_running)
            continue;
        return q;
    }
    return NULL;
}

/* May this running job be preempted (its spec's resources.preemptible, and
 * whether it has a checkpoint to resume from)? */
static bool preemption_eligible(const daemon_ctx *d, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/job.json", dir);
    spec_error err;
    job_spec *spec = spec_load_file(path, &err);
    if (!spec)
        return false;
    spec_preemptible p = spec->resources.preemptible;
    spec_free(spec);
    snprintf(path, sizeof path, "%s/checkpoints/ckpt.bin", dir);
    return preempt_eligible(p, access(path, F_OK) == 0, d->cfg.preempt_allow_opt_out);
}

/* Mark and SIGTERM one job chosen for preemption. */
static void preemption_send(daemon_ctx *d, const store_job *victim, const store_job *for_job,
                            double now)
{
    char dir[4096], err[300] = "";
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, victim->id, NULL))
        return;
    json_t *o = json_pack("{s:s, s:i, s:f}", "by", for_job->id, "priority", for_job->priority,
                          "at", now);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    bool ok = text && rundir_write_atomic(dir, PREEMPT_MARK, text, strlen(text), err, sizeof err);
    free(text);
    if (!ok) {
        log_error("job %s (%s): cannot mark it preempted (%s); not preempted", victim->id,
                  victim->owner, err[0] ? err : "out of memory");
        return;
    }
    int n = settle_signal_job(victim, dir, SIGTERM);
    launcher_signal_verified(victim->supervisor_pid, victim->supervisor_start, SIGTERM);
    log_info("job %s (%s, priority %d): preempted by job %s (priority %d): SIGTERM to %d "
             "processes", victim->id, victim->owner, victim->priority, for_job->id,
             for_job->priority, n > 0 ? n : 0);
}

/* A preemption in flight: the marked active jobs get SIGKILL once past
 * kill_grace. True if any is marked (*for_id: the job it is for). */
static bool preemption_in_flight(daemon_ctx *d, const job_list *active, double now,
                                 char *for_id, size_t cap)
{
    bool any = false;
    for (size_t i = 0; i < active->n; i++) {
        const store_job *j = &active->v[i];
        char dir[4096], by[STORE_ID_LEN + 8];
        int prio;
        double at;
        if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, j->id, NULL) ||
            !preemption_read_mark(dir, PREEMPT_MARK, by, sizeof by, &prio, &at))
            continue;
        if (!any)
            snprintf(for_id, cap, "%s", by);
        any = true;
        if (now >= at + d->cfg.kill_grace && j->sid > 1) {
            int n = settle_signal_job(j, dir, SIGKILL);
            if (n > 0)
                log_warn("job %s (%s): still running %d s after its preemption's SIGTERM: "
                         "SIGKILL to %d processes", j->id, j->owner, d->cfg.kill_grace, n);
        }
    }
    return any;
}

/* The active jobs as candidates (run, capacity active->n). */
static void preemption_candidates(daemon_ctx *d, const job_list *active, int below,
                                  preempt_running *run)
{
    const char *const *names = cluster_names(d->cl);
    for (size_t i = 0; i < active->n; i++) {
        const store_job *j = &active->v[i];
        preempt_running *r = &run[i];
        memset(r, 0, sizeof *r);
        r->priority = j->priority;
        r->started_at = isnan(j->started_at) ? 0 : j->started_at;
        r->need = placement_need_of(j);
        char dir[4096];
        /* Only a running job with an allocation can give it back; the
         * spec is read only for those that could be chosen. */
        r->eligible = j->state == JOB_RUNNING && j->priority < below && j->hosts &&
                      placement_from_json(j->hosts, names, cluster_hosts(d->cl), &r->alloc) &&
                      rundir_path(dir, sizeof dir, d->cfg.data_dir, j->id, NULL) &&
                      preemption_eligible(d, dir);
    }
}

void preemption_tick(daemon_ctx *d, const job_list *queue, const size_t *picked,
                     size_t n_picked, const job_list *active, const placement_cluster *free_cap,
                     double now)
{
    static double checked_at;
    char for_id[STORE_ID_LEN + 8] = "";
    if (preemption_in_flight(d, active, now, for_id, sizeof for_id)) {
        preemption_set_waiting(for_id);
        return;
    }
    preemption_set_waiting("");
    const store_job *head = preemption_head(d, queue, picked, n_picked, active);
    if (!head) {
        blocked_id[0] = '\0';
        return;
    }
    if (strcmp(head->id, blocked_id) != 0) {
        snprintf(blocked_id, sizeof blocked_id, "%s", head->id);
        blocked_since = now;
    }
    if (now < blocked_since + d->cfg.preempt_grace || now < checked_at + PREEMPT_CHECK_EVERY_S)
        return;
    checked_at = now;
    bool lower = false;
    for (size_t i = 0; i < active->n && !lower; i++)
        lower = active->v[i].priority < head->priority;
    if (!lower)
        return;
    preempt_running *run = calloc(active->n, sizeof *run);
    size_t *chosen = calloc(active->n, sizeof *chosen);
    if (!run || !chosen) {
        log_error("out of memory choosing jobs to preempt; none this tick");
        free(run);
        free(chosen);
        return;
    }
    preemption_candidates(d, active, head->priority, run);
    size_t n = preempt_choose(free_cap, placement_need_of(head), head->priority, run, active->n,
                              chosen);
    for (size_t i = 0; i < n; i++)
        preemption_send(d, &active->v[chosen[i]], head, now);
    if (n > 0)
        preemption_set_waiting(head->id);
    free(run);
    free(chosen);
}

bool preemption_requeue(daemon_ctx *d, const store_job *job, const char *dir,
                        const rundir_exit *ex)
{
    char by[STORE_ID_LEN + 8], mark[4200], done[4200];
    int prio;
    double at;
    if (!preemption_read_mark(dir, PREEMPT_MARK, by, sizeof by, &prio, &at))
        return false;
    snprintf(mark, sizeof mark, "%s/%s", dir, PREEMPT_MARK);
    /* It finished first, or its user cancelled it: settled as usual. */
    if (job->stop_reason[0] || (ex && ex->exit_code == 0 && ex->signal == 0)) {
        unlink(mark);
        return false;
    }
    settle_signal_job(job, dir, SIGKILL);
    char err[300];
    if (!rundir_clear_ended(dir, err, sizeof err)) {
        log_error("job %s (%s): %s; its requeue after preemption is retried next tick", job->id,
                  job->owner, err);
        return true;
    }
    char detail[200];
    snprintf(detail, sizeof detail, "preempted by %s (priority %d)", by, prio);
    store_status rs = store_job_requeued(d->st, job->id, "", detail, daemon_now());
    if (rs == STORE_ERROR) {
        log_error("job %s (%s): could not requeue it after its preemption; retrying next tick",
                  job->id, job->owner);
        return true;
    }
    if (rs != STORE_OK) {
        unlink(mark);
        return false;
    }
    snprintf(done, sizeof done, "%s/%s", dir, PREEMPT_DONE);
    if (rename(mark, done) != 0)
        unlink(mark);
    /* Its silence while queued is no stall when it runs again. */
    liveness_forget(job->id);
    log_info("job %s (%s): %s; queued again", job->id, job->owner, detail);
    return true;
}

void preemption_started(daemon_ctx *d, const store_job *job, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, PREEMPT_DONE);
    if (access(path, F_OK) != 0)
        return;
    char ckpt[4200];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints/ckpt.bin", dir);
    const char *detail = access(ckpt, F_OK) == 0
                             ? "resumed after preemption"
                             : "resumed after preemption: no checkpoint, it starts over";
    if (store_job_note(d->st, job->id, JOB_STARTING, detail, daemon_now()) == STORE_ERROR)
        log_error("job %s (%s): could not record \"%s\"", job->id, job->owner, detail);
    unlink(path);
}
