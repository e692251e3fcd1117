/* dist_sync_replicas.c — trainers where every rank trains a replica of its own:
 *
 * averaging: replicas start from the same weights, each trains on its
 * contiguous shard of the epoch's permutation with its own optimizer, and
 * parameters and batchnorm state are averaged (MPI_Allreduce) every
 * distributed.sync_every_epochs epochs and after the last one (1 = the
 * dist-keras AveragingTrainer, n = dislib's sync-every-n-epochs). A
 * replica holds only a block of the training set; dist_data_batch fetches
 * its slice's samples from the ranks that hold them.
 * PUNCH_DIST_SHARDING=replicate gives every replica the whole permutation,
 * which makes averaging reproduce a single replica exactly (a test).
 *
 * ensemble: member k (rank k) has its own seed (training.seed + k) for its
 * initial weights and its data order, and trains on the whole training set
 * (fetched window by window from the members' blocks, dist_sync_data.c).
 * Validation and test metrics are those of the members' mean prediction;
 * every member's weights are saved as weights.member-K.safetensors, and
 * member 0's also as weights.safetensors / weights.npz.
 *
 * On a CUDA device the optimizer and its state live there (gpu.h), in
 * optim.h's checkpoint layout: a step never leaves the device. */
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
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_trainers.h"
#include "distributed/dist_watchdog.h"
#include "gpu/gpu.h"
#include "train/warmstart.h"

typedef struct dist_rep {
    dist_ctx *c;
    bool ensemble;
    unsigned long seed;     /* this rank's data order and initial weights */
    long lo, hi;            /* this rank's slice of the permutation */
    long steps;
    long n_optim;
    float *ostate;
    gpu_optim *dev_optim;   /* CUDA backends: the optimizer on the device */
} dist_rep;

static void dist_rep_plan(dist_rep *r)
{
    dist_ctx *c = r->c;
    long n = c->n_train;
    bool whole = r->ensemble || c->opt->env.replicate;
    r->lo = whole ? 0 : n * c->rank / c->size;
    r->hi = whole ? n : n * (c->rank + 1) / c->size;
    int B = c->spec->training.batch_size;
    r->steps = (r->hi - r->lo + B - 1) / B;
    long cap = c->spec->training.steps_per_epoch;
    if (cap > 0 && cap < r->steps)
        r->steps = cap;
}

/* Parameters and state (and optimizer state when with_optim) of every
 * rank to rank 0 (all_*: size * n floats there, NULL elsewhere). */
static void dist_rep_gather(dist_rep *r, float *all_params, float *all_state, bool with_optim,
                            float *all_optim)
{
    dist_ctx *c = r->c;
    model_get_params(c->m, c->host_params);
    model_get_state(c->m, c->host_state);
    DIST_MPI(MPI_Gather(c->host_params, (int)c->m->n_params, MPI_FLOAT, all_params,
                        (int)c->m->n_params, MPI_FLOAT, 0, c->comm));
    DIST_MPI(MPI_Gather(c->host_state, (int)c->m->n_state, MPI_FLOAT, all_state,
                        (int)c->m->n_state, MPI_FLOAT, 0, c->comm));
    if (with_optim) {
        if (r->dev_optim)
            gpu_optim_state_save(r->dev_optim, r->ostate);
        else
            optim_state_save(c->optim, r->ostate);
        DIST_MPI(MPI_Gather(r->ostate, (int)r->n_optim, MPI_FLOAT, all_optim, (int)r->n_optim,
                            MPI_FLOAT, 0, c->comm));
    }
}

static void dist_rep_checkpoint(dist_rep *r, int epochs_done)
{
    dist_ctx *c = r->c;
    long np = c->m->n_params, ns = c->m->n_state, no = r->n_optim;
    float *all = NULL;
    if (c->rank == 0) {
        all = malloc((size_t)(c->size * (np + ns + no) + 1) * sizeof(float));
        if (!all)
            dist_die("checkpoint: out of memory");
    }
    float *ap = all, *as = all ? all + c->size * np : NULL;
    float *ao = all ? all + c->size * (np + ns) : NULL;
    dist_watchdog_tick("gathering a checkpoint");
    dist_rep_gather(r, ap, as, true, ao);
    if (c->rank != 0)
        return;
    dist_replica *reps = calloc((size_t)c->size, sizeof *reps);
    if (!reps)
        dist_die("checkpoint: out of memory");
    for (int k = 0; k < c->size; k++)
        reps[k] = (dist_replica){ap + k * np, as + k * ns, ao + k * no};
    dist_ckpt_meta meta = {.epochs_done = epochs_done, .global_step = c->global_step,
                           .n_replicas = c->size, .sched = c->sched};
    char err[1024];
    if (dist_ckpt_save(c, &meta, reps, no, err, sizeof err) < 0)
        dist_die("checkpoint: %s", err);
    free(reps);
    free(all);
}

/* Collective: model_checkpoint's weights after `epochs_done` epochs, the
 * model the run would end with now. averaging: the replicas' mean (when
 * they were not just averaged, it is reduced to rank 0 alone, so training
 * goes on from the unaveraged replicas as without the callback);
 * ensemble: every member's file and member 0's as the plain one. */
static void dist_rep_save_weights(dist_rep *r, int epochs_done, bool synced)
{
    dist_ctx *c = r->c;
    long np = c->m->n_params, ns = c->m->n_state;
    char err[1024];
    if (r->ensemble) {
        float *all = NULL;
        if (c->rank == 0) {
            all = malloc((size_t)(c->size * (np + ns) + 1) * sizeof(float));
            if (!all)
                dist_die("model_checkpoint: out of memory");
        }
        dist_rep_gather(r, all, all ? all + c->size * np : NULL, false, NULL);
        for (int k = 0; c->rank == 0 && k < c->size; k++)
            if (dist_write_epoch_weights(c, all + k * np, all + c->size * np + k * ns,
                                         epochs_done, k, err, sizeof err) < 0)
                dist_die("model_checkpoint: %s", err);
        free(all);
    } else {
        model_get_params(c->m, c->host_params);
        model_get_state(c->m, c->host_state);
    }
    if (!r->ensemble && !synced) {
        bool root = c->rank == 0;
        DIST_MPI(MPI_Reduce(root ? MPI_IN_PLACE : c->host_params, c->host_params, (int)np,
                            MPI_FLOAT, MPI_SUM, 0, c->comm));
        DIST_MPI(MPI_Reduce(root ? MPI_IN_PLACE : c->host_state, c->host_state, (int)ns,
                            MPI_FLOAT, MPI_SUM, 0, c->comm));
        float inv = 1.0f / (float)c->size;
        for (long i = 0; root && i < np; i++)
            c->host_params[i] *= inv;
        for (long i = 0; root && i < ns; i++)
            c->host_state[i] *= inv;
    }
    if (c->rank != 0)
        return;
    if (r->ensemble) {
        model_get_params(c->m, c->host_params);
        model_get_state(c->m, c->host_state);
    }
    if (dist_write_epoch_weights(c, c->host_params, c->host_state, epochs_done, -1, err,
                                 sizeof err) < 0)
        dist_die("model_checkpoint: %s", err);
}

/* Rank 0 reads the checkpoint and sends replica k to rank k. */
static int dist_rep_resume(dist_rep *r)
{
    dist_ctx *c = r->c;
    long np = c->m->n_params, ns = c->m->n_state, no = r->n_optim;
    int64_t head[2] = {0, 0};
    dist_ckpt_meta meta = {0};
    dist_replica *reps = NULL;
    float *all = NULL;
    if (c->rank == 0) {
        char err[1024];
        if (dist_ckpt_load(c, &meta, &reps, no, err, sizeof err) < 0)
            dist_die("--resume: %s", err);
        if (meta.n_replicas != c->size)
            dist_die("--resume: the checkpoint holds %d replicas, this run has %d",
                     meta.n_replicas, c->size);
        head[0] = meta.epochs_done;
        head[1] = (int64_t)meta.global_step;
        c->sched = meta.sched;
        all = malloc((size_t)(c->size * (np + ns + no) + 1) * sizeof(float));
        if (!all)
            dist_die("--resume: out of memory");
        for (int k = 0; k < c->size; k++) {
            memcpy(all + k * np, reps[k].params, (size_t)np * sizeof(float));
            memcpy(all + c->size * np + k * ns, reps[k].state, (size_t)ns * sizeof(float));
            memcpy(all + c->size * (np + ns) + k * no, reps[k].optim, (size_t)no * sizeof(float));
        }
        dist_ckpt_free(&meta, reps);
    }
    DIST_MPI(MPI_Bcast(head, 2, MPI_INT64_T, 0, c->comm));
    DIST_MPI(MPI_Bcast(&c->sched, (int)sizeof c->sched, MPI_BYTE, 0, c->comm));
    DIST_MPI(MPI_Scatter(all, (int)np, MPI_FLOAT, c->host_params, (int)np, MPI_FLOAT, 0,
                         c->comm));
    DIST_MPI(MPI_Scatter(all ? all + c->size * np : NULL, (int)ns, MPI_FLOAT, c->host_state,
                         (int)ns, MPI_FLOAT, 0, c->comm));
    DIST_MPI(MPI_Scatter(all ? all + c->size * (np + ns) : NULL, (int)no, MPI_FLOAT, r->ostate,
                         (int)no, MPI_FLOAT, 0, c->comm));
    free(all);
    model_set_params(c->m, c->host_params);
    model_set_state(c->m, c->host_state);
    if (!optim_state_valid(c->optim, r->ostate, no))
        dist_die("--resume: the checkpoint's optimizer state does not fit this job");
    if (r->dev_optim)
        gpu_optim_state_load(r->dev_optim, r->ostate);
    else
        optim_state_load(c->optim, r->ostate);
    c->global_step = (uint64_t)head[1];
    return (int)head[0];
}

static void dist_rep_average(dist_ctx *c)
{
    double t0 = MPI_Wtime();
    dist_watchdog_tick("averaging replicas (MPI_Allreduce)");
    model_get_params(c->m, c->host_params);
    model_get_state(c->m, c->host_state);
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, c->host_params, (int)c->m->n_params, MPI_FLOAT, MPI_SUM,
                           c->comm));
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, c->host_state, (int)c->m->n_state, MPI_FLOAT, MPI_SUM,
                           c->comm));
    float inv = 1.0f / (float)c->size;
    for (long i = 0; i < c->m->n_params; i++)
        c->host_params[i] *= inv;
    for (long i = 0; i < c->m->n_state; i++)
        c->host_state[i] *= inv;
    model_set_params(c->m, c->host_params);
    model_set_state(c->m, c->host_state);
    c->comm_s += MPI_Wtime() - t0;
}

/* The ensemble's mean prediction on d, scored on rank 0 (others: zeros). */
static dist_sums dist_rep_ensemble_eval(dist_ctx *c, const dataset *d)
{
    dist_sums s = {0};
    long len = d->n * c->m->n_out;
    float *out = malloc((size_t)(len + 1) * sizeof(float));
    if (!out)
        dist_die("out of memory for %ld predictions", d->n);
    dist_predict(c->m, d, out);
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Reduce(c->rank == 0 ? MPI_IN_PLACE : out, out, (int)len, MPI_FLOAT, MPI_SUM, 0,
                        c->comm));
    c->comm_s += MPI_Wtime() - t0;
    if (c->rank == 0) {
        for (long i = 0; i < len; i++)
            out[i] /= (float)c->size;
        dist_output_sums(c->spec, out, c->m->n_out, d, &s);
    }
    free(out);
    return s;
}

static dist_sums dist_rep_eval(dist_rep *r, const dataset *d)
{
    if (r->ensemble)
        return dist_rep_ensemble_eval(r->c, d);
    dist_sums s;
    dist_eval_sharded(r->c, d, &s);
    return s;
}

static void dist_rep_epoch(dist_rep *r, int epoch, float lr, dist_sums *run, double t0)
{
    dist_ctx *c = r->c;
    const int B = c->spec->training.batch_size;
    dist_data_epoch(c, r->seed, epoch);
    char err[512];
    for (long st = 0; st < r->steps; st++) {
        long lo = r->lo + st * B;
        int b = (int)(r->hi - lo < B ? r->hi - lo : B);
        dist_profile_begin(c);
        if (model_load_train_batch(c->m, c->data, dist_data_batch(c, st, lo, b), b, epoch, err,
                             sizeof err) < 0)
            dist_die("%s", err);
        dist_profile_mark(c, PROFILE_LOAD);
        model_forward(c->m, b, true, c->global_step);
        dist_profile_mark(c, PROFILE_FORWARD);
        batch_metrics bm = {0};
        double loss = model_loss(c->m, b, &bm);
        dist_sums_add_batch(run, c->m, loss, &bm, b);
        dist_profile_mark(c, PROFILE_LOSS);
        model_backward(c->m, b);
        /* training.warm_up_batches or cosine: each replica over its own
         * optimizer steps. */
        float step_lr = dist_optim_lr(c, epoch, st, r->steps, lr);
        if (r->dev_optim)
            gpu_optim_step(r->dev_optim, c->m->params, c->m->grads, step_lr);
        else
            dist_optim_local_step(c, step_lr, st + 1 == r->steps);
        dist_profile_mark(c, PROFILE_BACKWARD);
        dist_profile_end(c);
        c->global_step++;
        dist_watchdog_tick("training");
        if (c->rank == 0)
            dist_report_step(c->rep, epoch, st + 1, r->steps, run,
                             run->n * c->size / (MPI_Wtime() - t0));
    }
    dist_data_epoch_end(c);
}

static void dist_rep_finish(dist_rep *r)
{
    dist_ctx *c = r->c;
    char err[1024];
    dist_sums test = {0};
    if (c->lay.n_test > 0)
        test = dist_rep_eval(r, &c->test);
    long np = c->m->n_params, ns = c->m->n_state;
    if (r->ensemble) {
        float *all = NULL;
        if (c->rank == 0) {
            all = malloc((size_t)(c->size * (np + ns) + 1) * sizeof(float));
            if (!all)
                dist_die("out of memory");
        }
        dist_rep_gather(r, all, all ? all + c->size * np : NULL, false, NULL);
        for (int k = 0; c->rank == 0 && k < c->size; k++) {
            char suffix[32];
            snprintf(suffix, sizeof suffix, "member-%d", k);
            if (dist_write_weights(c, all + k * np, all + c->size * np + k * ns, suffix, false,
                                   err, sizeof err) < 0)
                dist_die("%s", err);
        }
        free(all);
    }
    dist_profile_write(c);
    if (c->rank == 0)
        dist_sync_write_final(c, &test);
}

/* training.evaluate: the test set before the first step (not on resume);
 * an ensemble is scored by its members' mean prediction, as at the end. */
static void dist_rep_evaluate_before(dist_rep *r)
{
    dist_ctx *c = r->c;
    if (!c->spec->training.evaluate || c->global_step > 0 || c->lay.n_test <= 0)
        return;
    dist_sums test = dist_rep_eval(r, &c->test);
    if (c->rank == 0)
        dist_report_evaluate(c->rep, &test);
}

int dist_run_replicas(dist_ctx *c)
{
    const job_spec *s = c->spec;
    char err[1024];
    dist_rep r = {.c = c, .ensemble = s->distributed.trainer == TRAINER_ENSEMBLE};
    r.seed = s->training.seed + (r.ensemble ? (unsigned long)c->rank : 0);
    r.n_optim = optim_state_floats(c->optim);
    r.ostate = malloc((size_t)(r.n_optim + 1) * sizeof(float));
    dist_sums *per = calloc((size_t)c->size, sizeof *per);
    int *ranks = calloc((size_t)c->size, sizeof *ranks);
    if (!r.ostate || !per || !ranks)
        dist_die("out of memory");
    for (int k = 0; k < c->size; k++)
        ranks[k] = k;
    if (!c->be->host_memory && gpu_built()) {
        r.dev_optim = gpu_optim_create(c->be, &s->training.optimizer, c->m->n_params, err,
                                       sizeof err);
        if (!r.dev_optim)
            dist_die("%s", err);
        if (gpu_optim_state_floats(r.dev_optim) != r.n_optim)
            dist_die("the device optimizer's state (%ld floats) does not match the checkpoint "
                     "layout (%ld floats)", gpu_optim_state_floats(r.dev_optim), r.n_optim);
    }
    dist_rep_plan(&r);
    if (model_init_params(c->m, r.seed, err, sizeof err) < 0)
        dist_die("%s", err);
    /* An imported model starts from the file's weights on every rank. */
    if (c->spec->model_file && warmstart_load(c->m, c->spec, err, sizeof err) != 0)
        dist_die("%s", err);
    int start = c->opt->resume ? dist_rep_resume(&r) : 0;
    if (!c->opt->resume && !r.ensemble)
        dist_rep_average(c); /* identical initial weights: a no-op but for rounding */
    if (c->rank == 0) {
        c->rep = dist_report_open(c, start, err, sizeof err);
        if (!c->rep)
            dist_die("%s", err);
        dist_report_start(c->rep, r.steps, c->n_train);
    }
    dist_rep_evaluate_before(&r);
    int every = s->distributed.sync_every_epochs > 0 ? s->distributed.sync_every_epochs : 1;
    double t_train = MPI_Wtime();
    for (int epoch = start; epoch < s->training.epochs; epoch++) {
        float lr = dist_optim_epoch_lr(c, epoch);
        dist_sums run = {0};
        double t0 = MPI_Wtime();
        dist_rep_epoch(&r, epoch, lr, &run, t0);
        double secs = MPI_Wtime() - t0;
        dist_heartbeat_arrive();
        bool last = epoch + 1 == s->training.epochs;
        bool synced = !r.ensemble && ((epoch + 1) % every == 0 || last);
        if (synced)
            dist_rep_average(c);
        dist_sums total = dist_gather_sums(c, &run, per);
        bool has_val = c->lay.n_val > 0;
        dist_sums val = has_val ? dist_rep_eval(&r, &c->val) : (dist_sums){0};
        if (c->rank == 0) {
            /* The rate of the epoch's last step, as the single trainer
             * records it (cosine and warm-up move it off the base rate). */
            float last_lr = dist_optim_lr(c, epoch, r.steps - 1, r.steps, lr);
            dist_epoch_info e = {.epoch = epoch, .train = total, .has_val = has_val,
                                 .val = val, .lr = last_lr, .seconds = secs, .samples = total.n,
                                 .per_worker = per, .n_workers = c->size,
                                 .worker_ranks = ranks};
            if (dist_report_epoch(c->rep, &e, err, sizeof err) < 0)
                dist_die("%s", err);
        }
        bool save = false;
        bool stop = dist_sync_schedule(c, epoch, &total, has_val, &val, &save);
        if (stop && !synced && !r.ensemble) {
            dist_rep_average(c);
            synced = true;
        }
        if (save)
            dist_rep_save_weights(&r, epoch + 1, synced);
        dist_rep_checkpoint(&r, epoch + 1);
        if (stop)
            break;
    }
    c->train_s = MPI_Wtime() - t_train;
    dist_sync_report_times(c);
    dist_rep_finish(&r);
    gpu_optim_free(r.dev_optim);
    free(r.ostate);
    free(per);
    free(ranks);
    return 0;
}
