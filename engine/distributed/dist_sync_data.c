/* dist_sync_data.c — each rank's data in a distributed run. The T ranks of the
 * synchronous trainers (allreduce, averaging) each load one contiguous
 * block of the train part, [n k / T, n (k + 1) / T) for the k-th of T.
 * The scaling statistics are those of the whole train part, combined from
 * per-block sums (MPI_Allreduce), so every rank scales as one process
 * loading everything would.
 *
 * Every epoch each rank computes the global permutation (the same for any
 * rank count). Which positions of it each rank consumes at each step is
 * the trainer's slicing (dist_data_span), so every rank knows who needs
 * which sample when, and who holds it. The epoch is cut into windows of
 * win_steps steps; at the first step of a window the ranks swap that
 * window's samples with MPI_Alltoallv into a window buffer, and the
 * trainer's batches come from it in consumption order. Memory per training
 * rank: its block (n/T samples) plus a window (PUNCH_DIST_EXCHANGE_MB,
 * default 8 MiB, received, and a send buffer of about T windows at most),
 * not the whole set.
 *
 * Ensemble members train on the whole set, each in its own order: they
 * hold blocks too, know every member's permutation, and fetch all of theirs
 * window by window. Ranks that need the whole train part (averaging with
 * PUNCH_DIST_SHARDING=replicate, a single training rank,
 * PUNCH_DIST_WHOLE_DATA=1) load all of it and exchange nothing.
 *
 * The workers of the asynchronous trainers follow the same global
 * permutation, worker k taking positions [n k / W, n (k + 1) / W) of it
 * each epoch (averaging's slicing), but exchange nothing: an exchange is
 * a rendezvous of all workers, and those workers must never wait on each
 * other (a slow or stopped worker would stall the rest, and the server
 * would see the wrong worker fall silent). Each reads its slice of every
 * epoch straight from the dataset files instead, a thread reading the
 * next epoch's while this one trains (dist_async_stream.c). The scaling
 * statistics are combined once at start-up from the workers' epoch-1
 * slices (which partition the train part). Their parameter server loads
 * no training data.
 *
 * Validation and test: the synchronous trainers evaluate each rank's slice
 * (dist_eval_sharded), so each rank loads only that slice; ensemble
 * members score the mean prediction over whole sets, and the parameter
 * server scores the center alone, so those load them whole; asynchronous
 * workers load none. */
#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_sync_data.h"
#include "distributed/dist_async_stream.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_watchdog.h"

/* The holder (0..T-1) of train record g: the k with
 * floor(n k / T) <= g < floor(n (k + 1) / T). */
static int dist_owner(long g, long n, int T)
{
    return (int)((((int64_t)g + 1) * T + n - 1) / n - 1);
}

static bool dist_data_whole(const dist_ctx *c, int T)
{
    const engine_options *env = &c->opt->env;
    spec_trainer t = c->spec->distributed.trainer;
    return T == 1 || env->whole_data || (t == TRAINER_AVERAGING && env->replicate);
}

/* The positions [*a, *b) of the permutation holder q consumes at step s,
 * as the trainers slice it: allreduce gives holder q the q-th batch_size
 * of every global batch of T * batch_size (dist_sync_allreduce.c); averaging
 * gives holder q batches of its contiguous slice [n q / T, n (q + 1) / T)
 * (dist_sync_replicas.c); ensemble member q takes batches of all of its own
 * permutation (dist_perm). */
static void dist_data_span(const dist_ctx *c, int q, long s, long *a, long *b)
{
    long n = c->n_train, T = c->n_holders, B = c->spec->training.batch_size;
    long lo, hi;
    if (c->spec->distributed.trainer == TRAINER_ALLREDUCE) {
        long first = s * T * B;
        hi = first + T * B < n ? first + T * B : n;
        lo = first + q * B;
    } else if (c->perms) {
        lo = s * B;
        hi = n;
    } else {
        lo = n * q / T + s * B;
        hi = n * (q + 1) / T;
    }
    *a = lo < hi ? lo : hi;
    *b = *a + B < hi ? *a + B : hi;
}

/* Steps holder q takes per epoch (the trainers' count). */
static long dist_data_steps(const dist_ctx *c, int q)
{
    long n = c->n_train, T = c->n_holders, B = c->spec->training.batch_size;
    long cap = c->spec->training.steps_per_epoch, steps;
    if (c->spec->distributed.trainer == TRAINER_ALLREDUCE)
        steps = (n + T * B - 1) / (T * B);
    else if (c->perms)
        steps = (n + B - 1) / B;
    else
        steps = (n * (q + 1) / T - n * q / T + B - 1) / B;
    return cap > 0 && cap < steps ? cap : steps;
}

/* The permutation holder q consumes from: its own for ensemble members
 * (each has its seed), the shared one otherwise. */
static const int64_t *dist_perm(const dist_ctx *c, int q)
{
    return c->perms ? c->perms + (size_t)q * (size_t)c->n_train : c->perm;
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
    if (d->scaling == SCALE_UNIT && !dataset_byte_valued(d)) {
        st.max_abs = !contributes ? 0.0f
                     : c->stream ? dist_stream_stats_max_abs(c->stream)
                                 : dataset_stats_max_abs(&c->train);
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, &st.max_abs, 1, MPI_FLOAT, MPI_MAX, c->comm));
    }
    if (d->scaling == SCALE_STANDARD) {
        mean = calloc((size_t)f + 1, sizeof *mean);
        m2 = calloc((size_t)f + 1, sizeof *m2);
        if (!mean || !m2)
            dist_die("data.scaling: out of memory");
        if (contributes && c->stream)
            dist_stream_stats_sum(c->stream, mean);
        else if (contributes)
            dataset_stats_sum(&c->train, mean);
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, mean, (int)f, MPI_DOUBLE, MPI_SUM, c->comm));
        for (long j = 0; j < f; j++)
            mean[j] /= (double)c->n_train;
        if (contributes && c->stream)
            dist_stream_stats_m2(c->stream, mean, m2);
        else if (contributes)
            dataset_stats_m2(&c->train, mean, m2);
        DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, m2, (int)f, MPI_DOUBLE, MPI_SUM, c->comm));
        st.mean = mean;
        st.m2 = m2;
    }
    char err[1024];
    if (dataset_apply_scaling(d, &st, &c->train, &c->val, &c->test, err, sizeof err) != 0 ||
        (c->stream && dist_stream_set_scaling(c->stream, &st, err, sizeof err) != 0))
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

/* The int32s that travel with a sample in the exchange: its labels (one,
 * or one a step) and, for sequences with lengths, its length. */
static long dist_label_width(const dataset *d)
{
    long steps = d->label_steps > 0 ? d->label_steps : 1;
    return steps + (d->len ? 1 : 0);
}

/* n samples shaped like `like` (labels a step and lengths too). */
static int dist_data_alloc(dataset *d, const dataset *like, long n)
{
    memset(d, 0, sizeof *d);
    size_t f = (size_t)like->features, rows = (size_t)(n > 0 ? n : 1);
    long steps = like->label_steps > 0 ? like->label_steps : 1;
    d->x = malloc(rows * f * sizeof(float) + 1);
    d->y = malloc(rows * (size_t)steps * sizeof(int32_t));
    d->len = like->len ? malloc(rows * sizeof(int32_t)) : NULL;
    if (!d->x || !d->y || (like->len && !d->len)) {
        dataset_free(d);
        return -1;
    }
    d->n = n;
    d->features = like->features;
    d->shape = like->shape;
    d->num_classes = like->num_classes;
    d->label_steps = steps;
    return 0;
}

/* The window: win_steps steps of about PUNCH_DIST_EXCHANGE_MB of samples
 * per rank; its buffer and row map. */
static void dist_data_plan(dist_ctx *c)
{
    double mb = c->opt->env.exchange_mb;
    long B = c->spec->training.batch_size;
    long per = (long)(mb * 1024 * 1024 / ((double)c->train.features * sizeof(float)));
    c->win_steps = per / B > 0 ? per / B : 1;
    c->win_max_steps = 0;
    for (int q = 0; q < c->n_holders; q++) {
        long st = dist_data_steps(c, q);
        c->win_max_steps = st > c->win_max_steps ? st : c->win_max_steps;
    }
    long rows = c->win_steps * B;
    c->rows = malloc((size_t)rows * sizeof *c->rows);
    c->recv_y = malloc((size_t)(rows * dist_label_width(&c->train)) * sizeof *c->recv_y);
    if (!c->rows || !c->recv_y || dist_data_alloc(&c->epoch, &c->train, rows) != 0)
        dist_die("out of memory for the exchange window (%ld samples)", rows);
    /* What the sends of one window can reach: every consumer's window
     * (all of it this rank's when the data is not shuffled), at most the
     * block (once per ensemble member: each wants every sample). */
    long most = c->train.n * (c->perms ? c->n_holders : 1);
    c->send_rows = rows * c->n_holders < most ? rows * c->n_holders : most;
    /* MPI_Alltoallv counts and displacements are ints (of floats). */
    if ((double)(c->send_rows + rows) * (double)c->train.features > (double)INT_MAX)
        dist_die("sample exchange: a window of %ld samples of %ld features exceeds MPI's int "
                 "counts; lower PUNCH_DIST_EXCHANGE_MB", rows, c->train.features);
    long per_epoch = 0;
    for (long st = 0; st < dist_data_steps(c, c->holder); st++) {
        long pa, pb;
        dist_data_span(c, c->holder, st, &pa, &pb);
        per_epoch += pb - pa;
    }
    c->per_epoch = per_epoch;
}

/* data.bucket_by_length: whether this run orders its batches by length
 * (dist_data_order). Asynchronous workers read their slices from the
 * files each epoch and know no other sample's length: not bucketed. */
static bool dist_data_buckets(const dist_ctx *c)
{
    const spec_data *d = &c->spec->data;
    return d->shuffle && d->bucket_by_length && !c->has_server && c->train.shape.rank == 2;
}

/* Every train record's length for the bucketed order: the blocks' lengths
 * gathered over the training ranks (a block without lengths is all T
 * long), or the train part's own when this rank holds all of it; none
 * when no block has lengths. */
static void dist_data_gather_lengths(dist_ctx *c, long lo, long hi)
{
    if (!dist_data_buckets(c))
        return;
    if (c->whole) {
        c->all_len = c->train.len;
        return;
    }
    /* The single trainer buckets when its load has lengths (text windows,
     * all T long, have none): the same rule here, over all the blocks. */
    int has = c->train.len != NULL;
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, &has, 1, MPI_INT, MPI_MAX, c->hcomm));
    if (!has)
        return;
    int T = c->n_holders;
    long n = c->n_train;
    int *counts = malloc((size_t)T * 2 * sizeof *counts);
    int32_t *mine = malloc((size_t)(hi - lo + 1) * sizeof *mine);
    c->all_len_own = malloc((size_t)(n + 1) * sizeof *c->all_len_own);
    if (!counts || !mine || !c->all_len_own || n > INT_MAX)
        dist_die("data.bucket_by_length: out of memory for %ld lengths", n);
    for (long i = 0; i < hi - lo; i++)
        mine[i] = c->train.len ? c->train.len[i] : (int32_t)c->train.shape.dim[0];
    for (int q = 0; q < T; q++) {
        counts[q] = (int)(n * (q + 1) / T - n * q / T);
        counts[T + q] = (int)(n * q / T);
    }
    DIST_MPI(MPI_Allgatherv(mine, (int)(hi - lo), MPI_INT32_T, c->all_len_own, counts,
                            counts + T, MPI_INT32_T, c->hcomm));
    c->all_len = c->all_len_own;
    free(counts);
    free(mine);
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
    c->local = !c->whole && c->has_server;
    long lo = 0, hi = 0;
    if (holder) {
        lo = c->whole ? 0 : c->n_train * k / T;
        hi = c->whole ? c->n_train : c->n_train * (k + 1) / T;
    }
    if (holder && c->local) {
        /* An asynchronous worker holds epoch slices, not a block: train
         * keeps only the samples' shape (and, later, the scaling). */
        c->stream = dist_stream_open(c, lo, hi, err, sizeof err);
        if (!c->stream)
            dist_data_fail(err);
        const dataset *got = dist_stream_first(c->stream);
        c->train.features = got->features;
        c->train.shape = got->shape;
        c->train.num_classes = got->num_classes;
        if (got->t)
            dist_data_fail("data.train: regression targets (float y under training.loss "
                           "\"mse\") need each rank to hold the whole train set: run the "
                           "asynchronous trainer with PUNCH_DIST_WHOLE_DATA=1, or one worker");
    } else {
        dist_data_load_part(c, DATASET_PART_TRAIN, lo, hi, &c->train);
        if (c->train.t && !c->whole)
            dist_data_fail("data.train: regression targets (float y under training.loss "
                           "\"mse\") need each rank to hold the whole train set: set "
                           "PUNCH_DIST_WHOLE_DATA=1, or run one rank");
    }

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
        /* Sharded ensemble members fetch for each other: each knows all
         * the members' permutations. */
        bool all = !c->whole && s->distributed.trainer == TRAINER_ENSEMBLE;
        size_t n_perm = c->local ? 1 : (size_t)c->n_train * (all ? (size_t)T : 1);
        int64_t *p = malloc(n_perm * sizeof *p);
        if (!p)
            dist_die("out of memory for the permutation of %ld samples", c->n_train);
        c->perms = all ? p : NULL;
        c->perm = all ? p + (size_t)k * (size_t)c->n_train : p;
        c->n_holders = T;
        c->holder = k;
        if (!c->whole && !c->local)
            dist_data_plan(c);
        dist_data_gather_lengths(c, lo, hi);
    }
    c->data = c->whole || c->local ? &c->train : &c->epoch;
    c->shard_lo = lo;

    long mine[2] = {c->stream ? dist_stream_held(c->stream) : c->train.n,
                    c->stream ? hi - lo : c->whole ? 0 : c->per_epoch};
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
    free(c->perms ? c->perms : c->perm);
    free(c->all_len_own);
    dist_stream_close(c->stream);
    free(c->rows);
    free(c->send_x);
    free(c->send_y);
    free(c->recv_y);
    free(c->held);
    if (c->hcomm != MPI_COMM_NULL)
        MPI_Comm_free(&c->hcomm);
}

/* What one pass over a window's positions does at each (see
 * dist_data_window_walk). */
typedef struct dist_window_pass {
    dist_ctx *c;
    int T, k;               /* training ranks, this one */
    int *scount, *rcount;   /* count: rows this rank sends to / receives from each */
    int *sdisp, *rdisp;
    int *fill;              /* rows placed so far, per consumer or per owner */
    long at;                /* map: rows of this rank's window mapped so far */
} dist_window_pass;

typedef void (*dist_window_visit)(dist_window_pass *ps, int q, int64_t g);

/* visit(ps, q, g) for every train record g that consumer q takes in the
 * window starting at step s0, in q's consumption order: the one walk the
 * count, pack and map passes below share, so they cannot disagree. */
static void dist_data_window_walk(dist_window_pass *ps, int q, long s0, dist_window_visit visit)
{
    const dist_ctx *c = ps->c;
    long end = s0 + c->win_steps, steps = dist_data_steps(c, q);
    const int64_t *perm = dist_perm(c, q);
    for (long st = s0; st < end && st < steps; st++) {
        long pa, pb;
        dist_data_span(c, q, st, &pa, &pb);
        for (long p = pa; p < pb; p++)
            visit(ps, q, perm[p]);
    }
}

static void dist_window_count(dist_window_pass *ps, int q, int64_t g)
{
    int o = dist_owner(g, ps->c->n_train, ps->T);
    ps->scount[q] += o == ps->k;
    ps->rcount[o] += q == ps->k;
}

/* Pack in each consumer's order; the consumer walks the same order. */
static void dist_window_pack(dist_window_pass *ps, int q, int64_t g)
{
    dist_ctx *c = ps->c;
    if (dist_owner(g, c->n_train, ps->T) != ps->k)
        return;
    long f = c->train.features;
    long row = g - c->shard_lo, at = ps->sdisp[q] + ps->fill[q]++;
    memcpy(c->send_x + at * f, c->train.x + row * f, (size_t)f * sizeof(float));
    long w = dist_label_width(&c->train), steps = c->epoch.label_steps;
    memcpy(c->send_y + at * w, c->train.y + row * steps, (size_t)steps * sizeof(int32_t));
    if (c->train.len)
        c->send_y[at * w + steps] = c->train.len[row];
}

/* The received labels (and lengths) of rows [0, n) into the window. */
static void dist_window_unpack(dist_ctx *c, long n)
{
    long w = dist_label_width(&c->train), steps = c->epoch.label_steps;
    for (long r = 0; r < n; r++) {
        memcpy(c->epoch.y + r * steps, c->recv_y + r * w, (size_t)steps * sizeof(int32_t));
        if (c->epoch.len)
            c->epoch.len[r] = c->recv_y[r * w + steps];
    }
}

static void dist_window_map(dist_window_pass *ps, int q, int64_t g)
{
    (void)q;
    int o = dist_owner(g, ps->c->n_train, ps->T);
    ps->c->rows[ps->at++] = ps->rdisp[o] + ps->fill[o]++;
}

/* Window w: pack what this rank holds for each consumer's steps of the
 * window (in their consumption order), swap, and map this rank's
 * consumption onto the rows received. */
static void dist_data_window(dist_ctx *c, long w)
{
    int T = c->n_holders, k = c->holder;
    long f = c->train.features, s0 = w * c->win_steps;
    int *cnt = calloc((size_t)T * 13, sizeof *cnt);
    if (!cnt)
        dist_die("out of memory");
    int *scount = cnt, *rcount = cnt + T, *sdisp = cnt + 2 * T, *rdisp = cnt + 3 * T;
    int *sxc = cnt + 4 * T, *sxd = cnt + 5 * T, *rxc = cnt + 6 * T, *rxd = cnt + 7 * T;
    int *syc = cnt + 9 * T, *syd = cnt + 10 * T, *ryc = cnt + 11 * T, *ryd = cnt + 12 * T;
    int lw = (int)dist_label_width(&c->train);
    dist_window_pass ps = {.c = c, .T = T, .k = k, .scount = scount, .rcount = rcount,
                           .sdisp = sdisp, .rdisp = rdisp, .fill = cnt + 8 * T};
    for (int q = 0; q < T; q++)
        dist_data_window_walk(&ps, q, s0, dist_window_count);
    for (int q = 1; q < T; q++) {
        sdisp[q] = sdisp[q - 1] + scount[q - 1];
        rdisp[q] = rdisp[q - 1] + rcount[q - 1];
    }
    if (sdisp[T - 1] + scount[T - 1] > c->send_rows)
        dist_die("sample exchange: %d samples to send, room for %ld",
                 sdisp[T - 1] + scount[T - 1], c->send_rows);
    for (int q = 0; q < T; q++) {
        sxc[q] = scount[q] * (int)f;
        sxd[q] = sdisp[q] * (int)f;
        rxc[q] = rcount[q] * (int)f;
        rxd[q] = rdisp[q] * (int)f;
        syc[q] = scount[q] * lw;
        syd[q] = sdisp[q] * lw;
        ryc[q] = rcount[q] * lw;
        ryd[q] = rdisp[q] * lw;
    }
    for (int q = 0; q < T; q++)
        dist_data_window_walk(&ps, q, s0, dist_window_pack);
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Alltoallv(c->send_x, sxc, sxd, MPI_FLOAT, c->epoch.x, rxc, rxd, MPI_FLOAT,
                           c->hcomm));
    DIST_MPI(MPI_Alltoallv(c->send_y, syc, syd, MPI_INT32_T, c->recv_y, ryc, ryd, MPI_INT32_T,
                           c->hcomm));
    c->comm_s += MPI_Wtime() - t0;
    dist_window_unpack(c, rdisp[T - 1] + rcount[T - 1]);
    memset(ps.fill, 0, (size_t)T * sizeof *ps.fill);
    dist_data_window_walk(&ps, k, s0, dist_window_map);
    free(cnt);
}

/* data.bucket_by_length on the permutation, in the units the trainer
 * consumes it: allreduce's global batches (T x batch_size from 0, so the
 * order is the single trainer's at that batch size), an ensemble member's
 * or a replicated averaging replica's batches over all of it, and
 * averaging's batches of each rank's slice. */
static void dist_data_bucket(const dist_ctx *c, unsigned long seed, int epoch, int64_t *perm)
{
    long n = c->n_train, T = c->n_holders, B = c->spec->training.batch_size;
    spec_trainer t = c->spec->distributed.trainer;
    int rc = 0;
    if (t == TRAINER_ALLREDUCE)
        rc = dataset_bucket_order(perm, 0, n, c->all_len, T * B, seed, epoch);
    else if (t == TRAINER_ENSEMBLE || c->opt->env.replicate)
        rc = dataset_bucket_order(perm, 0, n, c->all_len, B, seed, epoch);
    else
        for (long q = 0; q < T && rc == 0; q++)
            rc = dataset_bucket_order(perm, n * q / T, n * (q + 1) / T, c->all_len, B, seed,
                                      epoch);
    if (rc != 0)
        dist_die("data.bucket_by_length: out of memory ordering %ld samples", n);
}

static void dist_data_order(const dist_ctx *c, unsigned long seed, int epoch, int64_t *perm)
{
    long n = c->n_train;
    if (c->spec->data.shuffle) {
        dataset_epoch_permutation(n, seed, epoch, perm);
        if (c->all_len)
            dist_data_bucket(c, seed, epoch, perm);
        return;
    }
    for (long i = 0; i < n; i++)
        perm[i] = i;
}

void dist_data_epoch(dist_ctx *c, unsigned long seed, int epoch)
{
    c->win_next = 0;
    c->order_hash = DIST_ORDER_HASH_INIT;
    if (c->stream) {
        /* The stream's permutation is training.seed's, as this one. */
        dist_stream_epoch(c->stream, epoch);
        return;
    }
    if (!c->perms) {
        dist_data_order(c, seed, epoch, c->perm);
        return;
    }
    /* Member q's seed is training.seed + q (dist_sync_replicas.c). */
    unsigned long base = seed - (unsigned long)c->holder;
    for (int q = 0; q < c->n_holders; q++)
        dist_data_order(c, base + (unsigned long)q, epoch, (int64_t *)dist_perm(c, q));
}

/* Exchange window w (every training rank takes part in every window). */
static void dist_data_exchange(dist_ctx *c, long w)
{
    dist_heartbeat_arrive();
    dist_watchdog_tick("exchanging samples (MPI_Alltoallv)");
    long send = c->send_rows > 0 ? c->send_rows : 1;
    if (!c->send_x) {
        c->send_x = malloc((size_t)send * (size_t)c->train.features * sizeof(float));
        c->send_y = malloc((size_t)(send * dist_label_width(&c->train)) * sizeof(int32_t));
        if (!c->send_x || !c->send_y)
            dist_die("out of memory for the sample exchange (%ld samples)", send);
    }
    dist_data_window(c, w);
    c->win_next = w + 1;
    dist_watchdog_tick("training");
}

const int64_t *dist_data_batch(dist_ctx *c, long step, long first, int batch)
{
    if (c->stream)
        return dist_stream_batch(c->stream, first, batch, &c->data);
    if (c->whole) {
        for (int r = 0; c->has_server && r < batch; r++)
            c->order_hash = dist_order_hash(c->order_hash, c->perm[first + r]);
        return c->perm + first;
    }
    long w = step / c->win_steps;
    while (c->win_next <= w)
        dist_data_exchange(c, c->win_next);
    long pa, pb;
    dist_data_span(c, c->holder, step, &pa, &pb);
    if (batch > 0 && (pa != first || pb - pa != batch))
        dist_die("sample exchange: step %ld takes positions [%ld, %ld) but the plan says "
                 "[%ld, %ld)", step, first, first + batch, pa, pb);
    return c->rows + (step - w * c->win_steps) * c->spec->training.batch_size;
}

uint64_t dist_data_order_hash(const dist_ctx *c)
{
    return c->stream ? dist_stream_hash(c->stream) : c->order_hash;
}

void dist_data_epoch_end(dist_ctx *c)
{
    if (c->whole || c->local)
        return;
    long windows = (c->win_max_steps + c->win_steps - 1) / c->win_steps;
    while (c->win_next < windows)
        dist_data_exchange(c, c->win_next);
    /* The send buffer is a window's worth: give it back between epochs. */
    free(c->send_x);
    free(c->send_y);
    c->send_x = NULL;
    c->send_y = NULL;
}
