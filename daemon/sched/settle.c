/* settle.c — how a started job ends: its final state recorded, its
 * processes gone, its error readable by its user (contract in settle.h). */
#include "sched/settle.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/hostfail.h"
#include "grow/grow.h"
#include "jobspec/spec.h"
#include "log.h"
#include "run/finalstate.h"
#include "sched/liveness.h"
#include "sched/placement.h"
#include "sweep/sweep.h"

/* Jobs already sent SIGTERM by this process (after a restart they get one
 * more, which is harmless). */
static char (*term_sent)[STORE_ID_LEN + 1];
static size_t n_term_sent, cap_term_sent;

bool settle_term_was_sent(const char *id)
{
    for (size_t i = 0; i < n_term_sent; i++)
        if (strcmp(term_sent[i], id) == 0)
            return true;
    return false;
}

void settle_term_mark(const char *id)
{
    if (!grow_reserve((void **)&term_sent, &cap_term_sent, n_term_sent + 1, sizeof *term_sent))
        return;
    snprintf(term_sent[n_term_sent++], STORE_ID_LEN + 1, "%s", id);
}

static void settle_term_forget(const char *id)
{
    for (size_t i = 0; i < n_term_sent; i++)
        if (strcmp(term_sent[i], id) == 0) {
            memcpy(term_sent[i], term_sent[--n_term_sent], sizeof term_sent[i]);
            return;
        }
}

void settle_cleanup(void)
{
    free(term_sent);
    term_sent = NULL;
    n_term_sent = cap_term_sent = 0;
}

/* Replace each `from` in s (of capacity cap) with `to`. */
static void settle_replace(char *s, size_t cap, const char *from, const char *to)
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
void settle_relative_paths(const daemon_ctx *d, const char *dir, char *error,
                                   size_t cap)
{
    char with_slash[4200];
    snprintf(with_slash, sizeof with_slash, "%s/", dir);
    settle_replace(error, cap, with_slash, "./");
    settle_replace(error, cap, dir, "the run directory");
    char roots[sizeof d->cfg.datasets];
    snprintf(roots, sizeof roots, "%s", d->cfg.datasets);
    char *save = NULL;
    for (char *root = strtok_r(roots, ":", &save); root; root = strtok_r(NULL, ":", &save)) {
        snprintf(with_slash, sizeof with_slash, "%s/", root);
        settle_replace(error, cap, with_slash, "");
        settle_replace(error, cap, root, "the dataset root");
    }
    snprintf(with_slash, sizeof with_slash, "%s/", d->cfg.data_dir);
    settle_replace(error, cap, with_slash, "");
}

/* Keep an error message printable ASCII: it goes into JSON and logs. */
void settle_sanitize(char *s)
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
typedef enum settle_blame { BLAME_NONE, BLAME_HOST, BLAME_SUSPECTS } settle_blame;

static settle_blame settle_blame_host(daemon_ctx *d, const store_job *job,
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
        settle_sanitize(reason);
        for (int i = 0; i < a.n; i++)
            cluster_suspect(d->cl, mine[i], reason);
        return BLAME_SUSPECTS;
    }
    snprintf(error, cap, "host %s failed: %s", host, what);
    char reason[400];
    snprintf(reason, sizeof reason, "job %s: %s", job->id, what);
    settle_sanitize(reason);
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
void settle_prune_checkpoints(const store_job *job, const char *dir)
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
int settle_signal_job(const store_job *job, const char *dir, int sig)
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
static void settle_note_reused(const store_job *job, char *error, size_t cap)
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

void settle_job(daemon_ctx *d, const store_job *job, const char *dir, const rundir_exit *ex,
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
    settle_blame blame = BLAME_NONE;
    job_state final_state = finalstate_decide(&facts, error, sizeof error);
    if (decided) {
        final_state = *decided;
        snprintf(error, sizeof error, "%s", decided_error ? decided_error : "");
    } else if (final_state == JOB_FAILED && !ex) {
        settle_note_reused(job, error, sizeof error);
    } else if (final_state == JOB_FAILED) {
        blame = settle_blame_host(d, job, log_path, error, sizeof error, lost, sizeof lost);
    }
    settle_relative_paths(d, dir, error, sizeof error);
    settle_sanitize(error);
    settle_prune_checkpoints(job, dir);
    char *progress = json_dumps(p.progress, JSON_COMPACT | JSON_REAL_PRECISION(15));
    char *result = p.result ? json_dumps(p.result, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    int code = ex ? ex->exit_code : 0;
    store_status rs = store_job_finish(d->st, job->id, final_state, ex ? &code : NULL,
                                       error[0] ? error : NULL, progress, result, daemon_now());
    if (rs == STORE_OK) {
        log_info("job %s (%s): %s%s%s", job->id, job->owner, job_state_name(final_state),
                 error[0] ? ": " : "", error);
        settle_term_forget(job->id);
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
    settle_signal_job(job, dir, SIGKILL);
}
