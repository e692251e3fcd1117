/* options.h — the engine's environment knobs, read once at start-up
 * (main.c) into one struct and passed down to the trainers, so no module
 * deeper in the engine calls getenv and a bad value is reported before any
 * work starts. None is needed in normal use: they are for tests and
 * measurements, plus what the MPI launcher tells the process.
 *
 *   PUNCH_DATASETS          colon-separated dataset roots after
 *                           /usr/share/datasets (main.c; --datasets wins)
 *   PUNCH_WATCHDOG_S        seconds a rank may make no progress before the
 *                           job is ended (default 60; > 0)
 *   PUNCH_DIST_EXCHANGE_MB  the sample exchange's window per rank, in MiB
 *                           (default 8; > 0; dist_sync_data.c)
 *   PUNCH_DIST_OVERLAP      0 or 1: overlap the gradient allreduce with the
 *                           backward pass (default: on for CUDA devices,
 *                           where NCCL has a stream of its own; off on CPUs)
 *   PUNCH_DIST_CHECK_SYNC   0 or 1: allreduce verifies after every step that
 *                           all ranks hold bit-identical weights
 *   PUNCH_DIST_SHARDING     shard (default) or replicate: averaging replicas
 *                           train on their shard, or each on the whole
 *                           training set in the same order
 *   PUNCH_DIST_WHOLE_DATA   0 or 1: every training rank loads the whole train
 *                           part instead of its block (asynchronous workers:
 *                           instead of their epoch slices); same results
 *   PUNCH_RANK_MEMORY_MAX   bytes of data memory this process may hold
 *                           (RLIMIT_DATA, set by main.c before any work):
 *                           punchcardd gives every rank of a CPU job its
 *                           share of the job's ceiling, so a rank on a host
 *                           without the job's cgroup is bounded too
 *   PUNCH_GPU_SYNC          0 or 1: synchronise and check the device after
 *                           every CUDA/cuBLAS/cuDNN/NCCL call and kernel
 *                           launch, so a fault names its own file:line
 *                           (gpu/gpu_debug.h; slow, for debugging)
 *
 * An empty value counts as unset. */
#ifndef PUNCH_TRAIN_OPTIONS_H
#define PUNCH_TRAIN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/launch_env.h"

/* PUNCH_DIST_OVERLAP: unset leaves the choice to the device. */
typedef enum engine_overlap {
    ENGINE_OVERLAP_DEFAULT = 0,
    ENGINE_OVERLAP_OFF,
    ENGINE_OVERLAP_ON,
} engine_overlap;

typedef struct engine_options {
    int local_rank;           /* node-local rank (launch_env_local_rank): the GPU */
    int world_size;           /* ranks mpirun started (launch_env_world_size); 1 alone */
    const char *datasets;     /* PUNCH_DATASETS, or NULL */
    double watchdog_s;        /* PUNCH_WATCHDOG_S */
    double exchange_mb;       /* PUNCH_DIST_EXCHANGE_MB */
    engine_overlap overlap;   /* PUNCH_DIST_OVERLAP */
    bool check_sync;          /* PUNCH_DIST_CHECK_SYNC */
    bool replicate;           /* PUNCH_DIST_SHARDING=replicate */
    bool whole_data;          /* PUNCH_DIST_WHOLE_DATA */
    double rank_memory_max;   /* PUNCH_RANK_MEMORY_MAX, bytes; 0: no limit */
    bool gpu_sync;            /* PUNCH_GPU_SYNC */
} engine_options;

/* The values of an empty environment (a process not under a launcher). */
void engine_options_defaults(engine_options *o);

/* Fill *o from `lookup` (launch_env_getenv in production). 0, or -1 with
 * "PUNCH_X: must be ..., got \"v\"" in err; *o is complete either way
 * (defaults where a value was bad). The strings *o points to are the
 * lookup's and must outlive it. */
int engine_options_read(engine_options *o, launch_env_lookup lookup, char *err, size_t errlen);

#endif
