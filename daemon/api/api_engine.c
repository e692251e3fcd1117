/* api_engine.c — a request's punch-train run handed to the engine pool
 * (run/enginepool.h), so a prediction or generation never holds a thread
 * that submits, state reads and cancels need (issue 31).
 *
 * The handler's checks run where it was called (a writer thread, its
 * connection suspended by http.c); the run and the reply go to a pool
 * thread with a copy of the request, which then resumes the connection
 * through http.c's hook. A refusal (pool full, caller at its cap, server
 * stopping) is answered at once with Retry-After. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/engine_run.h"
#include "run/enginepool.h"

/* Seconds a request dropped by a stopping server is told to wait: about a
 * restart's time. */
#define API_ENGINE_RETRY_STOPPING 5

typedef struct api_engine_task {
    api_request r; /* what the reply needs: connection, caller, resume hook */
    char job_id[STORE_ID_LEN + 1];
    char dir[4096];
    char **argv; /* copies, NULL-terminated */
    int timeout_s;
    enum MHD_Result (*reply)(api_request *r, const char *dir, int rc, const char *msg);
} api_engine_task;

static void api_engine_task_free(api_engine_task *t)
{
    for (size_t i = 0; t->argv && t->argv[i]; i++)
        free(t->argv[i]);
    free(t->argv);
    free(t);
}

/* The task for e, with copies of what outlives the handler; NULL when out
 * of memory. */
static api_engine_task *api_engine_task_new(const api_request *r, const api_engine_run *e)
{
    char threads[16];
    snprintf(threads, sizeof threads, "%d", r->job && r->job->threads > 0 ? r->job->threads : 1);
    const char *argv[] = {r->d->engine, e->spec,  "--out",     e->dir, "--weights",
                          e->weights,   e->mode,  e->input,    "--threads", threads};
    size_t n = sizeof argv / sizeof argv[0];
    api_engine_task *t = calloc(1, sizeof *t);
    if (!t || !(t->argv = calloc(n + 1, sizeof *t->argv))) {
        free(t);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(t->argv[i] = strdup(argv[i]))) {
            api_engine_task_free(t);
            return NULL;
        }
    t->r = *r;
    t->r.job = NULL; /* the dispatcher's, freed when the handler returns */
    t->r.body = "";
    t->r.body_len = 0;
    t->r.stream = NULL;
    t->r.name = NULL;
    snprintf(t->job_id, sizeof t->job_id, "%s", r->job_id ? r->job_id : "");
    t->r.job_id = t->job_id;
    snprintf(t->dir, sizeof t->dir, "%s", e->dir);
    t->timeout_s = e->timeout_s;
    t->reply = e->reply;
    return t;
}

/* Remove dir and the files the engine left in it (it makes no folders). */
static void api_engine_remove_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno != ENOENT)
            log_warn("cannot clear %s: %s", dir, strerror(errno));
        return;
    }
    struct dirent *de;
    while ((de = readdir(dp)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
            unlinkat(dirfd(dp), de->d_name, 0) != 0)
            log_warn("cannot remove %s/%s: %s", dir, de->d_name, strerror(errno));
    closedir(dp);
    if (rmdir(dir) != 0)
        log_warn("cannot remove %s: %s", dir, strerror(errno));
}

static enum MHD_Result api_engine_stopping(api_request *r)
{
    r->retry_after = API_ENGINE_RETRY_STOPPING;
    return api_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                           "punchcardd is shutting down; try again when it is back");
}

/* The engine's run and the reply, or (dropped) the shutdown's 503. */
static enum MHD_Result api_engine_answer(api_engine_task *t, bool dropped)
{
    if (dropped)
        return api_engine_stopping(&t->r);
    char msg[1024];
    enginepool *pool = t->r.engines;
    int rc = engine_run_until(t->argv, t->timeout_s, pool ? enginepool_stop_fd(pool) : -1, msg,
                              sizeof msg);
    if (rc != 0 && pool && enginepool_stopping(pool))
        return api_engine_stopping(&t->r);
    return t->reply(&t->r, t->dir, rc, msg);
}

/* A pool thread's task (enginepool_fn): answer, clean up, resume. */
static void api_engine_task_run(void *arg, bool dropped)
{
    api_engine_task *t = arg;
    enum MHD_Result ret = api_engine_answer(t, dropped);
    api_engine_remove_dir(t->dir);
    /* From here the connection may end and its request be freed: only the
     * task's own copy is touched. */
    t->r.resume(t->r.resume_ctx, &t->r, ret);
    api_engine_task_free(t);
}

enum MHD_Result api_engine_submit(api_request *r, const api_engine_run *e)
{
    api_engine_task *t = api_engine_task_new(r, e);
    if (!t) {
        api_engine_remove_dir(e->dir);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    if (!r->engines || !r->resume) {
        /* Not suspended (no pool to hand it to): run it on this thread. */
        enum MHD_Result ret = api_engine_answer(t, false);
        r->status = t->r.status;
        api_engine_remove_dir(t->dir);
        api_engine_task_free(t);
        return ret;
    }
    enginepool_result res =
        enginepool_submit(r->engines, r->caller.identity, api_engine_task_run, t);
    if (res == ENGINEPOOL_QUEUED) {
        r->answered_later = true;
        return MHD_YES;
    }
    api_engine_task_free(t);
    api_engine_remove_dir(e->dir);
    const config *cfg = &r->d->cfg;
    r->retry_after = enginepool_retry_after(r->engines);
    switch (res) {
    case ENGINEPOOL_USER_FULL:
        return api_reply_error(r, MHD_HTTP_TOO_MANY_REQUESTS, NULL,
                               "you have %d predictions or generations running or waiting "
                               "(predict_per_user); try again in %d s",
                               cfg->predict_per_user, r->retry_after);
    case ENGINEPOOL_FULL:
        return api_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                               "the server is busy: %d predictions or generations run and %d "
                               "wait (predict_threads, predict_queue); try again in %d s",
                               cfg->predict_threads, cfg->predict_queue, r->retry_after);
    case ENGINEPOOL_STOPPING:
        return api_engine_stopping(r);
    default:
        r->retry_after = 0;
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
}

bool api_engine_metrics(enginepool *p, char **text, size_t *len)
{
    int running, waiting;
    enginepool_counts(p, &running, &waiting);
    char add[512];
    int n = snprintf(add, sizeof add,
                     "# HELP punchcard_predict_running Predictions and generations running "
                     "(predict_threads).\n# TYPE punchcard_predict_running gauge\n"
                     "punchcard_predict_running %d\n"
                     "# HELP punchcard_predict_waiting Predictions and generations waiting for "
                     "a thread (predict_queue).\n# TYPE punchcard_predict_waiting gauge\n"
                     "punchcard_predict_waiting %d\n", running, waiting);
    if (n < 0 || (size_t)n >= sizeof add)
        return false;
    char *grown = realloc(*text, *len + (size_t)n + 1);
    if (!grown)
        return false;
    memcpy(grown + *len, add, (size_t)n + 1);
    *text = grown;
    *len += (size_t)n;
    return true;
}
