/* dist_async_protocol.h — the parameter-server protocol of the asynchronous trainers
 * (downpour, adag, dynsgd, aeasgd, eamsgd). Rank 0 is the server and holds
 * the center variable; ranks 1..W are workers. A worker sends a header
 * (DIST_TAG_HDR) and, for a commit, its payload (DIST_TAG_DATA: n_params
 * residual or elastic-difference floats, then its n_state batchnorm
 * statistics). The server serves headers from any worker in arrival
 * order; a pull, or a commit that asks for it, is answered with a
 * dist_reply (DIST_TAG_REPLY) and the center (DIST_TAG_CENTER: params then
 * state).
 *
 * With each epoch-end and done header a worker sends its own variables
 * (DIST_TAG_STATE: dist_ps_state_floats floats, its params, batchnorm
 * state, then its optimizer state and eamsgd's momentum). The server
 * keeps the latest per worker and checkpoints them as replicas 1..W, so a
 * resumed elastic worker goes on from its own variables, not the center.
 *
 * The server owns the learning-rate schedules: it runs them at each epoch
 * end on the center's validation metrics and the workers' training
 * metrics, and every reply carries its schedule state, so a worker adopts
 * the server's rate (and its early stop) at its next exchange.
 *
 * The clock counts commits received; a commit's staleness is the clock at
 * arrival minus the clock the worker last pulled. */
#ifndef PUNCH_DIST_PS_H
#define PUNCH_DIST_PS_H

#include "distributed/dist_ctx.h"
#include "distributed/dist_eval.h"

enum {
    DIST_TAG_HDR = 101,
    DIST_TAG_DATA = 102,
    DIST_TAG_REPLY = 103,
    DIST_TAG_CENTER = 104,
    DIST_TAG_STATE = 105,
    DIST_TAG_BYE = 106,     /* the server to a worker after its done: an
                               int64, the workers lost (-1: this one was
                               declared lost) */
};

typedef enum dist_msg_kind {
    DIST_MSG_COMMIT,        /* payload follows; reply when `reply` */
    DIST_MSG_PULL,          /* reply: dist_reply + center */
    DIST_MSG_EPOCH,         /* the worker finished epoch `epoch` */
    DIST_MSG_DONE,          /* the worker has finished training */
} dist_msg_kind;

typedef struct dist_msg {
    int32_t kind;
    int32_t epoch;
    int32_t reply;
    int32_t pad;
    int64_t clock;          /* commit: the clock of the worker's last pull */
    int64_t commits;        /* epoch/done: commits this worker has sent */
    int64_t step;           /* commit: steps done in `epoch` so far */
    double sums[DIST_SUMS_LEN]; /* epoch: training sums of the epoch;
                                   commit: of the epoch so far;
                                   done: comm_s, train_s, seconds
                                   waited for reads, their CPU
                                   seconds */
    double lr;              /* epoch: the rate the worker ended the epoch with */
    uint64_t order_hash;    /* epoch: the records it trained on, in order
                               (dist_data_order_hash) */
} dist_msg;

/* The server's answer ahead of the center. */
typedef struct dist_reply {
    int64_t clock;          /* commits received so far */
    schedule_state sched;   /* after the latest epoch the server has scored;
                               sched.stop: early stopping fired, stop now */
    int64_t lost;           /* 1: the server declared this worker lost (it
                               was silent too long): it must leave */
} dist_reply;

/* Where the asynchronous run starts (rank 0 restores it on --resume). */
typedef struct dist_ps_start {
    int64_t epoch;
    int64_t clock;
    double staleness_sum;
    int64_t worker_state;   /* 1: rank 0 sends each worker its checkpointed
                               variables (DIST_TAG_STATE) before serving */
} dist_ps_start;

/* A worker's optimizer floats in its checkpoint replica: the local
 * optimizer's state (optim.h's layout), then for eamsgd its momentum r
 * (n_params). */
long dist_ps_optim_floats(const dist_ctx *c);
/* What DIST_TAG_STATE carries: n_params + n_state + dist_ps_optim_floats. */
long dist_ps_state_floats(const dist_ctx *c);

/* center: n_params + n_state floats, identical on every rank at entry;
 * worker_commits: the counts so far (W entries, from a checkpoint). When
 * start->worker_state, a worker first receives its variables from rank 0
 * (which dist_run_async sends) and trains on from them. */
int dist_ps_serve(dist_ctx *c, float *center, const dist_ps_start *start,
                  long *worker_commits);
int dist_ps_work(dist_ctx *c, float *center, const dist_ps_start *start, long commits);

#endif
