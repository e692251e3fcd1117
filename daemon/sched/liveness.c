/* liveness.c — stalls and requeue after a host loss (contract in liveness.h). */
#include "sched/liveness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "log.h"
#include "run/rundir.h"
#include "sched/placement.h"
#include "sched/stall.h"

/* The reports of one running job. */
typedef struct watched {
    char id[STORE_ID_LEN + 1];
    long long size;          /* progress.jsonl's size when last seen */
    stall_watch w;
} watched;

/* A failed job whose hosts are being probed. */
typedef struct awaiting {
    char id[STORE_ID_LEN + 1];
    char owner[64];
    char *hosts;             /* its allocation's JSON */
} awaiting;

static watched *watch;
static size_t n_watch, cap_watch;
static awaiting *await;
static size_t n_await, cap_await;

static bool liveness_grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(*v, c * size);
    if (!p)
        return false;
    *v = p;
    *cap = c;
    return true;
}

static long long liveness_progress_size(const char *dir)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/progress.jsonl", dir);
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static watched *liveness_watched(const char *id, const char *dir, double now)
{
    for (size_t i = 0; i < n_watch; i++)
        if (strcmp(watch[i].id, id) == 0)
            return &watch[i];
    if (!liveness_grow((void **)&watch, &cap_watch, n_watch, sizeof *watch))
        return NULL;
    watched *e = &watch[n_watch++];
    snprintf(e->id, sizeof e->id, "%s", id);
    e->size = liveness_progress_size(dir);
    stall_watch_start(&e->w, now);
    return e;
}

void liveness_forget(const char *id)
{
    for (size_t i = 0; i < n_watch; i++)
        if (strcmp(watch[i].id, id) == 0) {
            watch[i] = watch[--n_watch];
            return;
        }
}

/* The job's hosts (names into the cluster's list); 0 without a hostfile. */
static int liveness_hosts(daemon_ctx *d, const char *hosts_json, const char **names_out)
{
    placement a;
    const char *const *names = cluster_names(d->cl);
    if (!d->cfg.hostfile[0] || !hosts_json ||
        !placement_from_json(hosts_json, names, cluster_hosts(d->cl), &a))
        return 0;
    for (int i = 0; i < a.n; i++)
        names_out[i] = names[a.part[i].host];
    return a.n;
}

bool liveness_stalled(daemon_ctx *d, const store_job *job, const char *dir, double now,
                      char *error, size_t cap, bool *probing)
{
    if (job->state != JOB_RUNNING || job->stop_reason[0] || d->cfg.stall_grace <= 0)
        return false;
    watched *e = liveness_watched(job->id, dir, now);
    if (!e)
        return false;
    long long size = liveness_progress_size(dir);
    if (size != e->size) {
        e->size = size;
        stall_watch_report(&e->w, now);
        return false;
    }
    if (!stall_is_stalled(&e->w, now, d->cfg.stall_grace, d->cfg.stall_factor))
        return false;
    char reason[200];
    snprintf(error, cap,
             "stalled: no progress reported for %.0f s (the limit is %.0f s: the larger of "
             "stall_grace and %d x its slowest step, %.0f s); the job was ended",
             now - e->w.last_report, stall_limit(&e->w, d->cfg.stall_grace, d->cfg.stall_factor),
             d->cfg.stall_factor, e->w.slowest_gap);
    snprintf(reason, sizeof reason, "job %s stalled and this host did not answer", job->id);
    log_warn("job %s (%s): %s", job->id, job->owner, error);
    const char *hosts[PLACEMENT_MAX_HOSTS];
    int n = liveness_hosts(d, job->hosts, hosts);
    for (int i = 0; i < n; i++)
        cluster_suspect(d->cl, hosts[i], reason);
    *probing = n > 0;
    return true;
}

/* Automatic requeues so far: the events that say so. */
typedef struct requeue_count {
    int n;
} requeue_count;

static bool liveness_count_event(double at, const char *from, const char *to, const char *detail,
                                 void *arg)
{
    (void)at;
    (void)from;
    (void)to;
    requeue_count *c = arg;
    if (detail && strstr(detail, " lost: requeued"))
        c->n++;
    return true;
}

static void liveness_requeue(daemon_ctx *d, const char *id, const char *owner, const char *host)
{
    requeue_count c = {0};
    if (store_job_events(d->st, id, liveness_count_event, &c) != STORE_OK)
        return;
    if (c.n >= d->cfg.host_loss_retries) {
        log_warn("job %s (%s): host %s lost; not requeued: it was %d times already "
                 "(host_loss_retries)", id, owner, host, c.n);
        return;
    }
    char dir[4096], ckpt[4200], err[300], detail[300];
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, id, NULL))
        return;
    if (!rundir_clear_ended(dir, err, sizeof err)) {
        log_error("job %s (%s): %s; not requeued", id, owner, err);
        return;
    }
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints/ckpt.bin", dir);
    snprintf(detail, sizeof detail, "host %s lost: requeued (%d of %d); %s", host, c.n + 1,
             d->cfg.host_loss_retries,
             access(ckpt, F_OK) == 0 ? "resumes from its last checkpoint"
                                     : "no checkpoint was written, it starts over");
    store_status rs = store_job_resume(d->st, id, 0, detail, daemon_now());
    if (rs == STORE_OK) {
        log_info("job %s (%s): %s", id, owner, detail);
        daemon_wake();
    } else {
        log_error("job %s (%s): could not requeue it after host %s was lost", id, owner, host);
    }
}

void liveness_host_lost(daemon_ctx *d, const store_job *job, const char *host)
{
    liveness_requeue(d, job->id, job->owner, host);
}

void liveness_await_probes(daemon_ctx *d, const store_job *job)
{
    if (!job->hosts || !liveness_grow((void **)&await, &cap_await, n_await, sizeof *await))
        return;
    awaiting *a = &await[n_await];
    a->hosts = strdup(job->hosts);
    if (!a->hosts)
        return;
    snprintf(a->id, sizeof a->id, "%s", job->id);
    snprintf(a->owner, sizeof a->owner, "%s", job->owner);
    n_await++;
    (void)d;
}

void liveness_tick(daemon_ctx *d)
{
    for (size_t i = 0; i < n_await;) {
        awaiting *a = &await[i];
        const char *hosts[PLACEMENT_MAX_HOSTS];
        int n = liveness_hosts(d, a->hosts, hosts);
        const char *lost = NULL;
        bool checking = false;
        for (int h = 0; h < n; h++) {
            bool down = false, busy = false;
            if (!cluster_host_health(d->cl, hosts[h], &down, &busy))
                continue;
            checking |= busy;
            if (down && !lost)
                lost = hosts[h];
        }
        if (checking) {
            i++;
            continue;
        }
        if (lost)
            liveness_requeue(d, a->id, a->owner, lost);
        free(a->hosts);
        await[i] = await[--n_await];
    }
}

void liveness_cleanup(void)
{
    for (size_t i = 0; i < n_await; i++)
        free(await[i].hosts);
    free(await);
    free(watch);
    await = NULL;
    watch = NULL;
    n_await = cap_await = n_watch = cap_watch = 0;
}
