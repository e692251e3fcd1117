/* dist_optim.c — what every distributed trainer does around its host
 * optimizer step: training.grad_accum_steps (the mean of K micro-batches'
 * gradients), training.clip_norm (global-norm clipping), the per-step rate
 * (warm_up_batches, cosine) counted in optimizer steps, and AdamW's decay
 * ranges. The allreduce trainer reduces once per group and clips the
 * reduced gradient, so every rank applies the same update; the others
 * (averaging, ensemble, the asynchronous workers) clip the gradient their
 * own step applies. Device backends refuse the three features
 * (train_optim_device_check) until gpu_optim implements them. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_optim.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_sync_nccl.h"
#include "optim/schedule.h"
#include "train/train_optim.h"

void dist_optim_setup(dist_ctx *c)
{
    const spec_training *tr = &c->spec->training;
    char err[512];
    if (!c->be->host_memory && train_optim_device_check(tr, err, sizeof err) != 0)
        dist_die("%s", err);
    int k = c->be->host_memory ? tr->grad_accum_steps : 1;
    if (train_optim_decay_ranges(c->optim, c->m, &tr->optimizer) != 0 ||
        grad_accum_init(&c->accum, c->m->n_params, k) != 0)
        dist_die("out of memory for %ld parameters", c->m->n_params);
}

float dist_optim_epoch_lr(dist_ctx *c, int epoch)
{
    return (float)schedule_epoch_begin(&c->sched, &c->spec->training, epoch);
}

void dist_optim_free(dist_ctx *c)
{
    grad_accum_free(&c->accum);
}

float dist_optim_lr(const dist_ctx *c, long epoch, long step, long steps_per_epoch, float lr)
{
    const spec_training *tr = &c->spec->training;
    uint64_t done = schedule_opt_steps(epoch, step, steps_per_epoch, tr->grad_accum_steps);
    uint64_t run = schedule_opt_steps(tr->epochs, 0, steps_per_epoch, tr->grad_accum_steps);
    return schedule_step_lr(tr, done, run, lr);
}

/* The group's mean gradient into m->grads, or false while the group is
 * incomplete (`last`: the epoch ends here, so a partial group steps). */
static bool dist_optim_group(dist_ctx *c, bool last)
{
    model *m = c->m;
    float *g = grad_accum_add(&c->accum, m->grads);
    if (!g && last)
        g = grad_accum_mean(&c->accum);
    if (!g)
        return false;
    if (g != m->grads)
        memcpy(m->grads, g, (size_t)m->n_params * sizeof *g);
    return true;
}

bool dist_optim_local_step(dist_ctx *c, float lr, bool last)
{
    if (!dist_optim_group(c, last))
        return false;
    optim_clip_norm(c->m->grads, c->m->n_params, c->spec->training.clip_norm);
    model_optimizer_step(c->m, c->optim, lr);
    return true;
}

bool dist_optim_reduced_step(dist_ctx *c, int batch, long total, float lr, bool last)
{
    model *m = c->m;
    if (batch > 0)
        model_backward(m, batch);
    else
        memset(m->grads, 0, (size_t)m->n_params * sizeof *m->grads);
    /* This rank's share of the micro-step's global mean. */
    float share = dist_rank_share(batch, total);
    for (long i = 0; i < m->n_params; i++)
        m->grads[i] *= share;
    if (!dist_optim_group(c, last))
        return false;
    dist_heartbeat_arrive();
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, m->grads, (int)m->n_params, MPI_FLOAT, MPI_SUM,
                           c->comm));
    c->comm_s += MPI_Wtime() - t0;
    optim_clip_norm(m->grads, m->n_params, c->spec->training.clip_norm);
    model_optimizer_step(m, c->optim, lr);
    return true;
}
