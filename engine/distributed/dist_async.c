/* dist_async.c — set-up of the asynchronous trainers: the initial center
 * (fresh weights, or the checkpoint's on --resume) broadcast from rank 0,
 * then rank 0 serves (dist_async_server.c) and the others work
 * (dist_async_worker.c).
 *
 * On resume rank 0 restores the center and its counters from replica 0
 * and, when the checkpoint holds them (replicas 1..W), sends each worker
 * its own variables: params, batchnorm state and optimizer state (eamsgd:
 * and its momentum). The elastic workers (aeasgd, eamsgd) go on from their own
 * params, which the elastic force keeps apart from the center; the
 * residual workers (downpour, adag, dynsgd) take their optimizer state and
 * start from the center, as after any pull (their params are the center
 * at their last pull plus what they have not committed yet, and the
 * center holds everything they committed). A checkpoint with the center
 * alone (written before workers' replicas existed) resumes every worker
 * from the center with a fresh optimizer. Asynchronous runs are not
 * reproducible, so a resumed run goes on from the checkpoint, not
 * bit-exactly as an uninterrupted one. */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_async_protocol.h"
#include "distributed/dist_checkpoint.h"
#include "distributed/dist_error.h"
#include "distributed/dist_trainers.h"
#include "train/warmstart.h"

/* Rank 0: the checkpoint's center, counters and schedule; returns the
 * workers' variables (W * dist_ps_state_floats, worker by worker; free
 * it) when the checkpoint holds them, else NULL. */
static float *dist_async_resume(dist_ctx *c, float *center, dist_ps_start *start,
                                long *worker_commits)
{
    dist_ckpt_meta meta;
    dist_replica *reps = NULL;
    char err[1024];
    if (dist_ckpt_load(c, &meta, &reps, -1, err, sizeof err) < 0)
        dist_die("--resume: %s", err);
    long np = c->m->n_params, ns = c->m->n_state, no = dist_ps_optim_floats(c);
    float *states = NULL;
    if (meta.n_replicas != 1) {
        if (meta.n_replicas != 1 + c->workers || meta.n_optim != no)
            dist_die("--resume: the checkpoint's workers' variables (%d replicas of %ld "
                     "optimizer floats) do not fit this job (%d workers, %ld floats)",
                     meta.n_replicas - 1, meta.n_optim, c->workers, no);
        long per = np + ns + no;
        states = malloc((size_t)(c->workers * per + 1) * sizeof(float));
        if (!states)
            dist_die("--resume: out of memory for the workers' variables");
        for (int w = 0; w < c->workers; w++) {
            float *dst = states + (long)w * per;
            memcpy(dst, reps[1 + w].params, (size_t)np * sizeof(float));
            memcpy(dst + np, reps[1 + w].state, (size_t)ns * sizeof(float));
            memcpy(dst + np + ns, reps[1 + w].optim, (size_t)no * sizeof(float));
        }
        start->worker_state = 1;
    }
    memcpy(center, reps[0].params, (size_t)c->m->n_params * sizeof(float));
    memcpy(center + c->m->n_params, reps[0].state, (size_t)c->m->n_state * sizeof(float));
    start->epoch = meta.epochs_done;
    start->clock = meta.commits;
    start->staleness_sum = meta.staleness_sum;
    c->sched = meta.sched;
    for (int i = 0; i < meta.n_workers && i < c->workers; i++)
        worker_commits[i] = meta.worker_commits[i];
    dist_ckpt_free(&meta, reps);
    return states;
}

int dist_run_async(dist_ctx *c)
{
    const job_spec *s = c->spec;
    char err[1024];
    long np = c->m->n_params, ns = c->m->n_state;
    float *center = malloc((size_t)(np + ns + 1) * sizeof(float));
    long *worker_commits = calloc((size_t)c->workers, sizeof *worker_commits);
    if (!center || !worker_commits)
        dist_die("out of memory for the center variable (%ld floats)", np + ns);
    if (model_init_params(c->m, s->training.seed, err, sizeof err) < 0)
        dist_die("%s", err);
    /* An imported model starts from the file's weights on every rank. */
    if (s->model_file && warmstart_load(c->m, s, err, sizeof err) != 0)
        dist_die("%s", err);
    dist_ps_start start = {0};
    float *states = NULL;
    if (c->rank == 0) {
        model_get_params(c->m, center);
        model_get_state(c->m, center + np);
        if (c->opt->resume)
            states = dist_async_resume(c, center, &start, worker_commits);
    }
    DIST_MPI(MPI_Bcast(&start, (int)sizeof start, MPI_BYTE, 0, c->comm));
    /* The server's schedule: workers start from it and adopt its updates. */
    DIST_MPI(MPI_Bcast(&c->sched, (int)sizeof c->sched, MPI_BYTE, 0, c->comm));
    DIST_MPI(MPI_Bcast(center, (int)(np + ns), MPI_FLOAT, 0, c->comm));
    long *wc = worker_commits;
    DIST_MPI(MPI_Bcast(wc, c->workers, MPI_LONG, 0, c->comm));
    model_set_params(c->m, center);
    model_set_state(c->m, center + np);
    /* Each worker receives its variables first thing in dist_ps_work. */
    long per = dist_ps_state_floats(c);
    for (int w = 0; states && w < c->workers; w++)
        DIST_MPI(MPI_Send(states + (long)w * per, (int)per, MPI_FLOAT, w + 1, DIST_TAG_STATE,
                          c->comm));
    free(states);
    int rc = c->rank == 0 ? dist_ps_serve(c, center, &start, worker_commits)
                          : dist_ps_work(c, center, &start, worker_commits[c->rank - 1]);
    free(center);
    free(worker_commits);
    return rc;
}
