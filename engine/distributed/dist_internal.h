/* dist_internal.h — what the files of engine/dist share: the per-rank
 * context, metric sums, the MPI error helpers, the watchdog, the gradient
 * exchange, evaluation, the run-directory report and checkpoints. */
#ifndef PUNCH_DIST_INTERNAL_H
#define PUNCH_DIST_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "model/model.h"
#include "distributed/dist.h"
#include "gpu/gpu_bucket.h"
#include "optim/optim.h"
#include "optim/schedule.h"

/* ---- errors -------------------------------------------------------- */

/* Print "punch-train: rank R: <message>" and end the whole job
 * (MPI_Abort). Never returns. */
_Noreturn void dist_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Who this rank is, and where rank 0 records a failure ("end" event). */
void dist_error_setup(int rank, const char *out_dir);

/* Check an MPI call (communicators use MPI_ERRORS_RETURN): on failure the
 * job is aborted with the call, file:line and MPI's own message. */
#define DIST_MPI(call) dist_mpi_check((call), #call, __FILE__, __LINE__)
void dist_mpi_check(int rc, const char *call, const char *file, int line);

/* ---- watchdog ------------------------------------------------------ */

/* A thread that aborts the job when this rank has not called
 * dist_watchdog_tick for `limit_s` seconds (a peer hung or died inside a
 * collective, or this rank is stuck), naming the rank and what it was
 * doing. */
int dist_watchdog_start(double limit_s);
void dist_watchdog_tick(const char *doing);
/* The same with twice the limit: for waiting on a rank that runs a
 * watchdog of its own (a worker waiting on the server), so the rank that
 * sees the actual culprit reports first. `doing` must outlive the tick. */
void dist_watchdog_tick_patient(const char *doing);
/* The same with an explicit limit for this activity. */
void dist_watchdog_tick_for(const char *doing, double seconds);
void dist_watchdog_stop(void);

/* ---- heartbeat (dist_sync_heartbeat.c) ------------------------------------ */

/* Collective: a window on rank 0 with one arrival counter per rank. */
void dist_heartbeat_start(MPI_Comm comm);
/* This rank has arrived at its next collective. */
void dist_heartbeat_arrive(void);
/* Collective: release the window. */
void dist_heartbeat_stop(void);
/* Rank 0 (from any thread): the ranks that have arrived at fewer
 * collectives than the others, as "1, 3" in buf; returns how many. */
int dist_heartbeat_late(char *buf, size_t len);

/* ---- metric sums ----------------------------------------------------- */

/* Sums over samples, reducible with MPI_SUM as DIST_SUMS_LEN doubles. */
typedef struct dist_sums {
    double loss;     /* sum of per-sample losses */
    double correct;
    double sq_err;
    double abs_err;
    double n;        /* samples */
    double terms;    /* loss terms (model_loss_terms): samples, or the real
                        steps of a per-step model; the loss and metric divisor */
} dist_sums;
#define DIST_SUMS_LEN 6

/* A batch of `batch` samples of the model m just scored (its loss terms
 * counted from m). */
void dist_sums_add_batch(dist_sums *s, const model *m, double loss_sum, const batch_metrics *bm,
                         int batch);
/* acc += s, field by field. */
void dist_sums_add(dist_sums *acc, const dist_sums *s);
/* Mean loss and the spec's metrics, in the order of spec->training.metrics. */
double dist_sums_loss(const dist_sums *s);
double dist_sums_metric(const dist_sums *s, spec_metric metric, int n_out);

/* ---- the context of one rank ----------------------------------------- */

typedef struct dist_report dist_report;

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
    struct dist_stream *stream; /* local: the epochs' slices (dist_async_stream.c) */
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

/* ---- data (dist_sync_data.c) ------------------------------------------------ */

/* Collective: load this rank's train block, evaluation sets and the
 * global scaling; set up the permutation and the exchange plan (the
 * trainers' slicing of the permutation, see dist_data_consumers). */
void dist_data_load(dist_ctx *c);
void dist_data_free(dist_ctx *c);
/* The permutation of `epoch` for `seed` into c->perm (identity when
 * data.shuffle is false). */
void dist_data_epoch(dist_ctx *c, unsigned long seed, int epoch);
/* The rows of c->data holding the batch of `batch` samples at positions
 * [first, first + batch) of the permutation that this rank trains on at
 * `step` of the epoch. Collective over the training ranks when sharded:
 * every training rank calls it for each of its steps in order (with
 * batch 0 when it has no samples that step), and dist_data_epoch_end
 * after its last step. An asynchronous worker's call may repoint c->data
 * (to its batch of converted bytes): read c->data after calling. */
const int64_t *dist_data_batch(dist_ctx *c, long step, long first, int batch);
void dist_data_epoch_end(dist_ctx *c);

/* Asynchronous workers: the records trained this epoch so far, in order,
 * hashed (dist_order_hash; history.json's workers[i].order_hash). */
uint64_t dist_data_order_hash(const dist_ctx *c);

/* FNV-1a over 64-bit words: h = (h ^ record) * 0x100000001b3 (mod 2^64)
 * for each record in training order, from DIST_ORDER_HASH_INIT. */
#define DIST_ORDER_HASH_INIT 0xcbf29ce484222325ULL
static inline uint64_t dist_order_hash(uint64_t h, int64_t record)
{
    return (h ^ (uint64_t)record) * 0x100000001b3ULL;
}

/* ---- an asynchronous worker's epochs from the files (dist_async_stream.c) --- */

typedef struct dist_stream dist_stream;

/* Read epoch 0's slice, positions [lo, hi) of its permutation (raw
 * values: the scaling statistics are not known yet). NULL + message on
 * failure. The thread that later reads ahead uses c's spec, options and
 * layout, which must outlive the stream. */
dist_stream *dist_stream_open(const dist_ctx *c, long lo, long hi, char *err, size_t errlen);
void dist_stream_close(dist_stream *s);
/* The slice read at open: its features, shape and class count. */
const dataset *dist_stream_first(const dist_stream *s);
/* That slice's contributions to the scaling statistics (dataset.h's
 * dataset_stats_*): the slices of one epoch partition the train part. */
void dist_stream_stats_sum(const dist_stream *s, double *sum);
void dist_stream_stats_m2(const dist_stream *s, const double *mean, double *m2);
float dist_stream_stats_max_abs(const dist_stream *s);
/* The global statistics (copied): every sample is scaled with them. */
int dist_stream_set_scaling(dist_stream *s, const dataset_scaling_stats *st, char *err,
                            size_t errlen);
/* Make epoch e's slice current (waiting for its read if it is not done;
 * ending the job with the read's message if it failed) and start reading
 * epoch e + 1. */
void dist_stream_epoch(dist_stream *s, int epoch);
/* The batch at positions [first, first + b) of the permutation: *data and
 * the rows of it to load. */
const int64_t *dist_stream_batch(dist_stream *s, long first, int b, const dataset **data);
uint64_t dist_stream_hash(const dist_stream *s);
/* Seconds training waited for reads (epoch 1's, read at start-up, aside). */
double dist_stream_waited(const dist_stream *s);
/* CPU seconds the reads after start-up took on the read thread (0 while a
 * read is under way). */
double dist_stream_read_cpu(const dist_stream *s);
/* Samples resident at most: the slice training and the one being read. */
long dist_stream_held(const dist_stream *s);

/* The learning rate this epoch's steps use, after warm-up/reductions. */
float dist_optim_epoch_lr(dist_ctx *c, int epoch);

/* ---- gradient exchange (allreduce) ----------------------------------- */

typedef struct dist_grad dist_grad;

/* Buckets of at most bucket_mb MiB on layer boundaries; with `overlap`
 * each bucket's MPI_Iallreduce starts as soon as backward has written it
 * (and a dist_progress thread drives it, where MPI allows). `compression`
 * (spec.h) picks what goes on the wire. NULL on allocation failure. */
dist_grad *dist_grad_create(model *m, MPI_Comm comm, double bucket_mb, bool overlap,
                            spec_compression compression);
void dist_grad_free(dist_grad *g);
/* The plan: how many buckets, and bucket k's float range [lo, hi), in
 * launch order (the last layers' bucket first). */
int dist_grad_buckets(const dist_grad *g);
void dist_grad_bucket(const dist_grad *g, int k, long *lo, long *hi);
/* Backward over the loaded batch of `batch` samples (0: this rank has no
 * samples this step and contributes zeros) and the exchange: afterwards
 * m->grads on every rank holds sum_r(batch_r * grad_r) / total, the mean
 * gradient over the global batch of `total` samples. Adds the seconds spent
 * in MPI to *comm_s. */
void dist_grad_backward_allreduce(dist_grad *g, model *m, int batch, long total,
                                  double *comm_s);

/* A rank's share of the global batch of `total` samples when it trained
 * on `batch` of them (0 when total is 0): each rank scales its mean
 * gradient by it and the ranks sum, giving the global-batch mean. */
float dist_rank_share(int batch, long total);

/* ---- bf16 gradient compression (dist_sync_bf16.c) --------------------- */

/* fp32 -> bf16, rounding to nearest even (NaN stays NaN), and back. */
uint16_t dist_bf16_round(float x);
float dist_bf16_float(uint16_t h);
/* Error feedback over n values: v = factor * g + residual, q = bf16(v),
 * residual = v - q (the carry for the next step). */
void dist_bf16_quantize(const float *g, float factor, float *residual, uint16_t *q, long n);
void dist_bf16_dequantize(const uint16_t *q, float *out, long n);
/* The commutative MPI_Op summing MPI_UINT16_T bf16 values in fp32, one
 * rounding per hop; free with MPI_Op_free. Returns MPI's code. */
int dist_bf16_op_create(MPI_Op *op);

/* ---- progress while computing (dist_sync_progress.c) ------------------- */

typedef struct dist_progress dist_progress;

/* A thread that polls the watched requests with MPI_Testall; NULL when
 * MPI's thread level is below MPI_THREAD_SERIALIZED or on failure (then
 * nothing drives the requests but the caller). */
dist_progress *dist_progress_start(void);
void dist_progress_stop(dist_progress *p);
/* Hold the lock around every MPI call while requests are watched. */
void dist_progress_lock(dist_progress *p);
void dist_progress_unlock(dist_progress *p);
/* With the lock held: poll req[0, n) from now on / stop polling. */
void dist_progress_watch(dist_progress *p, MPI_Request *req, int n);
void dist_progress_idle(dist_progress *p);

/* ---- gradient exchange on a CUDA device (dist_sync_nccl.c) ------------------ */

/* The model's parameter layout as gpu_bucket.h spans (n_layers entries). */
void dist_param_spans(const model *m, gpu_param_span *spans);
/* NCCL buckets of at most bucket_mb MiB on layer boundaries: the same cut
 * as dist_grad's MPI buckets. False + message on failure. */
bool dist_gpu_plan(const model *m, double bucket_mb, gpu_bucket_plan *plan, char *err,
                   size_t errlen);

/* Collective: true when this rank's backend is a CUDA device (and the
 * build has CUDA), so the allreduce trainer exchanges gradients with NCCL
 * and steps the optimizer on the device. Ends the job when the ranks
 * disagree. */
bool dist_gpu_wanted(dist_ctx *c);

typedef struct dist_gpu dist_gpu;

/* Collective: bucket plan, device optimizer (optim.h's checkpoint layout)
 * and NCCL communicator for c's model; ends the job on failure. With
 * `overlap` a bucket is queued as soon as backward has queued its layers. */
dist_gpu *dist_gpu_create(dist_ctx *c, bool overlap);
void dist_gpu_free(dist_gpu *d);
/* dist_grad_backward_allreduce's contract, on device memory with NCCL. */
void dist_gpu_backward_allreduce(dist_gpu *d, model *m, int batch, long total,
                                 double *comm_s);
/* params -= optimizer(grads), on the device. */
void dist_gpu_optimizer_step(dist_gpu *d, model *m, float lr);
/* The device optimizer's state in optim_state_save's layout
 * (optim_state_floats(c->optim) floats). */
void dist_gpu_optim_save(const dist_gpu *d, float *dst);
void dist_gpu_optim_load(dist_gpu *d, const float *src);

/* ---- evaluation ------------------------------------------------------ */

/* Inference-mode sums over samples [lo, hi) of d. */
void dist_eval_range(model *m, const dataset *d, long lo, long hi, dist_sums *out);
/* Sums over a whole set, each rank evaluating its slice d (the ranks'
 * slices as dist_data_load cuts them). */
void dist_eval_sharded(dist_ctx *c, const dataset *d, dist_sums *out);
/* The model's outputs (n_out per sample) for samples [0, d->n) into out. */
void dist_predict(model *m, const dataset *d, float *out);
/* Sums of the loss and metrics of given outputs (e.g. an ensemble's mean
 * prediction) against d's labels. */
void dist_output_sums(const job_spec *spec, const float *out, int n_out, const dataset *d,
                      dist_sums *s);

/* ---- training.profile (dist_profile.c) --------------------------------- */

/* Turn profiling on for this rank's model when the spec asks (training
 * ranks only: a parameter server trains nothing). Ends the job when out of
 * memory. */
void dist_profile_enable(dist_ctx *c);
/* Around one training step: begin before loading the batch, mark the end
 * of each phase (load, forward, loss, backward with the update), end after
 * the step's communication (the MPI seconds are comm_s's growth since
 * begin). Each is one branch when profiling is off. */
void dist_profile_begin(dist_ctx *c);
void dist_profile_mark(dist_ctx *c, profile_phase phase);
void dist_profile_end(dist_ctx *c);
/* Collective over c->comm after training, before rank 0 writes the "end"
 * event (as the single trainer orders them): rank 0 gathers every rank's
 * figures and writes profile.json. Nothing when profiling is off. */
void dist_profile_write(dist_ctx *c);

/* ---- the run directory (rank 0) -------------------------------------- */

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

/* ---- checkpoints ------------------------------------------------------ */

/* What a checkpoint holds besides the replicas. */
typedef struct dist_ckpt_meta {
    int epochs_done;
    uint64_t global_step;
    long commits;
    double staleness_sum;
    int n_replicas;         /* replicas below */
    int n_workers;          /* entries of worker_commits */
    long n_optim;           /* dist_ckpt_load: optimizer floats per replica */
    long *worker_commits;   /* NULL unless async */
    schedule_state sched;
} dist_ckpt_meta;

/* Replica k: params, state, optimizer state (optim may be NULL: none, or
 * zeros when n_optim > 0). */
typedef struct dist_replica {
    float *params;
    float *state;
    float *optim;
} dist_replica;

int dist_ckpt_save(const dist_ctx *c, const dist_ckpt_meta *meta, const dist_replica *reps,
                   long n_optim, char *err, size_t errlen);
/* Loads the file into meta and freshly allocated replicas (free with
 * dist_ckpt_free); checks trainer, rank count and sizes. n_optim < 0
 * accepts the file's optimizer floats per replica (meta->n_optim): the
 * asynchronous trainers' checkpoints have 0 or the workers' count. */
int dist_ckpt_load(const dist_ctx *c, dist_ckpt_meta *meta, dist_replica **reps,
                   long n_optim, char *err, size_t errlen);
void dist_ckpt_free(dist_ckpt_meta *meta, dist_replica *reps);

/* ---- shared by the synchronous trainers ------------------------------ */

/* The schedule's end-of-epoch step on the given metrics (rank 0 of the
 * synchronous trainers, the parameter server). Returns true when a
 * model_checkpoint callback says to save the weights now. */
bool dist_schedule_end(dist_ctx *c, int epoch, const dist_sums *train, bool has_val,
                       const dist_sums *val);
/* After an epoch: rank 0 runs the schedule on the global metrics and
 * broadcasts its state and *save (model_checkpoint's verdict), so every
 * rank uses the same rate, stops together and joins in a save. Returns
 * true when early stopping fired. */
bool dist_sync_schedule(dist_ctx *c, int epoch, const dist_sums *train, bool has_val,
                        const dist_sums *val, bool *save);
/* Gather each rank's sums to rank 0 (per_worker: size entries there) and
 * return their total on rank 0. */
dist_sums dist_gather_sums(dist_ctx *c, const dist_sums *mine, dist_sums *per_worker);
/* Rank 0 records every rank's communication and training seconds. */
void dist_sync_report_times(dist_ctx *c);
/* Rank 0, at the end of a synchronous run: weights.safetensors and
 * weights.npz from this rank's model, then the "end" event with the test
 * sums (when the job has a test set). Ends the job on failure. */
void dist_sync_write_final(dist_ctx *c, const dist_sums *test);
/* Abort unless every rank holds bit-identical parameters. */
void dist_check_identical(dist_ctx *c, uint64_t step);

/* ---- the trainers ------------------------------------------------------ */

int dist_run_allreduce(dist_ctx *c);
int dist_run_replicas(dist_ctx *c);   /* averaging and ensemble */
int dist_run_async(dist_ctx *c);      /* downpour, adag, dynsgd, aeasgd, eamsgd */

/* dist_optim.c: accumulation, clipping, the per-step rate and AdamW's
 * decay ranges around every trainer's host optimizer step. */
void dist_optim_setup(dist_ctx *c);
void dist_optim_free(dist_ctx *c);
/* The rate of the optimizer step at micro-batch `step` of `epoch`. */
float dist_optim_lr(const dist_ctx *c, long epoch, long step, long steps_per_epoch, float lr);
/* After model_backward: accumulate; at a group's end (or `last`), clip and
 * step. True when it stepped. */
bool dist_optim_local_step(dist_ctx *c, float lr, bool last);
/* allreduce with grad_accum_steps > 1 on the host: backward of this rank's
 * `batch` of the micro-step's `total`, accumulated; at a group's end one
 * MPI_Allreduce of the mean, clipping and the step. True when it stepped. */
bool dist_optim_reduced_step(dist_ctx *c, int batch, long total, float lr, bool last);

/* dist_async_recovery.c: under `mpirun --enable-recovery` (the
 * parameter-server trainers under punchcardd), where mpirun outlives a
 * dead rank and exits 0 whatever its ranks do. */
bool dist_recovery_on(void);
/* Makes the job fail: ends this rank's Open MPI launcher (SIGTERM), under
 * recovery only; call before exiting on an error. Async-signal-safe
 * enough for the watchdog thread (no MPI). */
void dist_recovery_fail_job(void);
/* Ranks lost during the run: the survivors then skip the final barrier
 * and MPI_Finalize, whose fence would wait for the dead. */
void dist_recovery_note_lost(int ranks);
int dist_recovery_lost(void);
/* The test hook PUNCH_TEST_DIE_RANK / PUNCH_TEST_DIE_STEP: the step (a
 * worker's local step, counted from 1; the server's commit count) at
 * which this rank SIGKILLs itself, or -1. */
int dist_recovery_test_die_step(int rank);

#endif
