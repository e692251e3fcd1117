/* dist_async_server.c — the parameter server (rank 0) of the asynchronous
 * trainers. It holds the center variable and applies commits one at a time
 * in arrival order, never waiting for any particular worker:
 *
 *   downpour, adag   center += residual   (adag's residual arrives already
 *                                         divided by the window)
 *   dynsgd           center += residual / (staleness + 1)
 *   aeasgd, eamsgd   center += elastic difference alpha * (x_i - center)
 *
 * Batchnorm statistics travel with each commit and the center keeps the
 * latest. When every worker has reported an epoch, the server evaluates
 * the center on the validation set, runs the learning-rate schedules on
 * those metrics (and the workers' summed training metrics), writes the
 * epoch's progress and history (with per-worker metrics, rates and commit
 * counts) and a checkpoint: the center, and each worker's own variables
 * as it sent them with its latest epoch-end or done message (dist_async_protocol.h).
 * Its schedule state rides on every reply, so
 * all workers train at the server's rate from their next exchange on and
 * stop together when early stopping fires. From that decision on, the
 * center stays the one that was scored: commits still in flight are
 * received and counted (commits_discarded in the history), not applied,
 * as Keras ends training with the weights of the stopping epoch.
 * While idle it sleeps briefly instead of spinning in MPI, so it does not
 * take a core from the workers. A worker silent longer than the watchdog
 * limit is hung or dead: the server ends the job naming it, or, under
 * `mpirun --enable-recovery` (dist_async_recovery.c), declares it lost,
 * records it (history.json's lost_workers, a worker_lost event) and
 * serves the others on: its epochs count as reported with nothing
 * trained, and should it speak again it is told to leave. */
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "distributed/dist_async_protocol.h"
#include "distributed/dist_async_recovery.h"
#include "distributed/dist_checkpoint.h"
#include "distributed/dist_error.h"
#include "distributed/dist_optim.h"
#include "distributed/dist_profile.h"
#include "distributed/dist_report.h"
#include "distributed/dist_sync.h"
#include "distributed/dist_watchdog.h"
#include "distributed/dist_async_update.h"

typedef struct dist_server {
    dist_ctx *c;
    float *center;          /* params then state */
    float *buf;             /* a commit's payload */
    long n;                 /* params + state */
    int64_t clock;          /* commits received */
    double staleness_sum;
    bool stopped;           /* early stopping fired: the center is final */
    long discarded;         /* commits received after stopping */
    int stopped_epoch;      /* the 0-based epoch that fired it */
    long *commits;          /* per worker: commits the server received */
    long *sent;             /* per worker: commits the worker says it sent */
    double *last_seen;      /* per worker, MPI_Wtime */
    bool *done;
    int n_done;
    dist_sums *acc;         /* [epoch * W + w] */
    int *reported;          /* per epoch: workers that reported it */
    double *lr;             /* per epoch: the server's rate for it */
    double *wlr;            /* [epoch * W + w]: the rate worker w ended it with */
    uint64_t *order;        /* [epoch * W + w]: the records it trained, hashed */
    int next_epoch;         /* the first epoch not yet written */
    int *ranks;
    char (*receiving)[64];  /* per worker: what the watchdog reports */
    char (*receiving_vars)[64]; /* the same for its variables */
    char (*replying)[64];   /* and for the reply to it */
    double *times;          /* per worker: comm_s, train_s from its done */
    double *reads;          /* per worker: seconds it waited for reads, and
                               their CPU seconds */
    dist_msg *last;         /* per worker: its latest commit header */
    float *wstate;          /* per worker: its latest variables (n_wstate) */
    long n_wstate;          /* dist_ps_state_floats */
    int n_wstates;          /* workers that have sent theirs */
    bool *has_wstate;
    long steps;             /* per worker and epoch */
    double t_epoch;
    bool *lost;             /* per worker: declared lost */
    int n_lost;
    int *wepoch;            /* per worker: the next epoch it has to report */
    long die_at;            /* test hook: SIGKILL this rank at that clock */
} dist_server;

static void dist_server_lose(dist_server *sv, int w, double silent_s);

/* Complete a transfer with worker w. A worker can die in the middle of
 * one (over TCP, where its messages take long, that is likely): under
 * --enable-recovery, a transfer that has not completed within the
 * watchdog limit loses the worker (its requests are cancelled and
 * dropped: the peer is gone) and returns false; otherwise it waits, and
 * the watchdog ends a hung job as before. */
static bool dist_server_wait(dist_server *sv, MPI_Request *reqs, int n, int w,
                             const char *doing)
{
    dist_ctx *c = sv->c;
    bool recovery = dist_recovery_on();
    if (recovery)
        dist_watchdog_tick_patient(doing);
    else
        dist_watchdog_tick(doing);
    double t0 = MPI_Wtime();
    struct timespec nap = {0, 50 * 1000};
    for (;;) {
        int flag = 0;
        DIST_MPI(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE));
        if (flag)
            break;
        double now = MPI_Wtime();
        if (recovery && now - t0 > c->watchdog_s) {
            for (int i = 0; i < n; i++) {
                if (reqs[i] == MPI_REQUEST_NULL)
                    continue;
                MPI_Cancel(&reqs[i]);
                MPI_Request_free(&reqs[i]);
            }
            c->comm_s += now - t0;
            if (!sv->lost[w])
                dist_server_lose(sv, w, now - t0);
            return false;
        }
        /* A transfer in progress mostly ends within a millisecond: poll
         * until then, then nap so as not to take a core from the workers. */
        if (now - t0 > 1e-3)
            nanosleep(&nap, NULL);
    }
    c->comm_s += MPI_Wtime() - t0;
    return true;
}

/* False when the worker was lost meanwhile (dist_server_wait). */
static bool dist_server_reply(dist_server *sv, int src)
{
    dist_reply r = {.clock = sv->clock, .sched = sv->c->sched, .lost = sv->lost[src - 1]};
    MPI_Request reqs[2];
    DIST_MPI(MPI_Isend(&r, (int)sizeof r, MPI_BYTE, src, DIST_TAG_REPLY, sv->c->comm, &reqs[0]));
    DIST_MPI(MPI_Isend(sv->center, (int)sv->n, MPI_FLOAT, src, DIST_TAG_CENTER, sv->c->comm,
                       &reqs[1]));
    return dist_server_wait(sv, reqs, 2, src - 1, sv->replying[src - 1]);
}

static void dist_server_apply(dist_server *sv, const dist_msg *h, int w)
{
    const dist_ctx *c = sv->c;
    long np = c->m->n_params;
    int64_t staleness = sv->clock - h->clock;
    if (staleness < 0)
        staleness = 0;
    if (sv->stopped) {
        sv->discarded++;
    } else {
        float scale = dist_update_scale(c->spec->distributed.trainer, staleness);
        dist_update_apply(sv->center, sv->buf, np, scale);
        memcpy(sv->center + np, sv->buf + np, (size_t)c->m->n_state * sizeof(float));
    }
    sv->clock++;
    sv->staleness_sum += (double)staleness;
    sv->commits[w]++;
    if (sv->die_at > 0 && sv->clock >= sv->die_at)
        raise(SIGKILL);
}

/* The worker's variables that follow its epoch-end or done header; false
 * when the worker was lost meanwhile. */
static bool dist_server_recv_wstate(dist_server *sv, int src)
{
    int w = src - 1;
    MPI_Request req;
    DIST_MPI(MPI_Irecv(sv->wstate + (long)w * sv->n_wstate, (int)sv->n_wstate, MPI_FLOAT, src,
                       DIST_TAG_STATE, sv->c->comm, &req));
    if (!dist_server_wait(sv, &req, 1, w, sv->receiving_vars[w]))
        return false;
    if (sv->lost[w])
        return true;
    if (!sv->has_wstate[w]) {
        sv->has_wstate[w] = true;
        sv->n_wstates++;
    }
    return true;
}

/* A commit's payload into sv->buf; false when the worker was lost. */
static bool dist_server_recv_payload(dist_server *sv, int src)
{
    MPI_Request req;
    DIST_MPI(MPI_Irecv(sv->buf, (int)sv->n, MPI_FLOAT, src, DIST_TAG_DATA, sv->c->comm, &req));
    return dist_server_wait(sv, &req, 1, src - 1, sv->receiving[src - 1]);
}

/* Replica 0 is the center (the server has no optimizer: zeros), replicas
 * 1..W the workers' latest variables. Every worker sends its variables
 * with each epoch-end and done header, and an epoch is checkpointed once
 * every worker has reported it, so they are all there; should one be
 * missing, the center alone is written (a resume then restarts the
 * workers from it). */
static void dist_server_checkpoint(dist_server *sv, int epochs_done)
{
    dist_ctx *c = sv->c;
    int W = c->workers;
    long np = c->m->n_params, ns = c->m->n_state;
    bool all = sv->n_wstates == W;
    long no = all ? sv->n_wstate - np - ns : 0;
    dist_ckpt_meta meta = {.epochs_done = epochs_done, .commits = (long)sv->clock,
                           .staleness_sum = sv->staleness_sum, .n_replicas = all ? 1 + W : 1,
                           .n_workers = W, .worker_commits = sv->commits,
                           .sched = c->sched};
    dist_replica *reps = calloc((size_t)W + 1, sizeof *reps);
    if (!reps)
        dist_die("checkpoint: out of memory");
    reps[0] = (dist_replica){sv->center, sv->center + np, NULL};
    for (int w = 0; all && w < W; w++) {
        float *x = sv->wstate + (long)w * sv->n_wstate;
        reps[1 + w] = (dist_replica){x, x + np, x + np + ns};
    }
    char err[1024];
    if (dist_ckpt_save(c, &meta, reps, no, err, sizeof err) < 0)
        dist_die("checkpoint: %s", err);
    free(reps);
}

static double dist_server_staleness(const dist_server *sv)
{
    return sv->clock > 0 ? sv->staleness_sum / (double)sv->clock : 0.0;
}

/* Every worker has reported epoch e: score the center, write it down, and
 * decide the next epoch's rate and whether to stop. */
static void dist_server_epoch(dist_server *sv, int e)
{
    dist_ctx *c = sv->c;
    int W = c->workers;
    dist_sums total = {0};
    for (int w = 0; w < W; w++)
        dist_sums_add(&total, &sv->acc[(long)e * W + w]);
    dist_sums val = {0};
    bool has_val = c->val.n > 0;
    if (has_val) {
        model_set_params(c->m, sv->center);
        model_set_state(c->m, sv->center + c->m->n_params);
        dist_eval_range(c->m, &c->val, 0, c->val.n, &val);
    }
    double now = MPI_Wtime();
    dist_epoch_info info = {.epoch = e, .train = total, .has_val = has_val, .val = val,
                            .lr = sv->lr[e], .seconds = now - sv->t_epoch,
                            .samples = total.n, .per_worker = &sv->acc[(long)e * W],
                            .worker_lr = &sv->wlr[(long)e * W],
                            .worker_order = &sv->order[(long)e * W],
                            .n_workers = W, .worker_ranks = sv->ranks,
                            .worker_commits = sv->sent, .commits = (long)sv->clock,
                            .mean_staleness = dist_server_staleness(sv)};
    sv->t_epoch = now;
    char err[1024];
    if (dist_report_epoch(c->rep, &info, err, sizeof err) < 0)
        dist_die("%s", err);
    if (dist_schedule_end(c, e, &total, has_val, &val) &&
        dist_write_epoch_weights(c, sv->center, sv->center + c->m->n_params, e + 1, -1, err,
                                 sizeof err) < 0)
        dist_die("model_checkpoint: %s", err);
    if (c->sched.stop) {
        sv->stopped = true;
        sv->stopped_epoch = e;
    } else if (e + 1 < c->spec->training.epochs) {
        sv->lr[e + 1] = dist_optim_epoch_lr(c, e + 1);
    }
    dist_server_checkpoint(sv, e + 1);
}

/* A "step" line for the epoch being written next, from the workers'
 * latest commits (dist_report_step keeps it to one a second). */
static void dist_server_progress(dist_server *sv)
{
    dist_ctx *c = sv->c;
    int e = sv->next_epoch;
    if (e >= c->spec->training.epochs || sv->stopped)
        return;
    dist_sums run = {0};
    long steps = 0;
    for (int w = 0; w < c->workers; w++) {
        const dist_sums *done = &sv->acc[(long)e * c->workers + w];
        const dist_msg *h = &sv->last[w];
        dist_sums part;
        if (done->n > 0) {
            part = *done;
            steps += sv->steps;
        } else if (h->epoch == e) {
            memcpy(&part, h->sums, sizeof part);
            steps += (long)h->step;
        } else {
            continue;
        }
        dist_sums_add(&run, &part);
    }
    if (run.n <= 0)
        return;
    double secs = MPI_Wtime() - sv->t_epoch;
    dist_report_step(c->rep, e, steps, sv->steps * c->workers, &run,
                     secs > 0 ? run.n / secs : 0.0);
}

/* Write every epoch all workers have reported. After a stop, epochs a
 * worker finished before it heard of it are not the job's: the center was
 * final before they ended. */
static void dist_server_advance(dist_server *sv)
{
    int epochs = sv->c->spec->training.epochs;
    while (!sv->stopped && sv->next_epoch < epochs &&
           sv->reported[sv->next_epoch] == sv->c->workers)
        dist_server_epoch(sv, sv->next_epoch++);
}

/* A message from a worker already declared lost: take what it sends, so
 * it is not left blocked in a send, and tell it to leave at its next
 * reply (dist_reply.lost) or, after its done, with the bye. */
static void dist_server_handle_lost(dist_server *sv, const dist_msg *h, int src)
{
    dist_ctx *c = sv->c;
    if (h->kind == DIST_MSG_COMMIT && !dist_server_recv_payload(sv, src))
        return;
    if ((h->kind == DIST_MSG_EPOCH || h->kind == DIST_MSG_DONE) &&
        !dist_server_recv_wstate(sv, src))
        return;
    if ((h->kind == DIST_MSG_PULL || (h->kind == DIST_MSG_COMMIT && h->reply)) &&
        !dist_server_reply(sv, src))
        return;
    if (h->kind == DIST_MSG_DONE) {
        int64_t bye = -1;
        DIST_MPI(MPI_Send(&bye, 1, MPI_INT64_T, src, DIST_TAG_BYE, c->comm));
    }
}

static void dist_server_handle(dist_server *sv, const dist_msg *h, int src)
{
    dist_ctx *c = sv->c;
    int w = src - 1;
    int epochs = c->spec->training.epochs;
    if (sv->lost[w]) {
        dist_server_handle_lost(sv, h, src);
        return;
    }
    switch (h->kind) {
    case DIST_MSG_COMMIT:
        if (!dist_server_recv_payload(sv, src))
            break;
        dist_server_apply(sv, h, w);
        sv->last[w] = *h;
        if (h->reply && !dist_server_reply(sv, src))
            break;
        dist_server_progress(sv);
        break;
    case DIST_MSG_PULL:
        dist_server_reply(sv, src);
        break;
    case DIST_MSG_EPOCH:
        if (h->epoch < 0 || h->epoch >= epochs)
            dist_die("worker rank %d reported epoch %d of %d", src, h->epoch + 1, epochs);
        memcpy(&sv->acc[(long)h->epoch * c->workers + w], h->sums, sizeof(dist_sums));
        sv->wlr[(long)h->epoch * c->workers + w] = h->lr;
        sv->order[(long)h->epoch * c->workers + w] = h->order_hash;
        if (!dist_server_recv_wstate(sv, src))
            break;
        sv->sent[w] = (long)h->commits;
        sv->reported[h->epoch]++;
        sv->wepoch[w] = h->epoch + 1;
        dist_server_advance(sv);
        break;
    case DIST_MSG_DONE:
        if (!dist_server_recv_wstate(sv, src))
            break;
        sv->sent[w] = (long)h->commits;
        sv->times[2 * w] = h->sums[0];
        sv->times[2 * w + 1] = h->sums[1];
        sv->reads[2 * w] = h->sums[2];
        sv->reads[2 * w + 1] = h->sums[3];
        sv->done[w] = true;
        sv->n_done++;
        break;
    default:
        dist_die("worker rank %d sent an unknown message (%d)", src, h->kind);
    }
}

/* Under --enable-recovery: worker w is gone. Where it was (its epoch, 1
 * based, and the steps of it its latest commit covered) goes into the
 * history and progress.jsonl; its remaining epochs count as reported with
 * nothing trained, so the others' epochs are written without it. */
static void dist_server_lose(dist_server *sv, int w, double silent_s)
{
    dist_ctx *c = sv->c;
    int epochs = c->spec->training.epochs;
    int e = sv->wepoch[w];
    long step = sv->last[w].epoch == e ? (long)sv->last[w].step : 0;
    sv->lost[w] = true;
    sv->n_lost++;
    sv->n_done++;
    sv->sent[w] = sv->commits[w];
    dist_recovery_note_lost(sv->n_lost);
    fprintf(stderr,
            "punch-train: rank 0: worker rank %d has sent nothing for %.0f s (epoch %d, step "
            "%ld): lost; serving the %d other workers on\n",
            w + 1, silent_s, e + 1, step, c->workers - sv->n_lost);
    fflush(stderr);
    dist_report_lost_worker(c->rep, w + 1, e + 1, step, silent_s);
    for (int k = e; k < epochs; k++)
        sv->reported[k]++;
    if (sv->n_lost == c->workers)
        dist_die("every worker is lost (the last, rank %d, silent for %.0f s): ending the job",
                 w + 1, silent_s);
    dist_server_advance(sv);
}

/* A worker that has said nothing for the watchdog limit is hung or dead. */
static void dist_server_check_silence(dist_server *sv, double now)
{
    for (int w = 0; w < sv->c->workers; w++) {
        if (sv->done[w] || sv->lost[w] || now - sv->last_seen[w] <= sv->c->watchdog_s)
            continue;
        if (!dist_recovery_on())
            dist_die("worker rank %d has sent nothing for %.0f s: it is hung or dead; "
                     "ending the job",
                     w + 1, now - sv->last_seen[w]);
        dist_server_lose(sv, w, now - sv->last_seen[w]);
    }
}

static void dist_server_loop(dist_server *sv)
{
    dist_ctx *c = sv->c;
    struct timespec nap = {0, 100 * 1000};
    while (sv->n_done < c->workers) {
        dist_watchdog_tick("serving workers");
        int flag = 0;
        MPI_Status st;
        DIST_MPI(MPI_Iprobe(MPI_ANY_SOURCE, DIST_TAG_HDR, c->comm, &flag, &st));
        double now = MPI_Wtime();
        if (!flag) {
            dist_server_check_silence(sv, now);
            nanosleep(&nap, NULL);
            continue;
        }
        dist_msg h;
        int src = st.MPI_SOURCE;
        DIST_MPI(MPI_Recv(&h, (int)sizeof h, MPI_BYTE, src, DIST_TAG_HDR, c->comm,
                          MPI_STATUS_IGNORE));
        if (src < 1 || src > c->workers)
            dist_die("message from unexpected rank %d", src);
        sv->last_seen[src - 1] = now;
        dist_server_handle(sv, &h, src);
    }
}

/* Every live worker is done: it waits for this before it leaves, learning
 * whether a rank was lost (then it skips MPI_Finalize, dist_run.c). */
static void dist_server_bye(dist_server *sv)
{
    int64_t lost = sv->n_lost;
    for (int w = 0; w < sv->c->workers; w++)
        if (!sv->lost[w])
            DIST_MPI(MPI_Send(&lost, 1, MPI_INT64_T, w + 1, DIST_TAG_BYE, sv->c->comm));
}

static void dist_server_finish(dist_server *sv)
{
    dist_ctx *c = sv->c;
    char err[1024];
    long np = c->m->n_params;
    model_set_params(c->m, sv->center);
    model_set_state(c->m, sv->center + np);
    dist_sums test = {0};
    if (c->test.n > 0)
        dist_eval_range(c->m, &c->test, 0, c->test.n, &test);
    for (int w = 0; w < c->workers; w++)
        if (sv->sent[w] != sv->commits[w])
            dist_die("worker rank %d sent %ld commits but the server received %ld", w + 1,
                     sv->sent[w], sv->commits[w]);
    /* The final exchanges came after the last epoch's checkpoint. */
    dist_server_checkpoint(sv, sv->next_epoch);
    dist_report_commits(c->rep, (long)sv->clock, dist_server_staleness(sv), sv->sent,
                        c->workers);
    if (sv->stopped)
        dist_report_stopped(c->rep, sv->stopped_epoch, sv->discarded);
    dist_report_worker_times(c->rep, sv->times, c->workers);
    dist_report_reads(c->rep, sv->reads, c->workers);
    if (dist_write_weights(c, sv->center, sv->center + np, NULL, true, err, sizeof err) < 0 ||
        dist_report_end(c->rep, c->test.n > 0, &test, c->comm_s, c->train_s, err,
                        sizeof err) < 0)
        dist_die("%s", err);
}

/* training.evaluate: the center before any commit (not on resume) on the
 * test set, before the server answers its first message; the workers'
 * first exchanges wait for it. */
static void dist_server_evaluate_before(dist_server *sv, const dist_ps_start *start)
{
    dist_ctx *c = sv->c;
    if (!c->spec->training.evaluate || start->epoch > 0 || start->clock > 0 || c->test.n <= 0)
        return;
    dist_watchdog_tick_for("evaluating the center before training",
                           c->watchdog_s > 120 ? c->watchdog_s : 120);
    long np = c->m->n_params;
    model_set_params(c->m, sv->center);
    model_set_state(c->m, sv->center + np);
    dist_sums test = {0};
    dist_eval_range(c->m, &c->test, 0, c->test.n, &test);
    dist_report_evaluate(c->rep, &test);
}

int dist_ps_serve(dist_ctx *c, float *center, const dist_ps_start *start,
                  long *worker_commits)
{
    const job_spec *s = c->spec;
    int W = c->workers, E = s->training.epochs;
    dist_server sv = {.c = c, .center = center, .n = c->m->n_params + c->m->n_state,
                      .clock = start->clock, .staleness_sum = start->staleness_sum,
                      .sent = worker_commits, .next_epoch = (int)start->epoch};
    sv.buf = malloc((size_t)(sv.n + 1) * sizeof(float));
    sv.commits = calloc((size_t)W, sizeof *sv.commits);
    sv.last_seen = calloc((size_t)W, sizeof *sv.last_seen);
    sv.done = calloc((size_t)W, sizeof *sv.done);
    sv.acc = calloc((size_t)E * W, sizeof *sv.acc);
    sv.reported = calloc((size_t)E, sizeof *sv.reported);
    sv.lr = calloc((size_t)E, sizeof *sv.lr);
    sv.wlr = calloc((size_t)E * W, sizeof *sv.wlr);
    sv.order = calloc((size_t)E * W, sizeof *sv.order);
    sv.ranks = calloc((size_t)W, sizeof *sv.ranks);
    sv.receiving = calloc((size_t)W, sizeof *sv.receiving);
    sv.receiving_vars = calloc((size_t)W, sizeof *sv.receiving_vars);
    sv.replying = calloc((size_t)W, sizeof *sv.replying);
    sv.times = calloc((size_t)W * 2, sizeof *sv.times);
    sv.reads = calloc((size_t)W * 2, sizeof *sv.reads);
    sv.last = calloc((size_t)W, sizeof *sv.last);
    sv.n_wstate = dist_ps_state_floats(c);
    sv.wstate = malloc((size_t)(W * sv.n_wstate + 1) * sizeof(float));
    sv.has_wstate = calloc((size_t)W, sizeof *sv.has_wstate);
    sv.lost = calloc((size_t)W, sizeof *sv.lost);
    sv.wepoch = calloc((size_t)W, sizeof *sv.wepoch);
    sv.die_at = dist_recovery_test_die_step(0);
    if (!sv.replying || !sv.lost || !sv.wepoch || !sv.wstate || !sv.has_wstate || !sv.times || !sv.reads || !sv.last || !sv.buf ||
        !sv.commits || !sv.last_seen || !sv.done || !sv.acc || !sv.reported || !sv.lr ||
        !sv.wlr || !sv.order || !sv.ranks || !sv.receiving || !sv.receiving_vars)
        dist_die("out of memory");
    /* Commits restored from a checkpoint were applied by an earlier server. */
    for (int w = 0; w < W; w++) {
        sv.commits[w] = worker_commits[w];
        sv.wepoch[w] = (int)start->epoch;
        sv.ranks[w] = w + 1;
        snprintf(sv.receiving[w], sizeof sv.receiving[w],
                 "receiving a commit from worker rank %d", w + 1);
        snprintf(sv.receiving_vars[w], sizeof sv.receiving_vars[w],
                 "receiving the variables of worker rank %d", w + 1);
        snprintf(sv.replying[w], sizeof sv.replying[w], "sending the center to worker rank %d",
                 w + 1);
    }
    for (int e = 0; e < (int)start->epoch && e < E; e++)
        sv.reported[e] = W;
    /* A run resumed after early stopping fired has nothing left to train. */
    sv.stopped = c->sched.stop;
    sv.stopped_epoch = (int)start->epoch - 1;
    if (start->epoch < E)
        sv.lr[start->epoch] = dist_optim_epoch_lr(c, (int)start->epoch);
    char err[1024];
    c->rep = dist_report_open(c, (int)start->epoch, err, sizeof err);
    if (!c->rep)
        dist_die("%s", err);
    long per = (c->n_train / W + s->training.batch_size - 1) / s->training.batch_size;
    if (s->training.steps_per_epoch > 0 && s->training.steps_per_epoch < per)
        per = s->training.steps_per_epoch;
    sv.steps = per;
    for (int w = 0; w < W; w++)
        sv.last[w].epoch = -1;
    dist_report_start(c->rep, per * W, c->n_train);
    dist_server_evaluate_before(&sv, start);
    double now = MPI_Wtime();
    for (int w = 0; w < W; w++)
        sv.last_seen[w] = now;
    sv.t_epoch = now;
    dist_server_loop(&sv);
    c->train_s = MPI_Wtime() - now;
    dist_server_bye(&sv);
    /* The profile is gathered from every rank: not from a dead one. */
    if (sv.n_lost == 0)
        dist_profile_write(c);
    else if (s->training.profile)
        fprintf(stderr, "punch-train: rank 0: training.profile: no profile.json, a worker "
                        "was lost\n");
    dist_server_finish(&sv);
    free(sv.buf);
    free(sv.commits);
    free(sv.last_seen);
    free(sv.done);
    free(sv.acc);
    free(sv.reported);
    free(sv.lr);
    free(sv.wlr);
    free(sv.order);
    free(sv.ranks);
    free(sv.receiving);
    free(sv.receiving_vars);
    free(sv.replying);
    free(sv.times);
    free(sv.reads);
    free(sv.last);
    free(sv.wstate);
    free(sv.has_wstate);
    free(sv.lost);
    free(sv.wepoch);
    return 0;
}
