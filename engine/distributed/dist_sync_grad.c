/* dist_sync_grad.c — the allreduce trainer's gradient exchange: the flat
 * gradient buffer is cut into buckets on layer boundaries (at most
 * distributed.bucket_mb each, a layer larger than that is a bucket of its
 * own) and every bucket is summed over the ranks with MPI_Allreduce.
 *
 * With overlap, backward runs through model_backward_hooked (the one walk
 * over the layer graph, model/model.c) and a bucket's MPI_Iallreduce
 * starts the moment its lowest layer has written its gradients, while
 * earlier layers are still computing; a progress thread
 * (dist_sync_progress.c) polls the reductions in flight so that they move
 * while backward computes, or, where MPI's thread level does not allow
 * one, MPI_Test between layers does.
 *
 * With distributed.compression "bf16" a bucket goes on the wire as
 * bfloat16 with error feedback (dist_sync_bf16.c): quantized from the
 * scaled gradient plus this rank's carried residual, reduced with the
 * bf16 MPI_Op, and widened back into the gradient buffer.
 *
 * Each rank scales its gradient by batch_r / total before the sum, so the
 * result is the mean gradient over the global batch even when the last
 * batch of an epoch leaves some ranks fewer (or no) samples. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

#include "distributed/dist_sync_grad.h"
#include "distributed/dist_error.h"
#include "distributed/dist_sync_bf16.h"
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_sync_nccl.h"
#include "distributed/dist_sync_progress.h"

typedef struct dist_bucket {
    long lo, hi;            /* floats of the gradient buffer */
    int ready_layer;        /* backward of this layer completes the bucket */
} dist_bucket;

struct dist_grad {
    MPI_Comm comm;
    bool overlap;
    int n;
    dist_bucket *b;
    MPI_Request *req;
    float *host;            /* device backends: host copy of the gradients */
    bool bf16;              /* distributed.compression "bf16" */
    uint16_t *wire;         /* bf16: the payload, n_params values */
    float *residual;        /* bf16: each value's carried rounding error */
    MPI_Op bf16_sum;        /* bf16: dist_bf16_op_create's, else MPI_OP_NULL */
    dist_progress *progress;/* overlap: the polling thread, or NULL */
};

/* Walk layers from the last (backward order) and close a bucket when it
 * reaches the size limit. Parameters of layer i are contiguous and follow
 * those of layer i-1 (model_allocate), so a bucket is one range. */
static int dist_grad_plan(dist_grad *g, const model *m, long limit)
{
    g->b = calloc((size_t)m->n_layers + 1, sizeof *g->b);
    g->req = calloc((size_t)m->n_layers + 1, sizeof *g->req);
    if (!g->b || !g->req)
        return -1;
    long hi = m->n_params, lo = m->n_params;
    int ready = 0;
    for (int i = m->n_layers - 1; i >= 0; i--) {
        const layer *l = &m->layers[i];
        if (l->n_params == 0)
            continue;
        long l_lo = (long)(l->grads - m->grads);
        if (lo < hi && hi - l_lo > limit) {
            g->b[g->n++] = (dist_bucket){lo, hi, ready};
            hi = lo;
        }
        lo = l_lo;
        ready = i;
    }
    if (lo < hi)
        g->b[g->n++] = (dist_bucket){lo, hi, ready};
    return 0;
}

/* The bf16 payload, the residuals (zero: nothing carried yet) and the
 * reduction op. */
static int dist_grad_compress_init(dist_grad *g, const model *m)
{
    g->bf16 = true;
    g->wire = malloc((size_t)(m->n_params + 1) * sizeof *g->wire);
    g->residual = calloc((size_t)m->n_params + 1, sizeof *g->residual);
    if (!g->wire || !g->residual)
        return -1;
    DIST_MPI(dist_bf16_op_create(&g->bf16_sum));
    return 0;
}

dist_grad *dist_grad_create(model *m, MPI_Comm comm, double bucket_mb, bool overlap,
                            spec_compression compression)
{
    dist_grad *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->comm = comm;
    g->bf16_sum = MPI_OP_NULL;
    g->overlap = overlap && m->be->host_memory;
    long limit = (long)(bucket_mb * 1024.0 * 1024.0 / sizeof(float));
    if (limit < 1)
        limit = 1;
    if (dist_grad_plan(g, m, limit) < 0) {
        dist_grad_free(g);
        return NULL;
    }
    if (!m->be->host_memory) {
        g->host = malloc((size_t)(m->n_params + 1) * sizeof(float));
        if (!g->host) {
            dist_grad_free(g);
            return NULL;
        }
    }
    if (compression == SPEC_COMPRESSION_BF16 && dist_grad_compress_init(g, m) < 0) {
        dist_grad_free(g);
        return NULL;
    }
    /* No thread is a slower exchange, not a wrong one: go on without. */
    if (g->overlap)
        g->progress = dist_progress_start();
    return g;
}

int dist_grad_buckets(const dist_grad *g)
{
    return g->n;
}

void dist_grad_bucket(const dist_grad *g, int k, long *lo, long *hi)
{
    *lo = g->b[k].lo;
    *hi = g->b[k].hi;
}

void dist_grad_free(dist_grad *g)
{
    if (!g)
        return;
    dist_progress_stop(g->progress);
    if (g->bf16_sum != MPI_OP_NULL)
        MPI_Op_free(&g->bf16_sum);
    free(g->b);
    free(g->req);
    free(g->host);
    free(g->wire);
    free(g->residual);
    free(g);
}

static void dist_grad_start(dist_grad *g, model *m, int k, float factor, double *comm_s)
{
    const dist_bucket *b = &g->b[k];
    long n = b->hi - b->lo;
    float *p = m->grads + b->lo;
    void *buf = p;
    MPI_Datatype type = MPI_FLOAT;
    MPI_Op op = MPI_SUM;
    if (g->bf16) {
        dist_bf16_quantize(p, factor, g->residual + b->lo, g->wire + b->lo, n);
        buf = g->wire + b->lo;
        type = MPI_UINT16_T;
        op = g->bf16_sum;
    } else {
        m->be->scale(m->be, n, factor, p);
    }
    if (g->progress)
        dist_progress_lock(g->progress);
    if (k == 0)
        dist_heartbeat_arrive();
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, type, op, g->comm, &g->req[k]));
    *comm_s += MPI_Wtime() - t0;
    if (g->progress) {
        dist_progress_watch(g->progress, g->req, k + 1);
        dist_progress_unlock(g->progress);
    }
}

/* bf16: the reduced payload of buckets [0, n) back into buf (the
 * gradient buffer, or its host copy). */
static void dist_grad_widen(const dist_grad *g, float *buf)
{
    if (!g->bf16)
        return;
    for (int k = 0; k < g->n; k++)
        dist_bf16_dequantize(g->wire + g->b[k].lo, buf + g->b[k].lo, g->b[k].hi - g->b[k].lo);
}

/* The overlapped exchange in progress, for the per-layer hook. */
typedef struct dist_grad_overlap {
    dist_grad *g;
    model *m;
    float factor;
    double *comm_s;
    int next;               /* the next bucket to start */
} dist_grad_overlap;

/* After layer i's backward: start every bucket it completes, then let
 * the ones in flight progress. */
static void dist_grad_after_layer(void *ctx, int i)
{
    dist_grad_overlap *o = ctx;
    dist_grad *g = o->g;
    while (o->next < g->n && g->b[o->next].ready_layer == i)
        dist_grad_start(g, o->m, o->next++, o->factor, o->comm_s);
    if (o->next > 0 && !g->progress) {
        int flag;
        double t0 = MPI_Wtime();
        DIST_MPI(MPI_Testall(o->next, g->req, &flag, MPI_STATUSES_IGNORE));
        *o->comm_s += MPI_Wtime() - t0;
    }
}

/* model_backward with the buckets started as they complete (see the file
 * comment). A rank without samples this step still starts every bucket's
 * MPI_Iallreduce, in the same order: blocking and non-blocking collectives
 * do not match each other. */
static void dist_grad_backward_overlapped(dist_grad *g, model *m, int batch, float factor,
                                          double *comm_s)
{
    dist_grad_overlap o = {g, m, factor, comm_s, 0};
    if (batch == 0)
        m->be->zero(m->be, m->grads, m->n_params);
    else
        model_backward_hooked(m, batch, dist_grad_after_layer, &o);
    while (o.next < g->n)
        dist_grad_start(g, m, o.next++, factor, comm_s);
    /* The wait is this thread's own again. */
    if (g->progress) {
        dist_progress_lock(g->progress);
        dist_progress_idle(g->progress);
        dist_progress_unlock(g->progress);
    }
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Waitall(g->n, g->req, MPI_STATUSES_IGNORE));
    *comm_s += MPI_Wtime() - t0;
    dist_grad_widen(g, m->grads);
}

void dist_grad_backward_allreduce(dist_grad *g, model *m, int batch, long total,
                                  double *comm_s)
{
    float factor = dist_rank_share(batch, total);
    if (g->overlap) {
        dist_grad_backward_overlapped(g, m, batch, factor, comm_s);
        return;
    }
    if (batch > 0)
        model_backward(m, batch);
    else
        m->be->zero(m->be, m->grads, m->n_params);
    float *buf = m->grads;
    if (g->host) {
        m->be->download(m->be, g->host, m->grads, m->n_params);
        buf = g->host;
    }
    dist_heartbeat_arrive();
    double t0 = MPI_Wtime();
    for (int k = 0; k < g->n; k++) {
        const dist_bucket *b = &g->b[k];
        float *p = buf + b->lo;
        long n = b->hi - b->lo;
        if (g->bf16) {
            double t1 = MPI_Wtime();
            dist_bf16_quantize(p, factor, g->residual + b->lo, g->wire + b->lo, n);
            t0 += MPI_Wtime() - t1;
            DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, g->wire + b->lo, (int)n, MPI_UINT16_T,
                                   g->bf16_sum, g->comm));
            continue;
        }
        if (g->host) {
            for (long i = 0; i < n; i++)
                p[i] *= factor;
        } else {
            double t1 = MPI_Wtime();
            m->be->scale(m->be, n, factor, p);
            t0 += MPI_Wtime() - t1;
        }
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, p, (int)n, MPI_FLOAT, MPI_SUM, g->comm));
    }
    *comm_s += MPI_Wtime() - t0;
    dist_grad_widen(g, buf);
    if (g->host)
        m->be->upload(m->be, m->grads, g->host, m->n_params);
}
