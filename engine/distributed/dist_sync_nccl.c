/* dist_sync_nccl.c — the allreduce trainer's gradient exchange and optimizer step
 * when the rank's backend is a CUDA device: NCCL instead of MPI, the
 * optimizer's state on the device (gpu.h), so parameters and gradients stay
 * on the GPU for the whole step.
 *
 * The arithmetic is the MPI path's (dist_sync_grad.c): each rank scales its
 * mean gradient by its share of the global batch (dist_rank_share) and the
 * ranks sum, so a short last batch, or a rank with no samples, still gives
 * the mean over the global batch. The buckets are the MPI path's too
 * (gpu_bucket.h cuts on the same layer boundaries with the same limit).
 * With overlap (the default here: NCCL runs on a stream of its own, so it
 * costs the compute stream nothing) a bucket is queued as soon as the
 * backward pass has queued its layers (model_backward_hooked).
 *
 * The planning functions are plain C and run in every build; the rest
 * calls gpu.h, whose entry points fail clearly in a build without CUDA —
 * and dist_gpu_wanted() never selects this path there. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_sync_nccl.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_watchdog.h"
#include "gpu/gpu.h"

struct dist_gpu {
    gpu_comm *comm;
    gpu_optim *optim;
    gpu_bucket_plan plan;
    bool overlap;
};

float dist_rank_share(int batch, long total)
{
    return total > 0 ? (float)batch / (float)total : 0.0f;
}

void dist_param_spans(const model *m, gpu_param_span *spans)
{
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        /* The layer's whole slice, alignment padding included, so the
         * spans tile the buffer. */
        long off = l->param_span > 0 ? (long)(l->grads - m->grads) : 0;
        spans[i] = (gpu_param_span){off, l->param_span};
    }
}

bool dist_gpu_plan(const model *m, double bucket_mb, gpu_bucket_plan *plan, char *err,
                   size_t errlen)
{
    gpu_param_span *spans = calloc((size_t)m->n_layers + 1, sizeof *spans);
    if (!spans) {
        snprintf(err, errlen, "bucket plan: out of memory");
        return false;
    }
    dist_param_spans(m, spans);
    bool ok = gpu_bucket_plan_build(spans, m->n_layers, gpu_bucket_floats(bucket_mb), plan, err,
                                    errlen);
    free(spans);
    return ok;
}

bool dist_gpu_wanted(dist_ctx *c)
{
    int mine = !c->be->host_memory && gpu_built();
    int lo = mine, hi = mine;
    DIST_MPI(MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, c->comm));
    DIST_MPI(MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, c->comm));
    /* NCCL and MPI collectives do not match each other: a mixed job
     * would hang at the first step. */
    if (lo != hi)
        dist_die("allreduce: some ranks run on a CUDA device and others do not (backend %s "
                 "here); every rank must use the same backend", c->be->name);
    return mine != 0;
}

dist_gpu *dist_gpu_create(dist_ctx *c, bool overlap)
{
    char err[1024];
    dist_gpu *d = calloc(1, sizeof *d);
    if (!d)
        dist_die("out of memory");
    d->overlap = overlap;
    if (!dist_gpu_plan(c->m, c->spec->distributed.bucket_mb, &d->plan, err, sizeof err))
        dist_die("allreduce: %s", err);
    d->optim = gpu_optim_create(c->be, &c->spec->training.optimizer, c->m->n_params, err,
                                sizeof err);
    if (!d->optim)
        dist_die("allreduce: %s", err);
    if (gpu_optim_state_floats(d->optim) != optim_state_floats(c->optim))
        dist_die("allreduce: the device optimizer's state (%ld floats) does not match the "
                 "checkpoint layout (%ld floats)",
                 gpu_optim_state_floats(d->optim), optim_state_floats(c->optim));
    /* Collective over every rank: rank 0's NCCL unique id goes out by
     * MPI_Bcast. */
    dist_watchdog_tick("creating the NCCL communicator");
    d->comm = gpu_comm_create(c->be, c->comm, err, sizeof err);
    if (!d->comm)
        dist_die("allreduce: %s", err);
    dist_watchdog_tick("training");
    return d;
}

void dist_gpu_free(dist_gpu *d)
{
    if (!d)
        return;
    gpu_comm_free(d->comm);
    gpu_optim_free(d->optim);
    gpu_bucket_plan_free(&d->plan);
    free(d);
}

/* What the per-layer callback of the backward pass needs. */
typedef struct dist_gpu_hook {
    dist_gpu *d;
    model *m;
    float share;
} dist_gpu_hook;

/* Layer i's gradients are queued: scale them by the rank's share (on the
 * compute stream, so before the bucket's event) and tell the
 * communicator, which queues every bucket that became complete. */
static void dist_gpu_layer_done(void *ctx, int i)
{
    dist_gpu_hook *h = ctx;
    const layer *l = &h->m->layers[i];
    if (l->param_span > 0)
        h->m->be->scale(h->m->be, l->param_span, h->share, l->grads);
    gpu_comm_layer_done(h->d->comm, i);
}

void dist_gpu_backward_allreduce(dist_gpu *d, model *m, int batch, long total,
                                 double *comm_s)
{
    dist_gpu_hook h = {d, m, dist_rank_share(batch, total)};
    /* NCCL calls only queue work: what is timed is the host's share of
     * the exchange, the device-side time overlaps the backward pass. */
    double t0 = MPI_Wtime();
    dist_heartbeat_arrive();
    gpu_comm_begin(d->comm, &d->plan, m->grads, GPU_REDUCE_SUM);
    *comm_s += MPI_Wtime() - t0;
    if (batch == 0) {
        /* No samples here this step: contribute zeros to every bucket,
         * launched in the same order as the other ranks'. */
        m->be->zero(m->be, m->grads, m->n_params);
    } else if (d->overlap) {
        model_backward_hooked(m, batch, dist_gpu_layer_done, &h);
    } else {
        model_backward(m, batch);
        for (int i = m->n_layers - 1; i >= 0; i--)
            dist_gpu_layer_done(&h, i);
    }
    t0 = MPI_Wtime();
    gpu_comm_end(d->comm);
    *comm_s += MPI_Wtime() - t0;
}

void dist_gpu_optimizer_step(dist_gpu *d, model *m, float lr)
{
    gpu_optim_step(d->optim, m->params, m->grads, lr);
}

void dist_gpu_optim_save(const dist_gpu *d, float *dst)
{
    gpu_optim_state_save(d->optim, dst);
}

void dist_gpu_optim_load(dist_gpu *d, const float *src)
{
    gpu_optim_state_load(d->optim, src);
}
