/* dist_data.c — each rank's data in a distributed run. The T ranks of the
 * synchronous trainers (allreduce, averaging) each load one contiguous
 * block of the train part, [n*k/T, n*(k+1)/T) for the k-th of T. The scaling statistics are those
 * of the whole train part, combined from per-block sums (MPI_Allreduce),
 * so every rank scales as one process loading everything would.
 *
 * Every epoch each rank computes the global permutation (the same for any
 * rank count), works out which positions of it every rank consumes (the
 * plan: the trainer's slicing, fixed for the run) and which rank holds each
 * sample, and the ranks swap samples with MPI_Alltoallv, a window of
 * positions at a time so the send buffer stays small, into a per-epoch
 * buffer in the order the rank consumes them. The permutation entries of
 * this rank's positions then index that buffer, so the trainers load
 * batches from c->data exactly as from a whole set. Memory per training
 * rank: its block plus the epoch buffer, about 2n/T samples.
 *
 * Ranks that need the whole train part (ensemble members, averaging with
 * PUNCH_DIST_SHARDING=replicate, a single training rank) load all of it and
 * exchange nothing. So do the workers of the asynchronous trainers: an
 * exchange is a rendezvous of all workers every epoch, and those workers
 * must never wait on each other (a slow or stopped worker would stall the
 * rest, and the server would see the wrong worker fall silent); their
 * parameter server loads no training data. Validation and test: the synchronous trainers evaluate
 * each rank's slice (dist_eval_sharded), so each rank loads only that
 * slice; ensemble members score the mean prediction over whole sets, and
 * the parameter server scores the center alone, so those load them whole;
 * asynchronous workers load none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

/* Send buffer bound per exchange round. */
#define DIST_EXCHANGE_BYTES ((size_t)8 << 20)

/* The holder (0..T-1) of train record g: the k with
 * floor(n k / T) <= g < floor(n (k + 1) / T). */
static int dist_owner(long g, long n, int T)
{
    return (int)((((int64_t)g + 1) * T + n - 1) / n - 1);
}

static bool dist_data_whole(const dist_ctx *c, int T)
{
    const char *sharding = getenv("PUNCH_DIST_SHARDING");
    spec_trainer t = c->spec->distributed.trainer;
    return T == 1 || t == TRAINER_ENSEMBLE || c->has_server ||
           (t == TRAINER_AVERAGING && sharding && strcmp(sharding, "replicate") == 0);
}

/* Which holder consumes each position of an epoch's permutation (-1:
 * none), as the trainers slice it: allreduce gives holder k the k-th
 * batch_size of every global batch of T * batch_size (dist_allreduce.c);
 * averaging gives holder k the contiguous slice [n k / T, n (k + 1) / T)
 * (dist_replicas.c); both
 * stop after training.steps_per_epoch steps. */
static void dist_data_consumers(const dist_ctx *c, int T, int32_t *who)
{
    long n = c->n_train, cap = c->spec->training.steps_per_epoch;
    int B = c->spec->training.batch_size;
    if (c->spec->distributed.trainer == TRAINER_ALLREDUCE) {
        long gb = (long)T * B;
        long steps = (n + gb - 1) / gb;
        if (cap > 0 && cap < steps)
            steps = cap;
        for (long p = 0; p < n; p++)
            who[p] = p / gb < steps ? (int32_t)((p % gb) / B) : -1;
        return;
    }
    for (int k = 0; k < T; k++) {
        long lo = n * k / T, hi = n * (k + 1) / T;
        long steps = (hi - lo + B - 1) / B;
        if (cap > 0 && cap < steps)
            steps = cap;
        for (long p = lo; p < hi; p++)
            who[p] = p - lo < steps * B ? k : -1;
    }
}

static void dist_data_fail(const char *err)
{
    dist_die("%s", err);
}

/* Statistics of the whole train part from the blocks; in whole mode only
 * the first holder contributes, so nothing counts twice and the sums are
 * those of one process (adding zeros is exact). */
static void dist_data_scale(dist_ctx *c, bool contributes)
{
    const spec_data *d = &c->spec->data;
    long f = c->train.features;
    dataset_scaling_stats st = {.n = (double)c->n_train};
    double *mean = NULL, *m2 = NULL;
    if (d->scaling == SCALE_UNIT && d->format == DATA_CSV) {
        st.max_abs = contributes ? dataset_stats_max_abs(&c->train) : 0.0f;
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, &st.max_abs, 1, MPI_FLOAT, MPI_MAX, c->comm));
    }
    if (d->scaling == SCALE_STANDARD) {
        mean = calloc((size_t)f + 1, sizeof *mean);
        m2 = calloc((size_t)f + 1, sizeof *m2);
        if (!mean || !m2)
            dist_die("data.scaling: out of memory");
        if (contributes)
            dataset_stats_sum(&c->train, mean);
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, mean, (int)f, MPI_DOUBLE, MPI_SUM, c->comm));
        for (long j = 0; j < f; j++)
            mean[j] /= (double)c->n_train;
        if (contributes)
            dataset_stats_m2(&c->train, mean, m2);
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, m2, (int)f, MPI_DOUBLE, MPI_SUM, c->comm));
        st.mean = mean;
        st.m2 = m2;
    }
    char err[1024];
    if (dataset_apply_scaling(d, &st, &c->train, &c->val, &c->test, err, sizeof err) != 0)
        dist_data_fail(err);
    free(mean);
    free(m2);
}

static void dist_data_load_part(dist_ctx *c, dataset_part part, long lo, long hi,
                                dataset *out)
{
    const job_spec *s = c->spec;
    char err[1024];
    if (dataset_load_part(&s->data, &s->input, &c->opt->roots, s->training.seed, &c->lay, part,
                          lo, hi, out, err, sizeof err) != 0)
        dist_data_fail(err);
}

/* n samples shaped like `like`. */
static int dist_data_alloc(dataset *d, const dataset *like, long n)
{
    memset(d, 0, sizeof *d);
    size_t f = (size_t)like->features;
    d->x = malloc((size_t)(n > 0 ? n : 1) * f * sizeof(float) + 1);
    d->y = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    if (!d->x || !d->y) {
        dataset_free(d);
        return -1;
    }
    d->n = n;
    d->features = like->features;
    d->shape = like->shape;
    d->num_classes = like->num_classes;
    return 0;
}

/* Who consumes what, and this rank's per-epoch buffer. */
static void dist_data_plan(dist_ctx *c, int T, int k)
{
    long n = c->n_train;
    c->who = malloc((size_t)n * sizeof *c->who);
    if (!c->who)
        dist_die("out of memory for the data plan (%ld samples)", n);
    dist_data_consumers(c, T, c->who);
    long mine = 0;
    for (long p = 0; p < n; p++)
        mine += c->who[p] == k;
    if (dist_data_alloc(&c->epoch, &c->train, mine) != 0)
        dist_die("out of memory for this epoch's %ld samples", mine);
}

void dist_data_load(dist_ctx *c)
{
    const job_spec *s = c->spec;
    char err[1024];
    if (dataset_layout_of(&s->data, &s->input, &c->opt->roots, &c->lay, err, sizeof err) != 0)
        dist_data_fail(err);
    c->n_train = c->lay.n_train;
    int first = c->has_server ? 1 : 0, T = c->size - first;
    bool holder = c->rank >= first;
    int k = c->rank - first;
    c->whole = dist_data_whole(c, T);
    long lo = 0, hi = 0;
    if (holder) {
        lo = c->whole ? 0 : c->n_train * k / T;
        hi = c->whole ? c->n_train : c->n_train * (k + 1) / T;
    }
    dist_data_load_part(c, DATASET_PART_TRAIN, lo, hi, &c->train);

    /* Evaluation sets: as dist_eval_sharded slices them, or whole. */
    bool eval_whole = s->distributed.trainer == TRAINER_ENSEMBLE || (c->has_server && !holder);
    bool eval_none = c->has_server && holder;
    long nv = c->lay.n_val, nt = c->lay.n_test;
    long vlo = eval_whole || eval_none ? 0 : nv * c->rank / c->size;
    long vhi = eval_whole ? nv : eval_none ? 0 : nv * (c->rank + 1) / c->size;
    long tlo = eval_whole || eval_none ? 0 : nt * c->rank / c->size;
    long thi = eval_whole ? nt : eval_none ? 0 : nt * (c->rank + 1) / c->size;
    dist_data_load_part(c, DATASET_PART_VAL, vlo, vhi, &c->val);
    dist_data_load_part(c, DATASET_PART_TEST, tlo, thi, &c->test);
    dist_data_scale(c, holder && (!c->whole || k == 0));

    /* Ranks that train: the permutation, and when sharded the plan and
     * the per-epoch buffer, on a communicator of the training ranks. */
    DIST_MPI(MPI_Comm_split(c->comm, holder ? 0 : MPI_UNDEFINED, c->rank, &c->hcomm));
    if (holder) {
        DIST_MPI(MPI_Comm_set_errhandler(c->hcomm, MPI_ERRORS_RETURN));
        c->perm = malloc((size_t)c->n_train * sizeof *c->perm);
        if (!c->perm)
            dist_die("out of memory for the permutation of %ld samples", c->n_train);
        if (!c->whole)
            dist_data_plan(c, T, k);
    }
    c->data = c->whole ? &c->train : &c->epoch;
    c->shard_lo = lo;

    long mine[2] = {c->train.n, c->whole ? 0 : c->epoch.n};
    if (c->rank == 0) {
        c->held = calloc((size_t)c->size * 2, sizeof *c->held);
        if (!c->held)
            dist_die("out of memory");
    }
    DIST_MPI(MPI_Gather(mine, 2, MPI_LONG, c->held, 2, MPI_LONG, 0, c->comm));
    if (c->rank == 0) {
        fprintf(stderr, "data: %ld train samples; per rank held + received per epoch:", c->n_train);
        for (int r = 0; r < c->size; r++)
            fprintf(stderr, " %ld+%ld", c->held[2 * r], c->held[2 * r + 1]);
        fprintf(stderr, "%s\n", c->whole ? " (every training rank holds all)" : "");
    }
}

void dist_data_free(dist_ctx *c)
{
    dataset_free(&c->train);
    dataset_free(&c->val);
    dataset_free(&c->test);
    dataset_free(&c->epoch);
    free(c->perm);
    free(c->who);
    free(c->held);
    if (c->hcomm != MPI_COMM_NULL)
        MPI_Comm_free(&c->hcomm);
}

/* One window [p0, p1) of positions: pack what this rank holds for each
 * consumer, swap, and point this rank's positions at the rows received
 * (from row `base` of the epoch buffer on). Returns the rows received. */
static long dist_data_window(dist_ctx *c, long p0, long p1, long base, float *sx,
                             int32_t *sy, int T, int k, double *comm_s)
{
    long n = c->n_train, f = c->train.features;
    int *cnt = calloc((size_t)T * 8, sizeof *cnt);
    if (!cnt)
        dist_die("out of memory");
    int *scount = cnt, *rcount = cnt + T, *sdisp = cnt + 2 * T, *rdisp = cnt + 3 * T;
    int *sxc = cnt + 4 * T, *sxd = cnt + 5 * T, *rxc = cnt + 6 * T, *rxd = cnt + 7 * T;
    for (long p = p0; p < p1; p++) {
        int q = c->who[p];
        if (q < 0)
            continue;
        int o = dist_owner(c->perm[p], n, T);
        scount[q] += o == k;
        rcount[o] += q == k;
    }
    for (int q = 1; q < T; q++) {
        sdisp[q] = sdisp[q - 1] + scount[q - 1];
        rdisp[q] = rdisp[q - 1] + rcount[q - 1];
    }
    long received = rdisp[T - 1] + rcount[T - 1];
    for (int q = 0; q < T; q++) {
        sxc[q] = scount[q] * (int)f;
        sxd[q] = sdisp[q] * (int)f;
        rxc[q] = rcount[q] * (int)f;
        rxd[q] = rdisp[q] * (int)f;
    }
    /* Pack in position order: the receiver walks the same order. */
    int *fill = calloc((size_t)T, sizeof *fill);
    if (!fill)
        dist_die("out of memory");
    for (long p = p0; p < p1; p++) {
        int q = c->who[p];
        if (q < 0 || dist_owner(c->perm[p], n, T) != k)
            continue;
        long row = c->perm[p] - c->shard_lo, at = sdisp[q] + fill[q]++;
        memcpy(sx + at * f, c->train.x + row * f, (size_t)f * sizeof(float));
        sy[at] = c->train.y[row];
    }
    float *rx = c->epoch.x + base * f;
    int32_t *ry = c->epoch.y + base;
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Alltoallv(sx, sxc, sxd, MPI_FLOAT, rx, rxc, rxd, MPI_FLOAT, c->hcomm));
    DIST_MPI(MPI_Alltoallv(sy, scount, sdisp, MPI_INT32_T, ry, rcount, rdisp, MPI_INT32_T,
                           c->hcomm));
    *comm_s += MPI_Wtime() - t0;
    memset(fill, 0, (size_t)T * sizeof *fill);
    for (long p = p0; p < p1; p++) {
        if (c->who[p] != k)
            continue;
        int o = dist_owner(c->perm[p], n, T);
        c->perm[p] = base + rdisp[o] + fill[o]++;
    }
    free(fill);
    free(cnt);
    return received;
}

void dist_data_epoch(dist_ctx *c, unsigned long seed, int epoch)
{
    long n = c->n_train;
    if (c->spec->data.shuffle) {
        dataset_epoch_permutation(n, seed, epoch, c->perm);
    } else {
        for (long i = 0; i < n; i++)
            c->perm[i] = i;
    }
    if (c->whole)
        return;
    int T, k;
    DIST_MPI(MPI_Comm_size(c->hcomm, &T));
    DIST_MPI(MPI_Comm_rank(c->hcomm, &k));
    long f = c->train.features;
    /* A window of positions holds about window / T of this rank's samples
     * (each sample appears once in the permutation). */
    long per_rank = (long)(DIST_EXCHANGE_BYTES / ((size_t)f * sizeof(float) + 4));
    if (per_rank < 1)
        per_rank = 1;
    long window = per_rank * T;
    /* The send buffer: at most what this rank holds, at most a window. */
    long send_max = c->train.n < window ? c->train.n : window;
    float *sx = malloc((size_t)(send_max > 0 ? send_max : 1) * (size_t)f * sizeof(float));
    int32_t *sy = malloc((size_t)(send_max > 0 ? send_max : 1) * sizeof(int32_t));
    if (!sx || !sy)
        dist_die("out of memory for the sample exchange (%ld samples)", send_max);
    dist_heartbeat_arrive();
    dist_watchdog_tick("exchanging this epoch's samples (MPI_Alltoallv)");
    long base = 0;
    for (long p0 = 0; p0 < n; p0 += window) {
        long p1 = p0 + window < n ? p0 + window : n;
        base += dist_data_window(c, p0, p1, base, sx, sy, T, k, &c->comm_s);
    }
    if (base != c->epoch.n)
        dist_die("sample exchange: received %ld samples, expected %ld", base, c->epoch.n);
    free(sx);
    free(sy);
    dist_watchdog_tick("training");
}
