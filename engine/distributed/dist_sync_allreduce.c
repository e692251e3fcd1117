/* dist_sync_allreduce.c — synchronous data parallel training. Step s of an
 * epoch covers the global batch perm[s*G, (s+1)*G) with G = workers *
 * batch_size; rank r takes its sub-slice [s*G + r*B, s*G + (r+1)*B), so
 * the data order is the single trainer's with batch G, whatever the rank
 * count. Each rank holds only a block of the training set; dist_data_batch
 * fetches the samples of its sub-slices from the ranks that hold them.
 * Gradients are averaged over the global batch (dist_sync_grad.c) and every
 * rank applies the same update from the same parameters, so the
 * ranks stay bit-identical and equal `single` with batch G up to float
 * rounding of the gradient sum (with distributed.compression "bf16", up to
 * bf16 rounding, its error fed back into the next step).
 *
 * Batchnorm running statistics are per rank during an epoch (each rank
 * sees its own samples) and averaged at the end of every epoch.
 *
 * On CUDA devices the exchange is NCCL's and the optimizer steps on the
 * device (dist_sync_nccl.c), with the same arithmetic and checkpoint layout;
 * parameters cross to the host only at start, at epoch ends (batchnorm
 * statistics, checkpoints, evaluation) and for the final weights. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_checkpoint.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_eval.h"
#include "distributed/dist_optim.h"
#include "distributed/dist_profile.h"
#include "distributed/dist_report.h"
#include "distributed/dist_sync.h"
#include "distributed/dist_sync_data.h"
#include "distributed/dist_sync_grad.h"
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_sync_nccl.h"
#include "distributed/dist_trainers.h"
#include "distributed/dist_watchdog.h"
#include "train/warmstart.h"

static long dist_ar_steps(const dist_ctx *c, long global_batch)
{
    long steps = (c->n_train + global_batch - 1) / global_batch;
    long cap = c->spec->training.steps_per_epoch;
    return cap > 0 && cap < steps ? cap : steps;
}

/* Rank 0 loads the checkpoint; everyone receives model, optimizer,
 * schedule and counters. Returns the epochs already done. */
static int dist_ar_resume(dist_ctx *c, dist_gpu *dg)
{
    long n_optim = optim_state_floats(c->optim);
    float *ostate = malloc((size_t)(n_optim + 1) * sizeof(float));
    if (!ostate)
        dist_die("out of memory");
    int64_t head[2] = {0, 0};
    if (c->rank == 0) {
        dist_ckpt_meta meta;
        dist_replica *reps = NULL;
        char err[1024];
        if (dist_ckpt_load(c, &meta, &reps, n_optim, err, sizeof err) < 0)
            dist_die("--resume: %s", err);
        memcpy(c->host_params, reps[0].params, (size_t)c->m->n_params * sizeof(float));
        memcpy(c->host_state, reps[0].state, (size_t)c->m->n_state * sizeof(float));
        memcpy(ostate, reps[0].optim, (size_t)n_optim * sizeof(float));
        model_set_params(c->m, c->host_params);
        model_set_state(c->m, c->host_state);
        c->sched = meta.sched;
        head[0] = meta.epochs_done;
        head[1] = (int64_t)meta.global_step;
        dist_ckpt_free(&meta, reps);
    }
    DIST_MPI(MPI_Bcast(head, 2, MPI_INT64_T, 0, c->comm));
    DIST_MPI(MPI_Bcast(&c->sched, (int)sizeof c->sched, MPI_BYTE, 0, c->comm));
    DIST_MPI(MPI_Bcast(ostate, (int)n_optim, MPI_FLOAT, 0, c->comm));
    if (!optim_state_valid(c->optim, ostate, n_optim))
        dist_die("--resume: the checkpoint's optimizer state does not fit this job");
    if (dg)
        dist_gpu_optim_load(dg, ostate);
    else
        optim_state_load(c->optim, ostate);
    free(ostate);
    c->global_step = (uint64_t)head[1];
    return (int)head[0];
}

/* Everyone starts from rank 0's parameters and state. */
static void dist_ar_bcast_model(dist_ctx *c)
{
    if (c->rank == 0) {
        model_get_params(c->m, c->host_params);
        model_get_state(c->m, c->host_state);
    }
    DIST_MPI(MPI_Bcast(c->host_params, (int)c->m->n_params, MPI_FLOAT, 0, c->comm));
    DIST_MPI(MPI_Bcast(c->host_state, (int)c->m->n_state, MPI_FLOAT, 0, c->comm));
    model_set_params(c->m, c->host_params);
    model_set_state(c->m, c->host_state);
}

static void dist_ar_average_state(dist_ctx *c)
{
    if (c->m->n_state == 0)
        return;
    model_get_state(c->m, c->host_state);
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, c->host_state, (int)c->m->n_state, MPI_FLOAT, MPI_SUM,
                           c->comm));
    c->comm_s += MPI_Wtime() - t0;
    for (long i = 0; i < c->m->n_state; i++)
        c->host_state[i] /= (float)c->size;
    model_set_state(c->m, c->host_state);
}

static void dist_ar_checkpoint(dist_ctx *c, dist_gpu *dg, int epochs_done)
{
    if (c->rank != 0)
        return;
    long n_optim = optim_state_floats(c->optim);
    float *ostate = malloc((size_t)(n_optim + 1) * sizeof(float));
    if (!ostate)
        dist_die("out of memory");
    if (dg)
        dist_gpu_optim_save(dg, ostate);
    else
        optim_state_save(c->optim, ostate);
    model_get_params(c->m, c->host_params);
    model_get_state(c->m, c->host_state);
    dist_ckpt_meta meta = {.epochs_done = epochs_done, .global_step = c->global_step,
                           .n_replicas = 1, .sched = c->sched};
    dist_replica rep = {c->host_params, c->host_state, ostate};
    char err[1024];
    if (dist_ckpt_save(c, &meta, &rep, n_optim, err, sizeof err) < 0)
        dist_die("checkpoint: %s", err);
    free(ostate);
}

/* One step: this rank's part of the global batch, backward, exchange,
 * update. Adds the local loss and metrics to *run. */
static void dist_ar_step(dist_ctx *c, dist_grad *g, dist_gpu *dg, int epoch, long s, long gb,
                         float lr, dist_sums *run)
{
    const int B = c->spec->training.batch_size;
    long lo = s * gb, hi = lo + gb < c->n_train ? lo + gb : c->n_train;
    long my_lo = lo + (long)c->rank * B;
    long my_hi = my_lo + B < hi ? my_lo + B : hi;
    int b = my_hi > my_lo ? (int)(my_hi - my_lo) : 0;
    dist_profile_begin(c);
    const int64_t *rows = dist_data_batch(c, s, my_lo, b);
    if (b > 0) {
        char err[512];
        if (model_load_train_batch(c->m, c->data, rows, b, epoch, err, sizeof err) < 0)
            dist_die("%s", err);
        dist_profile_mark(c, PROFILE_LOAD);
        model_forward(c->m, b, true, c->global_step * (uint64_t)c->size + (uint64_t)c->rank);
        dist_profile_mark(c, PROFILE_FORWARD);
        batch_metrics bm = {0};
        double loss = model_loss(c->m, b, &bm);
        dist_sums_add_batch(run, c->m, loss, &bm, b);
        dist_profile_mark(c, PROFILE_LOSS);
    }
    /* training.warm_up_batches or cosine: every rank alike, per optimizer
     * step (grad_accum_steps micro-steps make one). */
    long steps = dist_ar_steps(c, gb);
    lr = dist_optim_lr(c, epoch, s, steps, lr);
    if (dg) {
        dist_watchdog_tick("exchanging gradients (NCCL)");
        dist_gpu_backward_allreduce(dg, c->m, b, hi - lo, &c->comm_s);
        dist_gpu_optimizer_step(dg, c->m, lr);
    } else if (c->accum.k > 1) {
        dist_watchdog_tick("exchanging gradients (MPI_Allreduce)");
        dist_optim_reduced_step(c, b, hi - lo, lr, s + 1 == steps);
    } else {
        dist_watchdog_tick("exchanging gradients (MPI_Allreduce)");
        dist_grad_backward_allreduce(g, c->m, b, hi - lo, &c->comm_s);
        /* The reduced gradient is the same on every rank: so is its clip. */
        optim_clip_norm(c->m->grads, c->m->n_params, c->spec->training.clip_norm);
        model_optimizer_step(c->m, c->optim, lr);
    }
    dist_profile_mark(c, PROFILE_BACKWARD);
    dist_profile_end(c);
    c->global_step++;
    dist_watchdog_tick("training");
}

/* Rank 0: model_checkpoint's weights file (every rank holds the same). */
static void dist_ar_save_weights(dist_ctx *c, int epochs_done)
{
    char err[1024];
    model_get_params(c->m, c->host_params);
    model_get_state(c->m, c->host_state);
    if (dist_write_epoch_weights(c, c->host_params, c->host_state, epochs_done, -1, err,
                                 sizeof err) < 0)
        dist_die("model_checkpoint: %s", err);
}

/* training.evaluate: the test set before the first step (not on resume),
 * each rank evaluating its slice of it. */
static void dist_ar_evaluate_before(dist_ctx *c)
{
    if (!c->spec->training.evaluate || c->global_step > 0 || c->lay.n_test <= 0)
        return;
    dist_sums test = {0};
    dist_eval_sharded(c, &c->test, &test);
    if (c->rank == 0)
        dist_report_evaluate(c->rep, &test);
}

int dist_run_allreduce(dist_ctx *c)
{
    const job_spec *s = c->spec;
    char err[1024];
    long gb = (long)c->size * s->training.batch_size;
    long steps = dist_ar_steps(c, gb);
    if (model_init_params(c->m, s->training.seed, err, sizeof err) < 0)
        dist_die("%s", err);
    /* An imported model starts from the file's weights on every rank. */
    if (s->model_file && warmstart_load(c->m, s, err, sizeof err) != 0)
        dist_die("%s", err);
    /* NCCL overlaps on a stream of its own, so it is on unless
     * PUNCH_DIST_OVERLAP=0; on the CPU overlap is opt-in. */
    engine_overlap overlap = c->opt->env.overlap;
    bool gpu_overlap = overlap != ENGINE_OVERLAP_OFF;
    dist_gpu *dg = dist_gpu_wanted(c) ? dist_gpu_create(c, gpu_overlap) : NULL;
    int start = 0;
    if (c->opt->resume)
        start = dist_ar_resume(c, dg);
    dist_ar_bcast_model(c);
    /* NCCL has a bf16 type of its own, but the device path has no error
     * feedback yet: refuse rather than send fp32 unasked. */
    if (dg && s->distributed.compression != SPEC_COMPRESSION_NONE)
        dist_die("distributed.compression \"bf16\" runs on CPU ranks only for now (this rank "
                 "trains on a CUDA device, whose exchange is NCCL's); use \"none\"");
    dist_grad *g = dg ? NULL
                      : dist_grad_create(c->m, c->comm, s->distributed.bucket_mb,
                                         overlap == ENGINE_OVERLAP_ON,
                                         s->distributed.compression);
    dist_sums *per = calloc((size_t)c->size, sizeof *per);
    int *ranks = calloc((size_t)c->size, sizeof *ranks);
    if ((!g && !dg) || !per || !ranks)
        dist_die("out of memory");
    for (int r = 0; r < c->size; r++)
        ranks[r] = r;
    bool check = c->opt->env.check_sync;
    if (c->rank == 0) {
        c->rep = dist_report_open(c, start, err, sizeof err);
        if (!c->rep)
            dist_die("%s", err);
        dist_report_start(c->rep, steps, c->n_train);
    }
    dist_ar_evaluate_before(c);
    double t_train = MPI_Wtime();
    for (int epoch = start; epoch < s->training.epochs; epoch++) {
        float lr = dist_optim_epoch_lr(c, epoch);
        float lr_used = s->distributed.learning_rate_scaling ? lr * c->size : lr;
        dist_data_epoch(c, s->training.seed, epoch);
        dist_sums run = {0};
        double t0 = MPI_Wtime();
        for (long st = 0; st < steps; st++) {
            dist_ar_step(c, g, dg, epoch, st, gb, lr_used, &run);
            if (check)
                dist_check_identical(c, c->global_step);
            if (c->rank == 0)
                dist_report_step(c->rep, epoch, st + 1, steps, &run,
                                 run.n * c->size / (MPI_Wtime() - t0));
        }
        dist_data_epoch_end(c);
        double secs = MPI_Wtime() - t0;
        dist_heartbeat_arrive();
        dist_ar_average_state(c);
        dist_sums total = dist_gather_sums(c, &run, per);
        dist_sums val = {0};
        bool has_val = c->lay.n_val > 0;
        if (has_val)
            dist_eval_sharded(c, &c->val, &val);
        if (c->rank == 0) {
            /* The rate of the epoch's last step, as the single trainer
             * records it (cosine and warm-up move it off the base rate). */
            float last_lr = dist_optim_lr(c, epoch, steps - 1, steps, lr_used);
            dist_epoch_info e = {.epoch = epoch, .train = total, .has_val = has_val,
                                 .val = val, .lr = last_lr, .seconds = secs,
                                 .samples = total.n, .per_worker = per,
                                 .n_workers = c->size, .worker_ranks = ranks};
            if (dist_report_epoch(c->rep, &e, err, sizeof err) < 0)
                dist_die("%s", err);
        }
        bool save = false;
        bool stop = dist_sync_schedule(c, epoch, &total, has_val, &val, &save);
        if (save && c->rank == 0)
            dist_ar_save_weights(c, epoch + 1);
        dist_ar_checkpoint(c, dg, epoch + 1);
        if (stop)
            break;
    }
    c->train_s = MPI_Wtime() - t_train;
    if (check && c->rank == 0)
        fprintf(stderr, "allreduce: weights identical on all %d ranks after each of %llu steps\n",
                c->size, (unsigned long long)c->global_step);
    dist_sync_report_times(c);
    dist_sums test = {0};
    if (c->lay.n_test > 0)
        dist_eval_sharded(c, &c->test, &test);
    dist_profile_write(c);
    if (c->rank == 0)
        dist_sync_write_final(c, &test);
    dist_grad_free(g);
    dist_gpu_free(dg);
    free(per);
    free(ranks);
    return 0;
}
