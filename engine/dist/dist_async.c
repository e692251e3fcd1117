/* dist_async.c — set-up of the asynchronous trainers: the initial center
 * (fresh weights, or the checkpoint's on --resume) broadcast from rank 0,
 * then rank 0 serves (dist_server.c) and the others work
 * (dist_worker.c). On resume the workers restart from the center with
 * fresh local optimizers: asynchronous runs are not reproducible anyway,
 * so the checkpoint keeps only what the server owns. */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_ps.h"

static void dist_async_resume(dist_ctx *c, float *center, dist_ps_start *start,
                              long *worker_commits)
{
    dist_ckpt_meta meta;
    dist_replica *reps = NULL;
    char err[1024];
    if (dist_ckpt_load(c, &meta, &reps, 0, err, sizeof err) < 0)
        dist_die("--resume: %s", err);
    memcpy(center, reps[0].params, (size_t)c->m->n_params * sizeof(float));
    memcpy(center + c->m->n_params, reps[0].state, (size_t)c->m->n_state * sizeof(float));
    start->epoch = meta.epochs_done;
    start->clock = meta.commits;
    start->staleness_sum = meta.staleness_sum;
    c->sched = meta.sched;
    for (int i = 0; i < meta.n_workers && i < c->workers; i++)
        worker_commits[i] = meta.worker_commits[i];
    dist_ckpt_free(&meta, reps);
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
    dist_ps_start start = {0};
    if (c->rank == 0) {
        model_get_params(c->m, center);
        model_get_state(c->m, center + np);
        if (c->opt->resume)
            dist_async_resume(c, center, &start, worker_commits);
    }
    DIST_MPI(MPI_Bcast(&start, (int)sizeof start, MPI_BYTE, 0, c->comm));
    /* The server's schedule: workers start from it and adopt its updates. */
    DIST_MPI(MPI_Bcast(&c->sched, (int)sizeof c->sched, MPI_BYTE, 0, c->comm));
    DIST_MPI(MPI_Bcast(center, (int)(np + ns), MPI_FLOAT, 0, c->comm));
    long *wc = worker_commits;
    DIST_MPI(MPI_Bcast(wc, c->workers, MPI_LONG, 0, c->comm));
    model_set_params(c->m, center);
    model_set_state(c->m, center + np);
    int rc = c->rank == 0 ? dist_ps_serve(c, center, &start, worker_commits)
                          : dist_ps_work(c, center, &start, worker_commits[c->rank - 1]);
    free(center);
    free(worker_commits);
    return rc;
}
