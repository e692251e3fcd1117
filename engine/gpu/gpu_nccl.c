/* gpu_nccl.c — data-parallel gradient reduction with NCCL: a communicator
 * per job (unique id from rank 0 over MPI), whole-buffer sums or means,
 * and bucketed ones overlapped with the backward pass (gpu_bucket.h).
 *
 * Buckets run on a stream of their own: each waits, through an event, for
 * the compute stream to reach the point where its layers' gradients are
 * written, so the backward pass of lower layers proceeds while upper
 * layers' gradients are on the wire. Buckets launch strictly in plan order
 * on every rank, as NCCL requires the same collective sequence everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ctx.h"

struct gpu_comm {
    backend *be;
    ncclComm_t nccl;
    cudaStream_t stream;        /* NCCL's */
    cudaEvent_t grads_ready;    /* compute stream reached a bucket's end */
    cudaEvent_t reduced;        /* NCCL stream finished its buckets */
    int ranks;
    /* The step in progress (between begin and end). */
    gpu_bucket_progress progress;
    float *grads;
    ncclRedOp_t op;
};

static ncclRedOp_t gpu_comm_op(gpu_reduce_op op)
{
    return op == GPU_REDUCE_MEAN ? ncclAvg : ncclSum;
}

/* What rank 0 broadcasts: whether it got an id, and the id. */
typedef struct gpu_comm_hello {
    int ok;
    ncclUniqueId id;
} gpu_comm_hello;

gpu_comm *gpu_comm_create(backend *be, MPI_Comm comm, char *err, size_t errlen)
{
    gpu_comm *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "nccl: out of host memory");
        return NULL;
    }
    c->be = be;
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &c->ranks);
    gpu_comm_hello hello;
    memset(&hello, 0, sizeof hello);
    if (rank == 0)
        hello.ok = GPU_CHECK(ncclGetUniqueId(&hello.id));
    /* Every rank learns whether rank 0 failed, instead of waiting forever
     * in ncclCommInitRank. */
    if (MPI_Bcast(&hello, (int)sizeof hello, MPI_BYTE, 0, comm) != MPI_SUCCESS) {
        snprintf(err, errlen, "nccl: broadcasting the unique id failed");
        free(c);
        return NULL;
    }
    if (!hello.ok) {
        snprintf(err, errlen, "nccl: rank 0 could not create a unique id%s%s",
                 rank == 0 ? ": " : "", rank == 0 ? gpu_check_message() : "");
        free(c);
        return NULL;
    }
    gpu_ctx *g = gpu_ctx_of(be);
    if (!GPU_CHECK(cudaSetDevice(g->device)) ||
        !GPU_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) ||
        !GPU_CHECK(cudaEventCreateWithFlags(&c->grads_ready, cudaEventDisableTiming)) ||
        !GPU_CHECK(cudaEventCreateWithFlags(&c->reduced, cudaEventDisableTiming)) ||
        !GPU_CHECK(ncclCommInitRank(&c->nccl, c->ranks, hello.id, rank))) {
        snprintf(err, errlen, "nccl: %s", gpu_check_message());
        gpu_comm_free(c);
        return NULL;
    }
    return c;
}

void gpu_comm_free(gpu_comm *c)
{
    if (!c)
        return;
    if (c->stream)
        GPU_TEARDOWN(cudaStreamSynchronize(c->stream));
    if (c->nccl)
        GPU_TEARDOWN(ncclCommDestroy(c->nccl));
    if (c->grads_ready)
        GPU_TEARDOWN(cudaEventDestroy(c->grads_ready));
    if (c->reduced)
        GPU_TEARDOWN(cudaEventDestroy(c->reduced));
    if (c->stream)
        GPU_TEARDOWN(cudaStreamDestroy(c->stream));
    gpu_bucket_progress_free(&c->progress);
    free(c);
}

void gpu_comm_allreduce(gpu_comm *c, float *buf, long n, gpu_reduce_op op)
{
    if (n <= 0)
        return;
    GPU_MUST(ncclAllReduce(buf, buf, (size_t)n, ncclFloat, gpu_comm_op(op), c->nccl,
                           gpu_ctx_of(c->be)->stream));
}

void gpu_comm_begin(gpu_comm *c, const gpu_bucket_plan *plan, float *grads,
                    gpu_reduce_op op)
{
    c->grads = grads;
    c->op = gpu_comm_op(op);
    /* Allocates on the first step of a plan only: steady-state steps
     * reuse the counters. */
    if (!gpu_bucket_progress_begin(&c->progress, plan)) {
        fprintf(stderr, "punch-train: nccl: out of host memory\n");
        exit(EXIT_FAILURE);
    }
}

/* Queues bucket k on the NCCL stream behind the compute stream's current
 * position. */
static void gpu_comm_launch(gpu_comm *c, int k)
{
    const gpu_bucket *b = &c->progress.plan->buckets[k];
    GPU_MUST(cudaEventRecord(c->grads_ready, gpu_ctx_of(c->be)->stream));
    GPU_MUST(cudaStreamWaitEvent(c->stream, c->grads_ready, 0));
    float *p = c->grads + b->offset;
    GPU_MUST(ncclAllReduce(p, p, (size_t)b->count, ncclFloat, c->op, c->nccl, c->stream));
}

void gpu_comm_layer_done(gpu_comm *c, int layer)
{
    gpu_bucket_progress_layer_done(&c->progress, layer);
    for (int k; (k = gpu_bucket_progress_next(&c->progress, false)) >= 0;)
        gpu_comm_launch(c, k);
}

void gpu_comm_end(gpu_comm *c)
{
    if (!c->progress.plan)
        return;
    for (int k; (k = gpu_bucket_progress_next(&c->progress, true)) >= 0;)
        gpu_comm_launch(c, k);
    GPU_MUST(cudaEventRecord(c->reduced, c->stream));
    GPU_MUST(cudaStreamWaitEvent(gpu_ctx_of(c->be)->stream, c->reduced, 0));
    c->progress.plan = NULL;
    c->grads = NULL;
}
