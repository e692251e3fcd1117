/* dist_sync_grad.h — the synchronous gradient exchange over MPI (allreduce in
 * buckets). */
#ifndef PUNCH_DIST_SYNC_GRAD_H
#define PUNCH_DIST_SYNC_GRAD_H

#include <stdbool.h>
#include <mpi.h>

#include "model/model.h"

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

#endif
