/* dist_sync_grad.c — the allreduce trainer's gradient exchange: the flat
 * gradient buffer is cut into buckets on layer boundaries (at most
 * distributed.bucket_mb each, a layer larger than that is a bucket of its
 * own) and every bucket is summed over the ranks with MPI_Allreduce.
 *
 * With overlap, backward runs through model_backward_hooked (the one walk
 * over the layer graph, model/model.c) and a bucket's MPI_Iallreduce
 * starts the moment its lowest layer has written its gradients, while
 * earlier layers are still computing; MPI_Test between layers lets the
 * reduction progress.
 *
 * Each rank scales its gradient by batch_r / total before the sum, so the
 * result is the mean gradient over the global batch even when the last
 * batch of an epoch leaves some ranks fewer (or no) samples. */
#include <stdlib.h>

#include "distributed/dist_internal.h"

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

dist_grad *dist_grad_create(model *m, MPI_Comm comm, double bucket_mb, bool overlap)
{
    dist_grad *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->comm = comm;
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
    free(g->b);
    free(g->req);
    free(g->host);
    free(g);
}

static void dist_grad_start(dist_grad *g, model *m, int k, float factor, double *comm_s)
{
    const dist_bucket *b = &g->b[k];
    float *p = m->grads + b->lo;
    m->be->scale(m->be, b->hi - b->lo, factor, p);
    if (k == 0)
        dist_heartbeat_arrive();
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Iallreduce(MPI_IN_PLACE, p, (int)(b->hi - b->lo), MPI_FLOAT, MPI_SUM, g->comm,
                            &g->req[k]));
    *comm_s += MPI_Wtime() - t0;
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
    if (o->next > 0) {
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
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Waitall(g->n, g->req, MPI_STATUSES_IGNORE));
    *comm_s += MPI_Wtime() - t0;
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
    if (g->host)
        m->be->upload(m->be, m->grads, g->host, m->n_params);
}
