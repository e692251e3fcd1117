/* dist.h — distributed training over MPI: every trainer of
 * distributed.trainer except `single` (allreduce, averaging, ensemble, and
 * the parameter-server family downpour, adag, dynsgd, aeasgd, eamsgd).
 *
 * punch-train calls dist_train() on every rank of `mpirun -np R` when the
 * job's trainer is not `single`; R must be spec_ranks_needed(spec) (the
 * workers, plus rank 0 as parameter server for the asynchronous trainers).
 * dist_train initialises MPI itself when the caller has not, and finalises
 * it only if it initialised it.
 *
 * Rank 0 alone writes the run directory (schema/rundir.md): progress.jsonl,
 * history.json with per-worker detail (and commits / mean_staleness for the
 * asynchronous trainers), weights.safetensors + weights.npz (ensemble: also
 * weights.member-K.safetensors), and checkpoints/ckpt.bin after every
 * epoch. Any error on any rank, a rank that dies, or a rank that stops
 * making progress for opt->env.watchdog_s seconds ends the whole job with
 * MPI_Abort and a message naming the rank. */
#ifndef PUNCH_DIST_H
#define PUNCH_DIST_H

#include <stdbool.h>

#include "data/dataset.h"
#include "jobspec/spec.h"
#include "train/options.h"

typedef struct dist_options {
    const char *out_dir;        /* run directory (created by rank 0 if missing) */
    dataset_roots roots;        /* where dataset names resolve */
    int threads;                /* CPU threads per rank; <= 0: the spec's
                                   resources.threads_per_worker */
    bool resume;                /* continue from out_dir/checkpoints/ckpt.bin */
    engine_options env;         /* the environment's knobs (train/options.h):
                                   watchdog, exchange window, overlap, ... */
} dist_options;

/* Does this trainer run through dist_train (everything but single)? */
bool dist_handles(const job_spec *spec);

/* Train `spec` on this rank as part of the MPI job. Returns the process
 * exit status: 0 on success; on failure the job has been aborted and the
 * message printed on stderr as "punch-train: rank R: ...". */
int dist_train(const job_spec *spec, const dist_options *opt);

#endif
