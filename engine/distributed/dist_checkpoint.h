/* dist_checkpoint.h — the distributed trainers' checkpoints. */
#ifndef PUNCH_DIST_CHECKPOINT_H
#define PUNCH_DIST_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "distributed/dist_ctx.h"

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

#endif
