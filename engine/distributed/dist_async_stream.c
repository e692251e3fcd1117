/* dist_async_stream.c — an asynchronous worker's epochs, read from the dataset
 * files. Worker w of W trains in epoch e on positions [n w / W,
 * n (w + 1) / W) of the global permutation of epoch e, the averaging
 * trainer's slicing of the same permutation the synchronous trainers use
 * (dist_sync_data.c), so every epoch the workers' slices partition the train
 * part whatever W is. Those workers must never wait on each other, so
 * instead of swapping samples with the other ranks (a collective) each
 * reads its slice straight from the files: the slice's records, sorted,
 * through dataset_load_rows (one pass over each file: a gzipped IDX file
 * is inflated once through, keeping only those records; a plain one is
 * read by seeking). A thread reads epoch e + 1 while epoch e trains
 * (double buffering), so a worker waits only when a read is slower than
 * its epoch.
 *
 * Memory: two slices of about n / W samples (the one training and the
 * one being read). Byte-valued data (IDX, CIFAR-10, synthetic) is kept
 * as bytes, and each batch is converted and scaled when it is loaded
 * (dataset_apply_scaling on the batch: the arithmetic of the synchronous
 * trainers), so the two slices hold half of what one slice of floats
 * would; CSV slices are floats, scaled when read.
 *
 * The read thread calls no MPI (MPI_THREAD_FUNNELED): a failed read
 * leaves its message, and the worker ends the job with it (dist_die,
 * naming the rank) when it takes that epoch. */
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "distributed/dist_async_stream.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_sync_data.h"
#include "distributed/dist_watchdog.h"

/* One epoch's samples of this worker. */
typedef struct dist_slice {
    int epoch;              /* -1: empty */
    long m;                 /* samples */
    int64_t *rows;          /* m train records, ascending: sample i is rows[i] */
    int64_t *order;         /* consumption order: the j-th sample of the
                               slice trained is sample order[j] */
    uint8_t *bytes;         /* byte data: m x features values (else in d.x) */
    dataset d;              /* y; x (scaled) unless bytes */
} dist_slice;

struct dist_stream {
    const dist_ctx *c;      /* read-only from the thread: spec, roots, layout */
    long lo, hi;            /* this worker's positions of each permutation */
    long features;
    bool use_bytes;
    bool scaled;            /* the scaling statistics below are set */
    double *mean, *m2;      /* standard scaling: the global statistics */
    dataset_scaling_stats st;
    dist_slice cur, next;
    pthread_t thread;
    bool reading;           /* the thread is reading `next` */
    int rc;                 /* the thread's result */
    char err[1024];
    dataset batch;          /* byte data: the current batch as scaled floats */
    int64_t *iota;          /* 0, 1, ... batch_size - 1 */
    uint64_t hash;          /* the epoch's records so far (dist_stream_batch) */
    double waited_s;        /* training waited for reads */
    double read_cpu_s;      /* CPU time the reads took (the thread's) */
};

static void dist_slice_free(dist_slice *s)
{
    free(s->rows);
    free(s->order);
    free(s->bytes);
    dataset_free(&s->d);
    memset(s, 0, sizeof *s);
    s->epoch = -1;
}

/* The records of epoch e's slice: sorted (the order the files are read
 * in) and the consumption order over them. */
static int dist_slice_plan(const dist_stream *s, int epoch, dist_slice *out, char *err,
                           size_t errlen)
{
    const dist_ctx *c = s->c;
    long n = c->n_train, m = s->hi - s->lo;
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    int64_t *at = malloc((size_t)n * sizeof *at);
    out->rows = malloc((size_t)(m > 0 ? m : 1) * sizeof *out->rows);
    out->order = malloc((size_t)(m > 0 ? m : 1) * sizeof *out->order);
    if (!perm || !at || !out->rows || !out->order) {
        free(perm);
        free(at);
        snprintf(err, errlen, "out of memory for epoch %d's sample order", epoch + 1);
        return -1;
    }
    if (c->spec->data.shuffle) {
        dataset_epoch_permutation(n, c->spec->training.seed, epoch, perm);
    } else {
        for (long i = 0; i < n; i++)
            perm[i] = i;
    }
    for (long g = 0; g < n; g++)
        at[g] = -1;
    for (long j = 0; j < m; j++)
        at[perm[s->lo + j]] = j;
    long i = 0;
    for (long g = 0; g < n; g++) {
        if (at[g] < 0)
            continue;
        out->rows[i] = g;
        out->order[at[g]] = i;
        i++;
    }
    out->m = m;
    out->epoch = epoch;
    free(perm);
    free(at);
    return 0;
}

/* Plan and read epoch e's slice into out; scale it when it is floats and
 * the statistics are known. Called on the read thread: no MPI. */
static int dist_slice_read(const dist_stream *s, int epoch, dist_slice *out, char *err,
                           size_t errlen)
{
    const dist_ctx *c = s->c;
    const job_spec *sp = c->spec;
    if (dist_slice_plan(s, epoch, out, err, errlen) != 0)
        return -1;
    if (s->use_bytes) {
        out->bytes = malloc((size_t)(out->m > 0 ? out->m : 1) * (size_t)s->features);
        if (!out->bytes) {
            snprintf(err, errlen, "out of memory for %ld training samples", out->m);
            return -1;
        }
    }
    if (dataset_load_rows(&sp->data, &sp->input, &c->opt->roots, sp->training.seed, &c->lay,
                          out->rows, out->m, out->bytes, &out->d, err, errlen) != 0)
        return -1;
    if (s->use_bytes || !s->scaled)
        return 0;
    dataset none = {0};
    return dataset_apply_scaling(&sp->data, &s->st, &out->d, &none, &none, err, errlen);
}

static double dist_stream_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *dist_stream_main(void *arg)
{
    dist_stream *s = arg;
    double t0 = dist_stream_cpu_s();
    s->rc = dist_slice_read(s, s->next.epoch, &s->next, s->err, sizeof s->err);
    s->read_cpu_s += dist_stream_cpu_s() - t0;
    return NULL;
}

dist_stream *dist_stream_open(const dist_ctx *c, long lo, long hi, char *err, size_t errlen)
{
    const job_spec *sp = c->spec;
    dist_stream *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->c = c;
    s->lo = lo;
    s->hi = hi;
    s->features = spec_shape_size(&sp->input);
    s->use_bytes = dataset_byte_valued(&sp->data);
    s->cur.epoch = s->next.epoch = -1;
    long B = sp->training.batch_size;
    s->iota = malloc((size_t)B * sizeof *s->iota);
    if (!s->iota) {
        snprintf(err, errlen, "out of memory");
        free(s);
        return NULL;
    }
    for (long i = 0; i < B; i++)
        s->iota[i] = i;
    if (dist_slice_read(s, 0, &s->cur, err, errlen) != 0) {
        dist_stream_close(s);
        return NULL;
    }
    return s;
}

void dist_stream_close(dist_stream *s)
{
    if (!s)
        return;
    if (s->reading)
        pthread_join(s->thread, NULL);
    dist_slice_free(&s->cur);
    dist_slice_free(&s->next);
    dataset_free(&s->batch);
    free(s->iota);
    free(s->mean);
    free(s->m2);
    free(s);
}

const dataset *dist_stream_first(const dist_stream *s)
{
    return &s->cur.d;
}

/* Visit the epoch-0 slice as float rows, a block at a time. */
static void dist_stream_blocks(const dist_stream *s, void (*fn)(const dataset *, void *),
                               void *arg)
{
    if (!s->use_bytes) {
        fn(&s->cur.d, arg);
        return;
    }
    long f = s->features, per = 256;
    dataset blk = s->cur.d;
    blk.shift = blk.factor = NULL;
    blk.y = NULL;
    blk.x = malloc((size_t)per * (size_t)f * sizeof(float));
    if (!blk.x)
        dist_die("out of memory for the scaling statistics");
    for (long i = 0; i < s->cur.m; i += per) {
        blk.n = s->cur.m - i < per ? s->cur.m - i : per;
        const uint8_t *b = s->cur.bytes + (size_t)i * (size_t)f;
        for (long k = 0; k < blk.n * f; k++)
            blk.x[k] = (float)b[k];
        fn(&blk, arg);
    }
    free(blk.x);
}

static void dist_stream_sum_fn(const dataset *d, void *arg)
{
    dataset_stats_sum(d, arg);
}

typedef struct {
    const double *mean;
    double *m2;
} dist_m2_arg;

static void dist_stream_m2_fn(const dataset *d, void *arg)
{
    dist_m2_arg *a = arg;
    dataset_stats_m2(d, a->mean, a->m2);
}

static void dist_stream_max_fn(const dataset *d, void *arg)
{
    float *m = arg, v = dataset_stats_max_abs(d);
    *m = v > *m ? v : *m;
}

void dist_stream_stats_sum(const dist_stream *s, double *sum)
{
    dist_stream_blocks(s, dist_stream_sum_fn, sum);
}

void dist_stream_stats_m2(const dist_stream *s, const double *mean, double *m2)
{
    dist_m2_arg a = {mean, m2};
    dist_stream_blocks(s, dist_stream_m2_fn, &a);
}

float dist_stream_stats_max_abs(const dist_stream *s)
{
    float m = 0.0f;
    dist_stream_blocks(s, dist_stream_max_fn, &m);
    return m;
}

int dist_stream_set_scaling(dist_stream *s, const dataset_scaling_stats *st, char *err,
                            size_t errlen)
{
    long f = s->features;
    s->st = *st;
    if (st->mean) {
        s->mean = malloc((size_t)f * sizeof *s->mean);
        s->m2 = malloc((size_t)f * sizeof *s->m2);
        if (!s->mean || !s->m2) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(s->mean, st->mean, (size_t)f * sizeof *s->mean);
        memcpy(s->m2, st->m2, (size_t)f * sizeof *s->m2);
        s->st.mean = s->mean;
        s->st.m2 = s->m2;
    }
    s->scaled = true;
    long B = s->c->spec->training.batch_size;
    if (s->use_bytes) {
        dataset *bt = &s->batch;
        bt->x = malloc((size_t)B * (size_t)f * sizeof(float));
        bt->y = malloc((size_t)B * sizeof(int32_t));
        if (!bt->x || !bt->y) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        bt->features = f;
        bt->shape = s->cur.d.shape;
        bt->num_classes = s->cur.d.num_classes;
        return 0;
    }
    dataset none = {0};
    return dataset_apply_scaling(&s->c->spec->data, &s->st, &s->cur.d, &none, &none, err,
                                 errlen);
}

/* Start reading epoch e into next. */
static void dist_stream_start(dist_stream *s, int epoch)
{
    s->next.epoch = epoch;
    s->rc = 0;
    s->err[0] = 0;
    if (pthread_create(&s->thread, NULL, dist_stream_main, s) != 0)
        dist_die("cannot start the thread that reads epoch %d's samples", epoch + 1);
    s->reading = true;
}

void dist_stream_epoch(dist_stream *s, int epoch)
{
    const job_spec *sp = s->c->spec;
    s->hash = DIST_ORDER_HASH_INIT;
    /* Without shuffling every epoch's slice is the same records in the
     * same order: the first one read serves them all. */
    if (!sp->data.shuffle && s->cur.epoch >= 0) {
        s->cur.epoch = epoch;
        return;
    }
    if (s->cur.epoch == epoch)
        goto prefetch;
    if (!s->reading || s->next.epoch != epoch) {
        /* A resumed run starts elsewhere than the slice read at start-up. */
        if (s->reading) {
            pthread_join(s->thread, NULL);
            s->reading = false;
            dist_slice_free(&s->next);
        }
        dist_stream_start(s, epoch);
    }
    dist_watchdog_tick("reading this epoch's training samples from the dataset files");
    double t0 = MPI_Wtime();
    pthread_join(s->thread, NULL);
    s->waited_s += MPI_Wtime() - t0;
    s->reading = false;
    if (s->rc != 0)
        dist_die("%s", s->err);
    dist_slice_free(&s->cur);
    s->cur = s->next;
    memset(&s->next, 0, sizeof s->next);
    s->next.epoch = -1;
    dist_watchdog_tick("training");
prefetch:
    if (epoch + 1 < sp->training.epochs)
        dist_stream_start(s, epoch + 1);
}

const int64_t *dist_stream_batch(dist_stream *s, long first, int b, const dataset **data)
{
    const int64_t *order = s->cur.order + (first - s->lo);
    for (int r = 0; r < b; r++)
        s->hash = dist_order_hash(s->hash, s->cur.rows[order[r]]);
    if (!s->use_bytes) {
        *data = &s->cur.d;
        return order;
    }
    long f = s->features;
    dataset *bt = &s->batch;
    for (int r = 0; r < b; r++) {
        const uint8_t *src = s->cur.bytes + (size_t)order[r] * (size_t)f;
        float *dst = bt->x + (size_t)r * (size_t)f;
        for (long k = 0; k < f; k++)
            dst[k] = (float)src[k];
        bt->y[r] = s->cur.d.y[order[r]];
    }
    bt->n = b;
    char err[512];
    dataset none = {0};
    if (dataset_apply_scaling(&s->c->spec->data, &s->st, bt, &none, &none, err, sizeof err) != 0)
        dist_die("%s", err);
    free(bt->shift);
    free(bt->factor);
    bt->shift = bt->factor = NULL;
    *data = bt;
    return s->iota;
}

double dist_stream_waited(const dist_stream *s)
{
    return s->waited_s;
}

double dist_stream_read_cpu(const dist_stream *s)
{
    return s->reading ? 0.0 : s->read_cpu_s;
}

uint64_t dist_stream_hash(const dist_stream *s)
{
    return s->hash;
}

long dist_stream_held(const dist_stream *s)
{
    long m = s->hi - s->lo;
    return s->c->spec->data.shuffle && s->c->spec->training.epochs > 1 ? 2 * m : m;
}
