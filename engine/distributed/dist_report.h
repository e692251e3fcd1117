/* dist_report.h — the run directory rank 0 writes: history.json, the run log,
 * the weights. */
#ifndef PUNCH_DIST_REPORT_H
#define PUNCH_DIST_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distributed/dist_ctx.h"
#include "distributed/dist_eval.h"

typedef struct dist_epoch_info {
    int epoch;              /* 0-based */
    dist_sums train;
    bool has_val;
    dist_sums val;
    double lr;
    double seconds;
    double samples;         /* trained this epoch, all workers */
    const dist_sums *per_worker;  /* workers entries; NULL = none */
    const double *worker_lr;      /* async: per worker, the rate it ended the
                                     epoch with; else NULL */
    const uint64_t *worker_order; /* async: per worker, dist_order_hash of
                                     the records it trained; else NULL */
    int n_workers;
    const int *worker_ranks;
    const long *worker_commits;   /* async: per worker, cumulative; else NULL */
    long commits;                 /* async: server total */
    double mean_staleness;
} dist_epoch_info;

/* Collective over c->comm, once at start: every rank's
 * MPI_Get_processor_name to rank 0, where dist_report_open records them as
 * history.json's "rank_hosts". */
void dist_report_gather_hosts(const dist_ctx *c);
/* Collective over c->comm, once every rank has built its model: whether
 * each rank's backend is bit-reproducible (backend.h's not_reproducible)
 * to rank 0, where history.json's "reproducible" reports it. */
void dist_report_gather_reproducible(const dist_ctx *c);
dist_report *dist_report_open(const dist_ctx *c, int start_epoch, char *err, size_t errlen);
void dist_report_free(dist_report *r);
void dist_report_start(dist_report *r, long steps, long samples);
/* A "step" line (rate-limited to one per second). */
void dist_report_step(dist_report *r, int epoch, long step, long steps, const dist_sums *run,
                      double samples_per_s);
int dist_report_epoch(dist_report *r, const dist_epoch_info *e, char *err, size_t errlen);
/* Each worker's seconds in communication and in its training loop
 * (times: n_workers pairs), for the communication share. */
void dist_report_worker_times(dist_report *r, const double *times, int n_workers);
/* Asynchronous workers: the seconds each waited for its epochs' reads and
 * the CPU seconds those reads took (n_workers pairs). */
void dist_report_reads(dist_report *r, const double *reads, int n_workers);
/* training.evaluate: the "evaluate" event (when "before", test_ values)
 * of the model before the first step, as the single trainer writes it. */
void dist_report_evaluate(dist_report *r, const dist_sums *test);
int dist_report_end(dist_report *r, bool has_test, const dist_sums *test, double comm_s,
                    double train_s, char *err, size_t errlen);
/* The parameter server's final counters: total commits, mean staleness,
 * and each worker's own count of the commits it sent. */
void dist_report_commits(dist_report *r, long commits, double mean_staleness,
                         const long *worker_commits, int n_workers);
/* Early stopping fired after 0-based `epoch`; `discarded` commits arrived
 * after that and were not applied. */
void dist_report_stopped(dist_report *r, int epoch, long discarded);
/* A worker the parameter server declared lost at `epoch` (1-based) after
 * `step` steps of it: history.json's lost_workers and a worker_lost event. */
void dist_report_lost_worker(dist_report *r, int rank, int epoch, long step, double silent_s);

/* Write weights.safetensors and weights.npz (suffix NULL), or
 * weights.<suffix>.safetensors, from host params/state of model m. */
int dist_write_weights(const dist_ctx *c, const float *params, const float *state,
                       const char *suffix, bool npz, char *err, size_t errlen);
/* What a model_checkpoint callback saves after `epochs_done` epochs, as
 * the single trainer names it: checkpoints/weights-epoch-NNN.safetensors
 * and .npz (member < 0), or an ensemble member's
 * checkpoints/weights-epoch-NNN.member-K.safetensors. */
int dist_write_epoch_weights(const dist_ctx *c, const float *params, const float *state,
                             int epochs_done, int member, char *err, size_t errlen);

#endif
