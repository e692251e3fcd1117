/* dist_sync_nccl.h — the gradient exchange and optimizer step on a CUDA device
 * (NCCL), and each rank's share of the global batch. */
#ifndef PUNCH_DIST_SYNC_NCCL_H
#define PUNCH_DIST_SYNC_NCCL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu/gpu_bucket.h"
#include "distributed/dist_ctx.h"

/* A rank's share of the global batch of `total` samples when it trained
 * on `batch` of them (0 when total is 0): each rank scales its mean
 * gradient by it and the ranks sum, giving the global-batch mean. */
float dist_rank_share(int batch, long total);

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

#endif
