/* dist_async_worker.c — a worker of the asynchronous trainers (ranks 1..W).
 * Worker i trains each epoch on its slice of the epoch's global
 * permutation, read from the dataset files (dist_async_stream.c), with its own
 * local optimizer (training.optimizer, dist-keras's worker optimizer) and
 * talks to the parameter server every distributed.communication_window
 * steps (and once more at the end, so no local progress is lost), as
 * dist-keras defines the methods:
 *
 *   downpour  commit x - x_pull, then pull: x = center        (Dean et al.)
 *   adag      commit (x - x_pull) / window, then pull          (Hermans)
 *   dynsgd    as downpour; the server divides by staleness + 1 (Jiang et al.)
 *   aeasgd    pull, e = alpha (x - center), x -= e, commit e   (Zhang et al.)
 *   eamsgd    as aeasgd, and dist-keras's momentum around the local step:
 *             the optimizer steps from the look-ahead x - m r (dist-keras:
 *             x + m r, see dist_async_update.h), moving it by d;
 *             r = m r - eta d, x -= r                           (Zhang et al.)
 *
 * eta = distributed.learning_rate, alpha = distributed.rho * eta,
 * m = distributed.momentum (dist_async_update.h). The
 * worker waits only for the server's answer, never for another worker.
 * The server owns the learning-rate schedules (dist_async_server.c): every
 * answer carries its schedule state, which the worker adopts, so all
 * workers train at the server's rate from their next exchange after its
 * decision (warm-up still ramps at each of the worker's own epochs), and
 * when the server's early stopping fires every worker stops at its next
 * exchange, committing nothing more.
 *
 * A worker on a CUDA device keeps its model there between exchanges: the
 * local optimizer (gpu.h's) and EAMSGD's momentum live on the device, and
 * only commits and pulls cross to the host, through the backend's pinned
 * staging buffers (model_get_params / model_set_params), as the MPI
 * messages to the CPU server need host memory. */
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "distributed/dist_async_protocol.h"
#include "distributed/dist_async_recovery.h"
#include "distributed/dist_async_stream.h"
#include "distributed/dist_error.h"
#include "distributed/dist_optim.h"
#include "distributed/dist_profile.h"
#include "distributed/dist_sync_data.h"
#include "distributed/dist_watchdog.h"
#include "distributed/dist_async_update.h"
#include "gpu/gpu.h"

typedef struct dist_worker {
    dist_ctx *c;
    spec_trainer t;
    long np, ns;
    float *x;               /* host params + state */
    float *anchor;          /* params at the last pull (eamsgd: x - m r
                               during a step) */
    float *center;          /* the server's center (params + state) */
    float *velocity;        /* eamsgd: dist-keras's r */
    float *after;           /* eamsgd: params after the optimizer's step */
    float *saved;           /* its variables for the checkpoint
                               (dist_ps_state_floats) */
    bool device;            /* the model lives on a CUDA device */
    gpu_optim *dev_optim;   /* device: the local optimizer */
    float *dev_x;           /* device, eamsgd: x while params hold x - m r */
    float *dev_ahead;       /* device, eamsgd: x - m r */
    float *dev_velocity;    /* device, eamsgd */
    int64_t clock;          /* the server clock at the last pull */
    int epoch;              /* the epoch being trained (the last, after them) */
    dist_msg progress;      /* epoch, step and running sums for commits */
    long commits;
    long since;             /* local steps since the last exchange */
    float lr;
    long steps;             /* micro-batches an epoch (the per-step rate) */
    long done_steps;        /* local steps taken in this process */
    long die_at;            /* test hook: SIGKILL this rank at that step */
} dist_worker;

/* The server declared this worker lost (it was silent too long, under
 * --enable-recovery) and trains on without it: its work is not the job's
 * any more, and it leaves without MPI_Finalize, whose fence would wait
 * for the dead (dist_async_recovery.c). */
static _Noreturn void dist_worker_leave(const dist_worker *w)
{
    fprintf(stderr,
            "punch-train: rank %d: the parameter server declared this worker lost (silent "
            "longer than PUNCH_WATCHDOG_S); leaving\n",
            w->c->rank);
    fflush(stderr);
    dist_watchdog_stop();
    _exit(0);
}

static bool dist_worker_elastic(spec_trainer t)
{
    return t == TRAINER_AEASGD || t == TRAINER_EAMSGD;
}

static void dist_worker_send(dist_worker *w, const dist_msg *h, const float *payload)
{
    dist_ctx *c = w->c;
    DIST_MPI(MPI_Send(h, (int)sizeof *h, MPI_BYTE, 0, DIST_TAG_HDR, c->comm));
    if (payload)
        DIST_MPI(MPI_Send(payload, (int)(w->np + w->ns), MPI_FLOAT, 0, DIST_TAG_DATA, c->comm));
}

/* Its variables to the server after an epoch-end or done header:
 * params, batchnorm state, then the optimizer state (eamsgd: followed
 * by the momentum r), wherever they live. */
static void dist_worker_send_state(dist_worker *w)
{
    dist_ctx *c = w->c;
    backend *be = c->be;
    float *opt = w->saved + w->np + w->ns;
    float *mom = opt + optim_state_floats(c->optim);
    model_get_params(c->m, w->saved);
    model_get_state(c->m, w->saved + w->np);
    if (w->device)
        gpu_optim_state_save(w->dev_optim, opt);
    else
        optim_state_save(c->optim, opt);
    if (w->t == TRAINER_EAMSGD && w->device)
        be->download(be, mom, w->dev_velocity, w->np);
    else if (w->t == TRAINER_EAMSGD)
        memcpy(mom, w->velocity, (size_t)w->np * sizeof(float));
    DIST_MPI(MPI_Send(w->saved, (int)dist_ps_state_floats(c), MPI_FLOAT, 0, DIST_TAG_STATE,
                      c->comm));
}

/* On resume: the variables rank 0 restored from the checkpoint. The
 * elastic workers go on from their own params and batchnorm state; the
 * residual ones keep the center they were given (dist_async.c says why).
 * Every worker takes its optimizer state (eamsgd: and its momentum). */
static void dist_worker_restore(dist_worker *w)
{
    dist_ctx *c = w->c;
    backend *be = c->be;
    long no = optim_state_floats(c->optim);
    float *opt = w->saved + w->np + w->ns;
    DIST_MPI(MPI_Recv(w->saved, (int)(w->np + w->ns + dist_ps_optim_floats(c)), MPI_FLOAT, 0,
                      DIST_TAG_STATE, c->comm, MPI_STATUS_IGNORE));
    if (dist_worker_elastic(w->t)) {
        model_set_params(c->m, w->saved);
        model_set_state(c->m, w->saved + w->np);
    }
    if (w->t == TRAINER_EAMSGD) {
        memcpy(w->velocity, opt + no, (size_t)w->np * sizeof(float));
        if (w->device)
            be->upload(be, w->dev_velocity, opt + no, w->np);
    }
    if (!optim_state_valid(c->optim, opt, no))
        dist_die("--resume: the checkpoint's optimizer state of worker rank %d does not fit "
                 "this job", c->rank);
    if (w->device)
        gpu_optim_state_load(w->dev_optim, opt);
    else
        optim_state_load(c->optim, opt);
}

/* The local optimizer's rate for the current epoch from the schedule
 * state in c->sched (the server's, once it has answered). */
static void dist_worker_set_lr(dist_worker *w)
{
    w->lr = dist_optim_epoch_lr(w->c, w->epoch);
}

/* The server's answer: its clock and schedule state, then the center. */
static void dist_worker_recv_center(dist_worker *w)
{
    dist_ctx *c = w->c;
    dist_reply r;
    DIST_MPI(MPI_Recv(&r, (int)sizeof r, MPI_BYTE, 0, DIST_TAG_REPLY, c->comm, MPI_STATUS_IGNORE));
    DIST_MPI(MPI_Recv(w->center, (int)(w->np + w->ns), MPI_FLOAT, 0, DIST_TAG_CENTER, c->comm,
                      MPI_STATUS_IGNORE));
    if (r.lost)
        dist_worker_leave(w);
    w->clock = r.clock;
    c->sched = r.sched;
    dist_worker_set_lr(w);
}

/* Send w->x (the worker's parameters and state, transformed by its
 * rule) as a commit carrying the latest progress; with `reply`, the
 * server answers with the center. */
static void dist_worker_commit(dist_worker *w, bool reply)
{
    dist_msg h = w->progress;
    h.kind = DIST_MSG_COMMIT;
    h.reply = reply ? 1 : 0;
    h.clock = w->clock;
    dist_worker_send(w, &h, w->x);
    w->commits++;
}

/* The model's parameters and state into w->x. */
static void dist_worker_snapshot(dist_worker *w)
{
    model_get_params(w->c->m, w->x);
    model_get_state(w->c->m, w->x + w->np);
}

/* downpour / adag / dynsgd: commit the residual, adopt the center. */
static void dist_worker_exchange_residual(dist_worker *w)
{
    dist_ctx *c = w->c;
    dist_worker_snapshot(w);
    float div = dist_update_residual_div(w->t, c->spec->distributed.communication_window);
    dist_update_residual(w->x, w->anchor, w->np, div, w->x);
    dist_worker_commit(w, true);
    dist_worker_recv_center(w);
    memcpy(w->anchor, w->center, (size_t)w->np * sizeof(float));
    model_set_params(c->m, w->center);
    model_set_state(c->m, w->center + w->np);
}

/* aeasgd / eamsgd: the elastic force pulls worker and center together. */
static void dist_worker_exchange_elastic(dist_worker *w)
{
    dist_ctx *c = w->c;
    dist_msg pull = {.kind = DIST_MSG_PULL};
    dist_worker_send(w, &pull, NULL);
    dist_worker_recv_center(w);
    if (c->sched.stop)
        return; /* the center is final: nothing more to commit */
    dist_worker_snapshot(w);
    float alpha = dist_update_alpha(c->spec->distributed.learning_rate, c->spec->distributed.rho);
    /* x holds the elastic difference e afterwards; anchor the new x. */
    dist_update_elastic(w->x, w->center, w->np, alpha, w->x, w->anchor);
    model_set_params(c->m, w->anchor);
    dist_worker_commit(w, false);
}

static void dist_worker_exchange(dist_worker *w)
{
    double t0 = MPI_Wtime();
    dist_watchdog_tick_patient("waiting for the parameter server (rank 0)");
    if (dist_worker_elastic(w->t))
        dist_worker_exchange_elastic(w);
    else
        dist_worker_exchange_residual(w);
    w->since = 0;
    w->c->comm_s += MPI_Wtime() - t0;
    dist_watchdog_tick("training");
}

/* dist_worker_step on a CUDA device: the same updates, never leaving it. */
static double dist_worker_step_device(dist_worker *w, int b, batch_metrics *bm, uint64_t step,
                                      float lr)
{
    model *m = w->c->m;
    backend *be = m->be;
    bool eamsgd = w->t == TRAINER_EAMSGD;
    const spec_distributed *ds = &w->c->spec->distributed;
    float mom = (float)ds->momentum, eta = (float)ds->learning_rate;
    if (eamsgd) {
        /* dist_update_lookahead: params = x - m r. */
        be->copy(be, w->dev_x, m->params, w->np);
        be->axpy(be, w->np, -mom, w->dev_velocity, m->params);
        be->copy(be, w->dev_ahead, m->params, w->np);
    }
    model_forward(m, b, true, step);
    dist_profile_mark(w->c, PROFILE_FORWARD);
    double loss = model_loss(m, b, bm);
    dist_profile_mark(w->c, PROFILE_LOSS);
    model_backward(m, b);
    gpu_optim_step(w->dev_optim, m->params, m->grads, lr);
    if (!eamsgd)
        return loss;
    /* dist_update_momentum: params -= ahead leaves the step d. */
    be->axpy(be, w->np, -1.0f, w->dev_ahead, m->params);
    be->scale(be, w->np, mom, w->dev_velocity);
    be->axpy(be, w->np, -eta, m->params, w->dev_velocity);
    be->axpy(be, w->np, -1.0f, w->dev_velocity, w->dev_x);
    be->copy(be, m->params, w->dev_x, w->np);
    return loss;
}

/* The device state of a worker on a CUDA backend (none on the CPU). */
static void dist_worker_device_setup(dist_worker *w)
{
    dist_ctx *c = w->c;
    backend *be = c->be;
    w->device = !be->host_memory && gpu_built();
    if (!w->device)
        return;
    char err[1024];
    w->dev_optim = gpu_optim_create(be, &c->spec->training.optimizer, w->np, err, sizeof err);
    if (!w->dev_optim)
        dist_die("worker: %s", err);
    if (w->t != TRAINER_EAMSGD)
        return;
    long n = w->np > 0 ? w->np : 1;
    w->dev_x = be->alloc(be, n);
    w->dev_ahead = be->alloc(be, n);
    w->dev_velocity = be->alloc(be, n);
    if (!w->dev_x || !w->dev_ahead || !w->dev_velocity)
        dist_die("worker: out of device memory for EAMSGD's momentum (%ld floats)", w->np);
}

static void dist_worker_device_free(dist_worker *w)
{
    backend *be = w->c->be;
    gpu_optim_free(w->dev_optim);
    if (w->dev_x)
        be->free(be, w->dev_x);
    if (w->dev_ahead)
        be->free(be, w->dev_ahead);
    if (w->dev_velocity)
        be->free(be, w->dev_velocity);
}

/* One local step on the loaded batch; returns the batch's loss sum. */
static double dist_worker_step(dist_worker *w, int b, batch_metrics *bm)
{
    dist_ctx *c = w->c;
    model *m = c->m;
    uint64_t step = c->global_step * (uint64_t)c->workers + (uint64_t)(c->rank - 1);
    /* training.warm_up_batches or cosine: each worker over its own
     * optimizer steps (its epochs all take w->steps micro-batches). */
    long spe = w->steps > 0 ? w->steps : 1;
    long epoch = (long)(c->global_step / (uint64_t)spe);
    long st = (long)(c->global_step % (uint64_t)spe);
    float lr = dist_optim_lr(c, epoch, st, spe, w->lr);
    if (w->device)
        return dist_worker_step_device(w, b, bm, step, lr);
    bool eamsgd = w->t == TRAINER_EAMSGD;
    const spec_distributed *ds = &c->spec->distributed;
    float mom = (float)ds->momentum;
    if (eamsgd) {
        model_get_params(m, w->x);
        dist_update_lookahead(w->x, w->velocity, w->np, mom, w->anchor);
        model_set_params(m, w->anchor);
    }
    model_forward(m, b, true, step);
    dist_profile_mark(c, PROFILE_FORWARD);
    double loss = model_loss(m, b, bm);
    dist_profile_mark(c, PROFILE_LOSS);
    model_backward(m, b);
    bool stepped = dist_optim_local_step(c, lr, st + 1 == spe);
    if (!eamsgd)
        return loss;
    if (!stepped) {
        /* grad_accum_steps: the momentum moves once per optimizer step;
         * until then every micro-batch looks ahead from the same x. */
        model_set_params(m, w->x);
        return loss;
    }
    model_get_params(m, w->after);
    dist_update_momentum(w->x, w->velocity, w->anchor, w->after, w->np, mom,
                         (float)ds->learning_rate);
    model_set_params(m, w->x);
    return loss;
}

static void dist_worker_epoch(dist_worker *w, int epoch, long lo, long hi, long steps)
{
    dist_ctx *c = w->c;
    const int B = c->spec->training.batch_size;
    const int window = c->spec->distributed.communication_window;
    dist_data_epoch(c, c->spec->training.seed, epoch);
    dist_sums run = {0};
    char err[512];
    for (long st = 0; st < steps; st++) {
        long first = lo + st * B;
        int b = (int)(hi - first < B ? hi - first : B);
        /* dist_data_batch may point c->data elsewhere (dist_async_stream.c's
         * batch of converted bytes): call it before reading c->data. */
        dist_profile_begin(c);
        const int64_t *rows = dist_data_batch(c, st, first, b);
        if (model_load_train_batch(c->m, c->data, rows, b, epoch, err, sizeof err) < 0)
            dist_die("%s", err);
        dist_profile_mark(c, PROFILE_LOAD);
        batch_metrics bm = {0};
        double loss = dist_worker_step(w, b, &bm);
        dist_profile_mark(c, PROFILE_BACKWARD);
        dist_sums_add_batch(&run, c->m, loss, &bm, b);
        c->global_step++;
        if (++w->done_steps == w->die_at)
            raise(SIGKILL);
        dist_watchdog_tick("training");
        if (++w->since >= window) {
            w->progress.epoch = epoch;
            w->progress.step = st + 1;
            memcpy(w->progress.sums, &run, sizeof run);
            dist_worker_exchange(w);
        }
        dist_profile_end(c);
        if (c->sched.stop)
            return;
    }
    dist_msg h = {.kind = DIST_MSG_EPOCH, .epoch = epoch, .commits = w->commits, .lr = w->lr,
                  .order_hash = dist_data_order_hash(c)};
    memcpy(h.sums, &run, sizeof run);
    /* The server may be busy for up to the watchdog limit (scoring the
     * epoch, or timing out a dead worker's transfer): as at an exchange. */
    dist_watchdog_tick_patient("sending the epoch's end to the parameter server (rank 0)");
    dist_worker_send(w, &h, NULL);
    dist_worker_send_state(w);
    dist_watchdog_tick("training");
}

int dist_ps_work(dist_ctx *c, float *center, const dist_ps_start *start, long commits)
{
    const job_spec *s = c->spec;
    dist_worker w = {.c = c, .t = s->distributed.trainer, .np = c->m->n_params,
                     .ns = c->m->n_state, .center = center, .clock = start->clock,
                     .commits = commits};
    w.x = malloc((size_t)(w.np + w.ns + 1) * sizeof(float));
    w.anchor = malloc((size_t)(w.np + 1) * sizeof(float));
    w.velocity = calloc((size_t)w.np + 1, sizeof(float));
    w.after = malloc((size_t)(w.np + 1) * sizeof(float));
    w.saved = malloc((size_t)(dist_ps_state_floats(c) + 1) * sizeof(float));
    if (!w.x || !w.anchor || !w.velocity || !w.after || !w.saved)
        dist_die("out of memory");
    memcpy(w.anchor, center, (size_t)w.np * sizeof(float));
    dist_worker_device_setup(&w);
    if (start->worker_state)
        dist_worker_restore(&w);
    int i = c->rank - 1, W = c->workers, B = s->training.batch_size;
    long lo = c->n_train * i / W, hi = c->n_train * (i + 1) / W;
    long steps = (hi - lo + B - 1) / B;
    if (s->training.steps_per_epoch > 0 && s->training.steps_per_epoch < steps)
        steps = s->training.steps_per_epoch;
    if (hi <= lo)
        dist_die("worker rank %d has no training samples (%ld samples for %d workers)", c->rank,
                 c->n_train, W);
    /* The steps this worker took before a resume (checkpoints fall on
     * epoch ends): warm_up_batches and the per-step seeds go on from there. */
    c->global_step = (uint64_t)start->epoch * (uint64_t)steps;
    w.steps = steps;
    w.die_at = dist_recovery_test_die_step(c->rank);
    double t0 = MPI_Wtime();
    for (int epoch = (int)start->epoch; epoch < s->training.epochs && !c->sched.stop; epoch++) {
        w.epoch = epoch;
        dist_worker_set_lr(&w);
        dist_worker_epoch(&w, epoch, lo, hi, steps);
    }
    /* Hand over what was learnt since the last exchange (after a stop
     * the center is final: there is nothing to hand over). */
    if (w.since > 0 && !c->sched.stop)
        dist_worker_exchange(&w);
    c->train_s = MPI_Wtime() - t0;
    dist_msg done = {.kind = DIST_MSG_DONE, .commits = w.commits,
                     .sums = {c->comm_s, c->train_s,
                              c->stream ? dist_stream_waited(c->stream) : 0.0,
                              c->stream ? dist_stream_read_cpu(c->stream) : 0.0}};
    dist_watchdog_tick_patient("sending the end of training to the parameter server (rank 0)");
    dist_worker_send(&w, &done, NULL);
    dist_worker_send_state(&w);
    /* The server's bye: how many workers were lost (-1: this one). */
    int64_t bye = 0;
    dist_watchdog_tick_patient("waiting for the parameter server's bye (rank 0)");
    DIST_MPI(MPI_Recv(&bye, 1, MPI_INT64_T, 0, DIST_TAG_BYE, c->comm, MPI_STATUS_IGNORE));
    if (bye < 0)
        dist_worker_leave(&w);
    dist_recovery_note_lost((int)bye);
    if (bye == 0)
        dist_profile_write(c);
    dist_worker_device_free(&w);
    free(w.x);
    free(w.anchor);
    free(w.velocity);
    free(w.after);
    free(w.saved);
    return 0;
}
