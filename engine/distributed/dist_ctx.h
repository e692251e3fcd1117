/* dist_ctx.h — the context of one rank, the state every file of
 * engine/distributed works on. */
#ifndef PUNCH_DIST_CTX_H
#define PUNCH_DIST_CTX_H

#include <stdbool.h>
#include <stdint.h>
#include <mpi.h>

#include "model/model.h"
#include "distributed/dist.h"
#include "optim/optim.h"
#include "optim/schedule.h"

typedef struct dist_report dist_report;
typedef struct dist_stream dist_stream;

typedef struct dist_ctx {
    const job_spec *spec;
    const dist_options *opt;
    MPI_Comm comm;          /* a dup of MPI_COMM_WORLD, errors returned */
    int rank, size;
    int local_rank;
    bool rank0_local;       /* world rank 0 runs on this node */
    int workers;            /* ranks that train */
    bool has_server;        /* rank 0 is a parameter server */
    backend *be;
    model *m;
    optimizer *optim;
    /* Data (dist_sync_data.c). The train part has n_train samples; this rank
     * holds train = records [shard_lo, shard_lo + train.n) of it (all of
     * them when `whole`; none on a parameter server, nor on an
     * asynchronous worker, whose stream holds its epoch slices), val and
     * test its evaluation slices or whole sets. */
    dataset train, val, test;
    dataset_layout lay;     /* the global sizes: lay.n_val, lay.n_test */
    long n_train;
    long shard_lo;
    bool whole;             /* every training rank holds the whole train part */
    bool local;             /* asynchronous workers: each reads its slice of
                               every epoch from the files (no exchange) */
    dist_stream *stream;    /* local: the epochs' slices (dist_async_stream.c) */
    uint64_t order_hash;    /* async, whole data: this epoch's records so far */
    MPI_Comm hcomm;         /* the training ranks (MPI_COMM_NULL on a server) */
    int n_holders, holder;  /* training ranks, and this one's index among them */
    /* sharded: the exchange window (dist_sync_data.c) */
    long win_steps;         /* steps per window */
    long win_max_steps;     /* the most steps any training rank takes an epoch */
    long win_next;          /* the next window to exchange this epoch */
    long per_epoch;         /* samples this rank consumes an epoch */
    long send_rows;         /* room in the send buffer */
    float *send_x;
    int32_t *send_y;        /* per row: its labels (label_steps), then its
                               length when the data has lengths */
    int32_t *recv_y;        /* the same, received for the window's rows */
    int64_t *rows;          /* rows of epoch for this rank's samples of the window */
    dataset epoch;          /* the current window's samples */
    const dataset *data;    /* what dist_data_batch's rows index: &train or &epoch */
    long *held;             /* rank 0: per rank, samples held and received per epoch */
    int64_t *perms;         /* sharded ensemble: every member's permutation */
    int64_t *perm;          /* n_train entries: this epoch's permutation
                               (dist_data_batch maps positions to rows) */
    /* data.bucket_by_length: every train record's length (the synchronous
     * trainers on sequences; NULL otherwise), gathered from the blocks,
     * or the whole train part's own when each rank holds it all. */
    const int32_t *all_len;
    int32_t *all_len_own;   /* all_len when gathered here (freed with the data) */
    float *host_params;     /* n_params */
    float *host_state;      /* n_state (+1) */
    dist_report *rep;       /* rank 0 only */
    schedule_state sched;
    int start_epoch;        /* 0, or the epochs a checkpoint has done */
    uint64_t global_step;   /* optimizer steps taken by this rank's model */
    grad_accum accum;       /* training.grad_accum_steps (dist_optim.c) */
    double comm_s;          /* seconds spent in communication */
    double train_s;         /* seconds in training loops */
    double watchdog_s;      /* the watchdog's limit */
    /* training.profile (dist_profile.c): the current step's last clock
     * reading and comm_s at its start, and the seconds steps spent in MPI */
    double prof_t, prof_comm;
    profile_stat prof_mpi;
} dist_ctx;

#endif
