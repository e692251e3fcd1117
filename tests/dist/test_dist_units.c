/* test_dist_units.c — the pieces of engine/dist that need no peers, in one
 * process (MPI singleton, MPI_COMM_SELF): the gradient exchange scales to
 * the global-batch mean with and without overlap and for an empty shard;
 * checkpoints round-trip bit-exactly and refuse truncated files and other
 * trainers' files; metric sums of given outputs match hand-computed
 * values; the rank shares that weight each rank's gradient give the
 * global-batch mean; the NCCL bucket plan of the device path cuts the
 * gradient buffer exactly where the MPI path does, and driven by
 * model_backward_hooked launches each bucket in order once its gradients
 * are final; a CPU rank never takes the device path; bf16 compression
 * rounds to nearest even, its error feedback keeps the sum over steps
 * within one rounding of the true sum (not K of them), and its exchange
 * carries the rounding into the next step. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "distributed/dist_checkpoint.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_eval.h"
#include "distributed/dist_sync_bf16.h"
#include "distributed/dist_sync_grad.h"
#include "distributed/dist_sync_nccl.h"
#include "cpu/cpu.h"

static const char *JOB =
    "{\"model\": {\"input\": [12], \"layers\": ["
    " {\"type\": \"dense\", \"units\": 7, \"activation\": \"relu\"},"
    " {\"type\": \"batchnorm\"},"
    " {\"type\": \"dense\", \"units\": 5, \"activation\": \"tanh\"},"
    " {\"type\": \"dense\", \"units\": 3, \"activation\": \"softmax\"}]},"
    " \"data\": {\"format\": \"synthetic\", \"num_classes\": 3},"
    " \"training\": {\"batch_size\": 8, \"optimizer\": {\"name\": \"adam\"}},"
    " \"distributed\": {\"trainer\": \"allreduce\", \"workers\": 1}}";

typedef struct fixture {
    job_spec *spec;
    backend *be;
    model *m;
    dataset d;
    int64_t idx[8];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    spec_error serr;
    char err[512];
    f->spec = spec_parse(JOB, strlen(JOB), &serr);
    assert_non_null(f->spec);
    f->be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(f->be);
    f->m = model_create(f->spec, f->be, 8, err, sizeof err);
    assert_non_null(f->m);
    assert_int_equal(model_init_params(f->m, 7, err, sizeof err), 0);
    assert_int_equal(dataset_synthetic(&f->spec->input, 8, 3, 5, &f->d, err, sizeof err), 0);
    for (int i = 0; i < 8; i++)
        f->idx[i] = i;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    model_free(f->m);
    f->be->destroy(f->be);
    dataset_free(&f->d);
    spec_free(f->spec);
    free(f);
    return 0;
}

/* Forward + loss on the fixture's batch, leaving the loss gradient ready. */
static void forward(fixture *f)
{
    char err[256];
    assert_int_equal(model_load_batch(f->m, &f->d, f->idx, 8, err, sizeof err), 0);
    model_forward(f->m, 8, true, 0);
    model_loss(f->m, 8, NULL);
}

/* The gradient of one plain forward + model_backward on the batch (heap;
 * free it). */
static float *reference_grads(fixture *f)
{
    long n = f->m->n_params;
    float *ref = malloc((size_t)n * sizeof *ref);
    assert_non_null(ref);
    forward(f);
    model_backward(f->m, 8);
    memcpy(ref, f->m->grads, (size_t)n * sizeof *ref);
    return ref;
}

static void check_exchange(void **state, bool overlap, double bucket_mb)
{
    fixture *f = *state;
    long n = f->m->n_params;
    float *ref = reference_grads(f);

    dist_grad *g = dist_grad_create(f->m, MPI_COMM_SELF, bucket_mb, overlap,
                                    SPEC_COMPRESSION_NONE);
    assert_non_null(g);
    double comm = 0.0;
    forward(f);
    /* This rank holds 8 of a global batch of 32: a quarter of the mean. */
    dist_grad_backward_allreduce(g, f->m, 8, 32, &comm);
    for (long i = 0; i < n; i++)
        assert_true(fabsf(f->m->grads[i] - 0.25f * ref[i]) <= 1e-6f * (1 + fabsf(ref[i])));
    /* An empty shard contributes zeros. */
    dist_grad_backward_allreduce(g, f->m, 0, 32, &comm);
    for (long i = 0; i < n; i++)
        assert_true(f->m->grads[i] == 0.0f);
    assert_true(comm >= 0.0);
    dist_grad_free(g);
    free(ref);
}

static void test_exchange_blocking_one_bucket(void **state)
{
    check_exchange(state, false, 4.0);
}

static void test_exchange_blocking_many_buckets(void **state)
{
    /* 1e-5 MiB = 2 floats: every layer becomes a bucket of its own. */
    check_exchange(state, false, 1e-5);
}

static void test_exchange_overlapped(void **state)
{
    check_exchange(state, true, 1e-5);
}

/* bf16's half-ulp relative to the value: the most one rounding moves it. */
#define BF16_HALF_ULP (1.0 / 256.0)

static void test_bf16_rounding(void **state)
{
    (void)state;
    assert_int_equal(dist_bf16_round(1.0f), 0x3f80);
    assert_true(dist_bf16_float(0x3f80) == 1.0f);
    assert_int_equal(dist_bf16_round(-2.0f), 0xc000);
    /* Halfway cases go to the even neighbour; past halfway, up. */
    assert_int_equal(dist_bf16_round(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(dist_bf16_round(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(dist_bf16_round(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    assert_int_equal(dist_bf16_round(INFINITY), 0x7f80);
    assert_true(isnan(dist_bf16_float(dist_bf16_round(NAN))));
    assert_true(dist_bf16_float(dist_bf16_round(1e-30f)) > 0.0f);
    /* The op sums in fp32 and rounds once. */
    MPI_Op op;
    assert_int_equal(dist_bf16_op_create(&op), MPI_SUCCESS);
    uint16_t a[3] = {dist_bf16_round(1.0f), dist_bf16_round(0x1p-8f), dist_bf16_round(-3.5f)};
    uint16_t b[3] = {dist_bf16_round(0x1p-8f), dist_bf16_round(1.0f), dist_bf16_round(1.25f)};
    assert_int_equal(MPI_Reduce_local(a, b, 3, MPI_UINT16_T, op), MPI_SUCCESS);
    assert_true(dist_bf16_float(b[0]) == 1.0f);     /* 1 + 2^-8: a tie, to even */
    assert_true(dist_bf16_float(b[1]) == 1.0f);
    assert_true(dist_bf16_float(b[2]) == -2.25f);
    MPI_Op_free(&op);
}

/* K steps of gradients, some of them values bf16 always rounds the same
 * way (1 + 3 * 2^-10 rounds down to 1): with error feedback the sent values
 * sum to the true sum within one rounding of max|g|; without it (residual
 * cleared each step) the error grows with K, beyond that bound. */
static void test_bf16_error_feedback(void **state)
{
    (void)state;
    enum { N = 64, K = 1000 };
    float g[N], residual[N] = {0}, fresh[N];
    uint16_t q[N];
    double sent[N] = {0}, sent_plain[N] = {0}, truth[N] = {0}, max_g = 0.0;
    uint32_t seed = 12345;
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < N; i++) {
            seed = seed * 1664525u + 1013904223u;
            double r = (double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0;
            g[i] = i % 2 ? (float)(r * 0.01 * (i + 1)) : 1.0f + 3 * 0x1p-10f;
            truth[i] += g[i];
            if (fabs(g[i]) > max_g)
                max_g = fabs(g[i]);
        }
        dist_bf16_quantize(g, 1.0f, residual, q, N);
        for (int i = 0; i < N; i++)
            sent[i] += dist_bf16_float(q[i]);
        memset(fresh, 0, sizeof fresh);
        dist_bf16_quantize(g, 1.0f, fresh, q, N);
        for (int i = 0; i < N; i++)
            sent_plain[i] += dist_bf16_float(q[i]);
    }
    /* Plus the fp32 rounding of g + residual, once per step. */
    double bound = BF16_HALF_ULP * max_g * 1.01 + K * 0x1p-24 * max_g;
    double worst = 0.0, worst_plain = 0.0;
    for (int i = 0; i < N; i++) {
        worst = fmax(worst, fabs(sent[i] - truth[i]));
        worst_plain = fmax(worst_plain, fabs(sent_plain[i] - truth[i]));
    }
    assert_true(worst <= bound);
    assert_true(worst_plain > 100 * bound);
}

/* The exchange on one rank with bf16: the result is the scaled gradient
 * within one rounding, and an empty step after it sends what that rounding
 * left behind, so the two steps together are within fp32 noise of it. */
static void check_exchange_bf16(void **state, bool overlap)
{
    fixture *f = *state;
    long n = f->m->n_params;
    float *ref = reference_grads(f);
    float *first = malloc((size_t)n * sizeof *first);
    assert_non_null(first);
    dist_grad *g = dist_grad_create(f->m, MPI_COMM_SELF, 1e-5, overlap, SPEC_COMPRESSION_BF16);
    assert_non_null(g);
    double comm = 0.0;
    forward(f);
    dist_grad_backward_allreduce(g, f->m, 8, 32, &comm);
    memcpy(first, f->m->grads, (size_t)n * sizeof *first);
    int inexact = 0;
    for (long i = 0; i < n; i++) {
        float want = 0.25f * ref[i];
        assert_true(fabsf(first[i] - want) <= BF16_HALF_ULP * fabsf(want) + 1e-30f);
        inexact += first[i] != want;
    }
    assert_true(inexact > 0);
    dist_grad_backward_allreduce(g, f->m, 0, 32, &comm);
    for (long i = 0; i < n; i++) {
        float want = 0.25f * ref[i];
        assert_true(fabsf(f->m->grads[i]) <= BF16_HALF_ULP * fabsf(want) + 1e-30f);
        float both = first[i] + f->m->grads[i];
        /* What is left is the rounding of the residual: 2^-8 of 2^-8. */
        assert_true(fabsf(both - want) <= 1.1f * 0x1p-16f * fabsf(want) + 1e-30f);
    }
    dist_grad_free(g);
    free(first);
    free(ref);
}

static void test_exchange_bf16_blocking(void **state)
{
    check_exchange_bf16(state, false);
}

static void test_exchange_bf16_overlapped(void **state)
{
    check_exchange_bf16(state, true);
}

/* Per-sample "gradients" g_j of a global batch split over ranks as the
 * allreduce trainer splits it (B each, the last rank short, one empty):
 * sum_r share_r * mean_r must be the mean over all samples. */
static void test_rank_share(void **state)
{
    (void)state;
    enum { RANKS = 4, B = 32 };
    const int batch[RANKS] = {B, B, 6, 0};
    long total = 0;
    for (int r = 0; r < RANKS; r++)
        total += batch[r];
    double global = 0.0, weighted = 0.0, shares = 0.0;
    int j = 0;
    for (int r = 0; r < RANKS; r++) {
        double sum = 0.0;
        for (int i = 0; i < batch[r]; i++, j++) {
            double g = sin(0.7 * j) + 0.01 * j;
            sum += g;
            global += g;
        }
        float share = dist_rank_share(batch[r], total);
        assert_true(share >= 0.0f && share <= 1.0f);
        shares += share;
        if (batch[r] > 0)
            weighted += share * (sum / batch[r]);
        else
            assert_true(share == 0.0f);
    }
    global /= (double)total;
    assert_true(fabs(shares - 1.0) < 1e-6);
    assert_true(fabs(weighted - global) < 1e-6 * (1.0 + fabs(global)));
    /* A step with no samples anywhere scales by 0, not NaN. */
    assert_true(dist_rank_share(0, 0) == 0.0f);
    assert_true(dist_rank_share(B, B) == 1.0f);
}

/* The NCCL plan (gpu_bucket.h on dist_param_spans) and the MPI plan
 * (dist_sync_grad.c) must cut the same buckets in the same launch order: the
 * two paths are meant to be the same computation. Sizes chosen for the
 * fixture's layers (91, 14, 40, 18 floats; with each tensor padded to a
 * multiple of 64 floats, slices of 192, 128, 128, 128): one bucket, one
 * per layer, and a mix (256 floats: the two last dense layers share one). */
static void test_gpu_plan_matches_mpi(void **state)
{
    fixture *f = *state;
    const model *m = f->m;
    gpu_param_span spans[16];
    assert_true(m->n_layers <= 16);
    dist_param_spans(m, spans);
    long covered = 0;
    for (int i = 0; i < m->n_layers; i++) {
        if (spans[i].count == 0)
            continue;
        assert_int_equal(spans[i].offset, covered);
        covered += spans[i].count;
    }
    assert_int_equal(covered, m->n_params);

    const double sizes[] = {4.0, 1e-5, 256.0 * 4 / (1024.0 * 1024.0)};
    const int expect_buckets[] = {1, 4, 3};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        gpu_bucket_plan plan;
        char err[256];
        assert_true(dist_gpu_plan(m, sizes[t], &plan, err, sizeof err));
        dist_grad *g = dist_grad_create(f->m, MPI_COMM_SELF, sizes[t], false,
                                        SPEC_COMPRESSION_NONE);
        assert_non_null(g);
        assert_int_equal(plan.n_buckets, expect_buckets[t]);
        assert_int_equal(dist_grad_buckets(g), plan.n_buckets);
        for (int k = 0; k < plan.n_buckets; k++) {
            long lo, hi;
            dist_grad_bucket(g, k, &lo, &hi);
            assert_int_equal(plan.buckets[k].offset, lo);
            assert_int_equal(plan.buckets[k].offset + plan.buckets[k].count, hi);
        }
        /* Every layer with parameters is in the bucket that holds its
         * span; the others in none. */
        for (int i = 0; i < m->n_layers; i++) {
            int b = plan.bucket_of[i];
            if (spans[i].count == 0) {
                assert_int_equal(b, -1);
                continue;
            }
            assert_true(b >= 0 && b < plan.n_buckets);
            assert_true(spans[i].offset >= plan.buckets[b].offset);
            assert_true(spans[i].offset + spans[i].count <=
                        plan.buckets[b].offset + plan.buckets[b].count);
        }
        dist_grad_free(g);
        gpu_bucket_plan_free(&plan);
    }
}

/* The device path's overlap, driven on the CPU: model_backward_hooked
 * reports layers, the NCCL plan's bookkeeping says which buckets may go
 * out. Every bucket must go out exactly once, in plan order, during the
 * backward pass, and when it does its gradients must already be final. */
typedef struct launch_log {
    gpu_bucket_progress p;
    const gpu_bucket_plan *plan;
    const model *m;
    const float *final;
    int launched;
} launch_log;

static void launch_hook(void *ctx, int i)
{
    launch_log *log = ctx;
    gpu_bucket_progress_layer_done(&log->p, i);
    for (int k; (k = gpu_bucket_progress_next(&log->p, false)) >= 0;) {
        assert_int_equal(k, log->launched);
        const gpu_bucket *b = &log->plan->buckets[k];
        assert_memory_equal(log->m->grads + b->offset, log->final + b->offset,
                            (size_t)b->count * sizeof(float));
        log->launched++;
    }
}

static void test_overlap_launches_final_buckets(void **state)
{
    fixture *f = *state;
    float *final = reference_grads(f);
    const double sizes[] = {4.0, 1e-5, 256.0 * 4 / (1024.0 * 1024.0)};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        gpu_bucket_plan plan;
        char err[256];
        assert_true(dist_gpu_plan(f->m, sizes[t], &plan, err, sizeof err));
        launch_log log = {.plan = &plan, .m = f->m, .final = final};
        assert_true(gpu_bucket_progress_begin(&log.p, &plan));
        /* Stale gradients: a bucket launched early would be caught. Only
         * the tensors: the alignment padding is zero and never written. */
        for (int i = 0; i < f->m->n_layers; i++) {
            const layer *l = &f->m->layers[i];
            for (int k = 0; k < l->n_tensors; k++)
                if (!l->tensors[k].is_state)
                    for (long j = 0; j < layer_tensor_size(&l->tensors[k]); j++)
                        l->grads[l->tensors[k].offset + j] = -1e30f;
        }
        forward(f);
        model_backward_hooked(f->m, 8, launch_hook, &log);
        assert_int_equal(log.launched, plan.n_buckets);
        assert_int_equal(gpu_bucket_progress_next(&log.p, true), -1);
        gpu_bucket_progress_free(&log.p);
        gpu_bucket_plan_free(&plan);
    }
    free(final);
}

static dist_ctx make_ctx(fixture *f, const dist_options *opt)
{
    dist_ctx c = {.spec = f->spec, .opt = opt, .comm = MPI_COMM_SELF, .rank = 0, .size = 1,
                  .workers = 1, .be = f->be, .m = f->m};
    return c;
}

/* A rank on the CPU backend keeps the MPI path, in every build. */
static void test_cpu_rank_stays_on_mpi(void **state)
{
    fixture *f = *state;
    dist_options opt = {0};
    engine_options_defaults(&opt.env);
    dist_ctx c = make_ctx(f, &opt);
    assert_false(dist_gpu_wanted(&c));
}

static void test_checkpoint_round_trip(void **state)
{
    fixture *f = *state;
    char dir[] = "/tmp/punch-dist-ckpt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[600];
    snprintf(sub, sizeof sub, "%s/checkpoints", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    dist_options opt = {.out_dir = dir};
    engine_options_defaults(&opt.env);
    dist_ctx c = make_ctx(f, &opt);
    long np = f->m->n_params, ns = f->m->n_state, no = 11;
    assert_true(ns > 0);
    float *buf = malloc((size_t)(2 * (np + ns + no)) * sizeof *buf);
    for (long i = 0; i < 2 * (np + ns + no); i++)
        buf[i] = (float)i * 0.5f - 3.0f;
    dist_replica reps[2] = {{buf, buf + np, buf + np + ns},
                            {buf + np + ns + no, buf + 2 * np + ns + no,
                             buf + 2 * np + 2 * ns + no}};
    long commits[1] = {42};
    dist_ckpt_meta meta = {.epochs_done = 3, .global_step = 1234, .commits = 42,
                           .staleness_sum = 6.5, .n_replicas = 1, .n_workers = 1,
                           .worker_commits = commits};
    meta.sched.lr = 0.125;
    char err[1024];
    assert_int_equal(dist_ckpt_save(&c, &meta, reps, no, err, sizeof err), 0);

    dist_ckpt_meta back;
    dist_replica *got = NULL;
    assert_int_equal(dist_ckpt_load(&c, &back, &got, no, err, sizeof err), 0);
    assert_int_equal(back.epochs_done, 3);
    assert_int_equal(back.global_step, 1234);
    assert_int_equal(back.commits, 42);
    assert_int_equal(back.worker_commits[0], 42);
    assert_true(back.staleness_sum == 6.5 && back.sched.lr == 0.125);
    assert_memory_equal(got[0].params, reps[0].params, (size_t)np * sizeof(float));
    assert_memory_equal(got[0].state, reps[0].state, (size_t)ns * sizeof(float));
    assert_memory_equal(got[0].optim, reps[0].optim, (size_t)no * sizeof(float));
    dist_ckpt_free(&back, got);

    /* A different optimizer size is not this job's checkpoint. */
    assert_int_equal(dist_ckpt_load(&c, &back, &got, no + 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not match"));

    /* Another trainer's checkpoint is refused by name. */
    job_spec other = *f->spec;
    other.distributed.trainer = TRAINER_AVERAGING;
    dist_ctx c2 = c;
    c2.spec = &other;
    assert_int_equal(dist_ckpt_load(&c2, &back, &got, no, err, sizeof err), -1);
    assert_non_null(strstr(err, "allreduce"));

    /* Truncated. */
    char path[700];
    snprintf(path, sizeof path, "%s/ckpt.bin", sub);
    FILE *fp = fopen(path, "r+");
    assert_non_null(fp);
    assert_int_equal(ftruncate(fileno(fp), 200), 0);
    fclose(fp);
    assert_int_equal(dist_ckpt_load(&c, &back, &got, no, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated"));

    /* Two replicas (averaging/ensemble layout), which needs two ranks; a
     * one-rank run refuses that file. */
    meta.n_replicas = 2;
    c.size = 2;
    meta.worker_commits = NULL;
    assert_int_equal(dist_ckpt_save(&c, &meta, reps, no, err, sizeof err), 0);
    assert_int_equal(dist_ckpt_load(&c, &back, &got, no, err, sizeof err), 0);
    assert_int_equal(back.n_replicas, 2);
    assert_memory_equal(got[1].params, reps[1].params, (size_t)np * sizeof(float));
    assert_memory_equal(got[1].optim, reps[1].optim, (size_t)no * sizeof(float));
    dist_ckpt_free(&back, got);

    /* The parameter server's layout: the center has no optimizer (written
     * as zeros) beside a worker's; n_optim < 0 takes the file's count. */
    reps[0].optim = NULL;
    assert_int_equal(dist_ckpt_save(&c, &meta, reps, no, err, sizeof err), 0);
    assert_int_equal(dist_ckpt_load(&c, &back, &got, -1, err, sizeof err), 0);
    assert_int_equal(back.n_optim, no);
    for (long i = 0; i < no; i++)
        assert_true(got[0].optim[i] == 0.0f);
    assert_memory_equal(got[1].optim, reps[1].optim, (size_t)no * sizeof(float));
    dist_ckpt_free(&back, got);
    c.size = 1;
    assert_int_equal(dist_ckpt_load(&c, &back, &got, no, err, sizeof err), -1);
    assert_non_null(strstr(err, "on 2 ranks"));

    unlink(path);
    rmdir(sub);
    rmdir(dir);
    free(buf);
}

static void test_output_sums(void **state)
{
    fixture *f = *state;
    int32_t y[2] = {0, 2};
    dataset d = {.n = 2, .num_classes = 3, .y = y};
    /* Sample 0 right (p=0.5), sample 1 wrong (argmax 1, p_true=0.2). */
    float out[6] = {0.5f, 0.3f, 0.2f, 0.1f, 0.7f, 0.2f};
    dist_sums s;
    dist_output_sums(f->spec, out, 3, &d, &s);
    assert_true(s.n == 2 && s.correct == 1);
    assert_true(fabs(s.loss - (-log(0.5) - log(0.2))) < 1e-6);
    double sq = 0.25 + 0.09 + 0.04 + 0.01 + 0.49 + 0.64;
    assert_true(fabs(s.sq_err - sq) < 1e-6);
    assert_true(fabs(dist_sums_metric(&s, METRIC_ACCURACY, 3) - 0.5) < 1e-12);
    assert_true(fabs(dist_sums_metric(&s, METRIC_MSE, 3) - sq / 6) < 1e-6);
    assert_true(fabs(dist_sums_loss(&s) - s.loss / 2) < 1e-12);

    /* The categorical hinge as the backend computes it: 1 + 0.3 - 0.5 and
     * 1 + 0.7 - 0.2. */
    f->spec->training.loss = LOSS_CATEGORICAL_HINGE;
    dist_output_sums(f->spec, out, 3, &d, &s);
    float t[6] = {1, 0, 0, 0, 0, 1}, dy[6];
    double backend_sum = f->be->categorical_hinge(f->be, 2, 3, out, t, dy);
    assert_true(fabs(s.loss - 2.3) < 1e-6);
    assert_true(fabs(s.loss - backend_sum) < 1e-6);
    f->spec->training.loss = LOSS_CATEGORICAL_CROSSENTROPY;
}

/* Sanitizer builds: Open MPI's own allocations look like leaks at exit
 * (ENVIRONMENT.md); the engine's code is leak-checked by the other tests. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

int main(int argc, char **argv)
{
    /* As punch-train does, so the overlapped exchange runs its progress
     * thread. */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exchange_blocking_one_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exchange_blocking_many_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exchange_overlapped, setup, teardown),
        cmocka_unit_test(test_rank_share),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_bf16_error_feedback),
        cmocka_unit_test_setup_teardown(test_exchange_bf16_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exchange_bf16_overlapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_plan_matches_mpi, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_launches_final_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpu_rank_stays_on_mpi, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_sums, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return rc;
}
