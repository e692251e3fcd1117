/* test_gpu_host.c — the CUDA backend's host-side logic, which needs no
 * GPU: the node-local rank and world size from the launcher's
 * environment (backend/launch_env.h), the staging slot sequence of
 * uploads and downloads (gpu_stage.h), the PUNCH_GPU_SYNC switch
 * (gpu_debug.h), device choice, the NCCL bucketing
 * plan and the conv/pool/batchnorm workspace plans; and the per-element
 * formulas the kernels share with the host (gpu_math.h), run here and
 * checked against the CPU backend and engine/optim: softmax rows (in a
 * row block's order), relu/sigmoid/tanh forward and backward from y,
 * batchnorm's running-statistics rule and its N == 1 case, pooling
 * with any padding, the explicit-padding path of asymmetric convolutions
 * (pad, convolve unpadded, crop), the dropout mask and the optimizer
 * updates. Runs in every build. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/launch_env.h"
#include "gpu/gpu_bucket.h"
#include "gpu/gpu_debug.h"
#include "gpu/gpu_device.h"
#include "gpu/gpu_math.h"
#include "gpu/gpu_optim_coeffs.h"
#include "gpu/gpu_plan.h"
#include "gpu/gpu_stage.h"
#include "optim/optim.h"
#include "cpu/cpu.h"

/* ---- device choice --------------------------------------------------- */

static const char *const *test_env_table;

static const char *test_lookup(const char *name)
{
    for (const char *const *p = test_env_table; p && *p; p += 2)
        if (strcmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static int local_rank_with(const char *const *table)
{
    test_env_table = table;
    return launch_env_local_rank(test_lookup);
}

static void test_local_rank(void **state)
{
    (void)state;
    const char *const none[] = {NULL};
    const char *const ompi[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "3", "SLURM_LOCALID", "7", NULL};
    const char *const bad_ompi[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "x3", "MPI_LOCALRANKID", "2",
                                    NULL};
    const char *const slurm[] = {"SLURM_LOCALID", "5", NULL};
    const char *const negative[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "-1", NULL};
    /* Precedence with all three set: Open MPI's, then MPICH's, then
     * Slurm's (an srun-launched job without mpirun has only the last). */
    const char *const all3[] = {"SLURM_LOCALID", "6", "MPI_LOCALRANKID", "4",
                                "OMPI_COMM_WORLD_LOCAL_RANK", "1", NULL};
    const char *const mpich_slurm[] = {"SLURM_LOCALID", "6", "MPI_LOCALRANKID", "4", NULL};
    const char *const empty_ompi[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "", "SLURM_LOCALID", "2",
                                      NULL};
    const char *const bad_all[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "1x", "MPI_LOCALRANKID",
                                   "99999999999", "SLURM_LOCALID", " ", NULL};
    assert_int_equal(local_rank_with(none), 0);
    assert_int_equal(local_rank_with(ompi), 3);
    assert_int_equal(local_rank_with(bad_ompi), 2);
    assert_int_equal(local_rank_with(slurm), 5);
    assert_int_equal(local_rank_with(negative), 0);
    assert_int_equal(local_rank_with(all3), 1);
    assert_int_equal(local_rank_with(mpich_slurm), 4);
    assert_int_equal(local_rank_with(empty_ompi), 2);
    assert_int_equal(local_rank_with(bad_all), 0);
}

/* ---- staging slots and the PUNCH_GPU_SYNC switch ---------------------- */

/* Slots of a copy of `floats` floats issued as gpu_upload does (one take
 * per chunk), written to out; returns the chunk count. */
static long stage_upload(gpu_stage_seq *s, long floats, int *out)
{
    long chunks = gpu_stage_chunks(floats);
    for (long k = 0; k < chunks; k++)
        out[k] = gpu_stage_take(s);
    return chunks;
}

static void test_stage_sequence(void **state)
{
    (void)state;
    assert_int_equal(gpu_stage_chunks(0), 0);
    assert_int_equal(gpu_stage_chunks(-5), 0);
    assert_int_equal(gpu_stage_chunks(1), 1);
    assert_int_equal(gpu_stage_chunks(GPU_STAGE_FLOATS), 1);
    assert_int_equal(gpu_stage_chunks(GPU_STAGE_FLOATS + 1), 2);
    gpu_stage_seq s = {0};
    int slots[8];
    /* A step's inputs then targets, one chunk each: the targets take the
     * other slot, so their copy does not wait for the inputs'. */
    assert_int_equal(stage_upload(&s, 1000, slots), 1);
    assert_int_equal(slots[0], 0);
    assert_int_equal(stage_upload(&s, 10, slots), 1);
    assert_int_equal(slots[0], 1);
    /* The next step's inputs start over on slot 0, and so on. */
    assert_int_equal(stage_upload(&s, 1000, slots), 1);
    assert_int_equal(slots[0], 0);
    /* A three-chunk copy alternates and the next one continues after it. */
    assert_int_equal(stage_upload(&s, 2 * GPU_STAGE_FLOATS + 1, slots), 3);
    assert_int_equal(slots[0], 1);
    assert_int_equal(slots[1], 0);
    assert_int_equal(slots[2], 1);
    assert_int_equal(stage_upload(&s, 1, slots), 1);
    assert_int_equal(slots[0], 0);
    /* An empty copy takes nothing. */
    assert_int_equal(stage_upload(&s, 0, slots), 0);
    assert_int_equal(s.next, 1);
    /* A download reads slots without taking them chunk by chunk, then
     * advances once: chunk k's slot is next + k. */
    assert_int_equal(gpu_stage_slot(&s, 0), 1);
    assert_int_equal(gpu_stage_slot(&s, 1), 0);
    assert_int_equal(gpu_stage_slot(&s, 2), 1);
    gpu_stage_advance(&s, 2);
    assert_int_equal(s.next, 1);
    gpu_stage_advance(&s, 3);
    assert_int_equal(s.next, 0);
    gpu_stage_advance(&s, 0);
    assert_int_equal(s.next, 0);
}

/* Off until start-up sets it (train/options.c parses the variable). */
static void test_sync_switch(void **state)
{
    (void)state;
    assert_false(gpu_debug_sync());
    gpu_debug_set_sync(true);
    assert_true(gpu_debug_sync());
    gpu_debug_set_sync(false);
    assert_false(gpu_debug_sync());
}

static void test_world_size(void **state)
{
    (void)state;
    const char *const none[] = {NULL};
    const char *const ompi[] = {"OMPI_COMM_WORLD_SIZE", "4", "PMI_SIZE", "9", NULL};
    const char *const mpich[] = {"PMI_SIZE", "3", NULL};
    const char *const bad[] = {"OMPI_COMM_WORLD_SIZE", "two", NULL};
    test_env_table = none;
    assert_int_equal(launch_env_world_size(test_lookup), 1);
    test_env_table = ompi;
    assert_int_equal(launch_env_world_size(test_lookup), 4);
    test_env_table = mpich;
    assert_int_equal(launch_env_world_size(test_lookup), 3);
    test_env_table = bad;
    assert_int_equal(launch_env_world_size(test_lookup), 1);
}

static void test_visible_devices(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(gpu_visible_devices_count("0,1,2", 1, buf, sizeof buf), 3);
    assert_string_equal(buf, "1");
    assert_int_equal(gpu_visible_devices_count(" 2 , 3", 0, buf, sizeof buf), 2);
    assert_string_equal(buf, "2");
    /* The runtime stops at the first invalid entry. */
    assert_int_equal(gpu_visible_devices_count("1,x,2", -1, NULL, 0), 1);
    assert_int_equal(gpu_visible_devices_count("0,,2", -1, NULL, 0), 1);
    assert_int_equal(gpu_visible_devices_count("-1", -1, NULL, 0), 0);
    assert_int_equal(gpu_visible_devices_count("", -1, NULL, 0), 0);
    assert_int_equal(gpu_visible_devices_count("GPU-8f2c,MIG-11", 1, buf, sizeof buf), 2);
    assert_string_equal(buf, "MIG-11");
    /* Past the end leaves the buffer empty. */
    assert_int_equal(gpu_visible_devices_count("4", 3, buf, sizeof buf), 1);
    assert_string_equal(buf, "");
}

static void test_device_choose(void **state)
{
    (void)state;
    gpu_device_choice c;
    char err[256];
    assert_true(gpu_device_choose(1, 4, NULL, &c, err, sizeof err));
    assert_int_equal(c.device, 1);
    assert_false(c.shared);
    assert_string_equal(c.visible, "1");
    /* More ranks than devices: wrap around and say so. */
    assert_true(gpu_device_choose(5, 4, NULL, &c, err, sizeof err));
    assert_int_equal(c.device, 1);
    assert_true(c.shared);
    /* One visible device per rank (Slurm --gpus-per-task): all take 0. */
    assert_true(gpu_device_choose(3, 1, "6", &c, err, sizeof err));
    assert_int_equal(c.device, 0);
    assert_string_equal(c.visible, "6");
    /* Ordinals index the visible list. */
    assert_true(gpu_device_choose(1, 2, "3,1", &c, err, sizeof err));
    assert_int_equal(c.device, 1);
    assert_string_equal(c.visible, "1");
    assert_false(gpu_device_choose(0, 0, NULL, &c, err, sizeof err));
    assert_int_equal(c.device, -1);
    assert_string_equal(err, "no CUDA device: no CUDA-capable device is detected");
    assert_false(gpu_device_choose(0, 0, "", &c, err, sizeof err));
    assert_string_equal(err, "no CUDA device: CUDA_VISIBLE_DEVICES=\"\" hides every device");
}

/* ---- NCCL buckets ------------------------------------------------------ */

/* Buckets tile exactly the parameters, in descending offset order, never
 * split a layer, and respect the limit unless holding a single layer. */
static void check_plan_invariants(const gpu_param_span *spans, int n, long limit,
                                  const gpu_bucket_plan *p)
{
    long total = 0, first = -1;
    for (int i = 0; i < n; i++) {
        total += spans[i].count;
        if (spans[i].count > 0 && first < 0)
            first = spans[i].offset;
    }
    long covered = 0, prev_offset = -1;
    for (int b = 0; b < p->n_buckets; b++) {
        const gpu_bucket *k = &p->buckets[b];
        covered += k->count;
        if (b > 0)
            assert_int_equal(k->offset + k->count, prev_offset);
        prev_offset = k->offset;
        assert_int_equal(k->offset, spans[k->first_layer].offset);
        assert_int_equal(k->offset + k->count,
                         spans[k->last_layer].offset + spans[k->last_layer].count);
        if (k->n_param_layers > 1)
            assert_true(k->count <= limit);
        int layers = 0;
        for (int i = k->first_layer; i <= k->last_layer; i++)
            if (spans[i].count > 0) {
                layers++;
                assert_int_equal(p->bucket_of[i], b);
            }
        assert_int_equal(layers, k->n_param_layers);
    }
    assert_int_equal(covered, total);
    if (p->n_buckets > 0)
        assert_int_equal(p->buckets[p->n_buckets - 1].offset, first);
    for (int i = 0; i < n; i++)
        if (spans[i].count == 0)
            assert_int_equal(p->bucket_of[i], -1);
}

/* The launch order of one step: strictly plan order, a bucket only once
 * all its layers are done, whatever order they report in; at the end every
 * remaining bucket goes out; a second step reuses the counters. */
static void test_bucket_progress(void **state)
{
    (void)state;
    const gpu_param_span spans[] = {
        {0, 100}, {100, 0}, {100, 300}, {400, 50}, {450, 500},
    };
    gpu_bucket_plan plan;
    char err[256];
    assert_true(gpu_bucket_plan_build(spans, 5, 400, &plan, err, sizeof err));
    /* Buckets: 0 = {4}, 1 = {2, 3}, 2 = {0}. */
    gpu_bucket_progress p = {0};
    assert_int_equal(gpu_bucket_progress_next(&p, true), -1); /* before any step */

    /* Backward order, as model_backward_hooked reports. */
    assert_true(gpu_bucket_progress_begin(&p, &plan));
    gpu_bucket_progress_layer_done(&p, 4);
    assert_int_equal(gpu_bucket_progress_next(&p, false), 0);
    assert_int_equal(gpu_bucket_progress_next(&p, false), -1);
    gpu_bucket_progress_layer_done(&p, 3);
    assert_int_equal(gpu_bucket_progress_next(&p, false), -1); /* 2 still running */
    gpu_bucket_progress_layer_done(&p, 2);
    gpu_bucket_progress_layer_done(&p, 1);                     /* no parameters */
    assert_int_equal(gpu_bucket_progress_next(&p, false), 1);
    assert_int_equal(gpu_bucket_progress_next(&p, false), -1);
    gpu_bucket_progress_layer_done(&p, 0);
    assert_int_equal(gpu_bucket_progress_next(&p, false), 2);
    assert_int_equal(gpu_bucket_progress_next(&p, true), -1);

    /* Out of order: bucket 2's layer first must not overtake 0 and 1. */
    assert_true(gpu_bucket_progress_begin(&p, &plan));
    gpu_bucket_progress_layer_done(&p, 0);
    gpu_bucket_progress_layer_done(&p, 3);
    gpu_bucket_progress_layer_done(&p, 7);                     /* out of range */
    gpu_bucket_progress_layer_done(&p, -1);
    assert_int_equal(gpu_bucket_progress_next(&p, false), -1);
    gpu_bucket_progress_layer_done(&p, 4);
    assert_int_equal(gpu_bucket_progress_next(&p, false), 0);
    assert_int_equal(gpu_bucket_progress_next(&p, false), -1);
    /* The end of backward launches the rest, in order. */
    assert_int_equal(gpu_bucket_progress_next(&p, true), 1);
    assert_int_equal(gpu_bucket_progress_next(&p, true), 2);
    assert_int_equal(gpu_bucket_progress_next(&p, true), -1);

    /* No layer reported at all (a rank without samples). */
    assert_true(gpu_bucket_progress_begin(&p, &plan));
    for (int k = 0; k < plan.n_buckets; k++)
        assert_int_equal(gpu_bucket_progress_next(&p, true), k);
    assert_int_equal(gpu_bucket_progress_next(&p, true), -1);
    gpu_bucket_progress_free(&p);
    gpu_bucket_plan_free(&plan);
}

static void test_bucket_plan(void **state)
{
    (void)state;
    const gpu_param_span spans[] = {
        {0, 100}, {100, 0}, {100, 300}, {400, 50}, {450, 500},
    };
    gpu_bucket_plan p;
    char err[256];
    assert_true(gpu_bucket_plan_build(spans, 5, 400, &p, err, sizeof err));
    assert_int_equal(p.n_buckets, 3);
    /* Layer 4 alone (bigger than the limit), then 3 and 2 together (350),
     * then 0 (adding it would make 450). */
    assert_int_equal(p.buckets[0].offset, 450);
    assert_int_equal(p.buckets[0].count, 500);
    assert_int_equal(p.buckets[0].first_layer, 4);
    assert_int_equal(p.buckets[1].offset, 100);
    assert_int_equal(p.buckets[1].count, 350);
    assert_int_equal(p.buckets[1].first_layer, 2);
    assert_int_equal(p.buckets[1].last_layer, 3);
    assert_int_equal(p.buckets[1].n_param_layers, 2);
    assert_int_equal(p.buckets[2].offset, 0);
    assert_int_equal(p.buckets[2].count, 100);
    int expect_of[] = {2, -1, 1, 1, 0};
    assert_memory_equal(p.bucket_of, expect_of, sizeof expect_of);
    check_plan_invariants(spans, 5, 400, &p);
    gpu_bucket_plan_free(&p);

    /* One big bucket when everything fits. */
    assert_true(gpu_bucket_plan_build(spans, 5, gpu_bucket_floats(4.0), &p, err, sizeof err));
    assert_int_equal(p.n_buckets, 1);
    assert_int_equal(p.buckets[0].count, 950);
    gpu_bucket_plan_free(&p);

    /* No parameters at all. */
    const gpu_param_span empty[] = {{0, 0}, {0, 0}};
    assert_true(gpu_bucket_plan_build(empty, 2, 10, &p, err, sizeof err));
    assert_int_equal(p.n_buckets, 0);
    gpu_bucket_plan_free(&p);
}

static void test_bucket_plan_random(void **state)
{
    (void)state;
    srand(7);
    for (int round = 0; round < 200; round++) {
        int n = 1 + rand() % 40;
        gpu_param_span spans[40];
        long off = 0;
        for (int i = 0; i < n; i++) {
            long count = rand() % 4 == 0 ? 0 : 1 + rand() % 1000;
            spans[i] = (gpu_param_span){off, count};
            off += count;
        }
        long limit = 1 + rand() % 3000;
        gpu_bucket_plan p;
        char err[256];
        assert_true(gpu_bucket_plan_build(spans, n, limit, &p, err, sizeof err));
        check_plan_invariants(spans, n, limit, &p);
        /* Greedy: a bucket could not have taken the next layer below it. */
        for (int b = 0; b + 1 < p.n_buckets; b++) {
            const gpu_bucket *next = &p.buckets[b + 1];
            long below = spans[next->last_layer].count;
            assert_true(p.buckets[b].count + below > limit);
        }
        gpu_bucket_plan_free(&p);
    }
}

static void test_bucket_plan_errors(void **state)
{
    (void)state;
    const gpu_param_span gap[] = {{0, 10}, {12, 5}};
    gpu_bucket_plan p;
    char err[256];
    assert_false(gpu_bucket_plan_build(gap, 2, 100, &p, err, sizeof err));
    assert_non_null(strstr(err, "layer 1 starts at float 12, expected 10"));
    const gpu_param_span negative[] = {{0, -1}};
    assert_false(gpu_bucket_plan_build(negative, 1, 100, &p, err, sizeof err));
    assert_int_equal(gpu_bucket_floats(4.0), 1048576);
    assert_int_equal(gpu_bucket_floats(0.0), 1);
    assert_int_equal(gpu_bucket_floats(-3.0), 1);
}

/* ---- conv / pool / batchnorm plans ------------------------------------- */

static conv2d_desc conv_desc(int c, int h, int w, int k, int kh, int stride, int dil, int pt,
                             int pl, int pb, int pr)
{
    conv2d_desc d = {
        .max_batch = 8, .c = c, .h = h, .w = w, .k = k, .kh = kh, .kw = kh,
        .stride_h = stride, .stride_w = stride, .pad_top = pt, .pad_left = pl,
        .pad_bottom = pb, .pad_right = pr, .dil_h = dil, .dil_w = dil,
    };
    d.oh = (h + pt + pb - dil * (kh - 1) - 1) / stride + 1;
    d.ow = (w + pl + pr - dil * (kh - 1) - 1) / stride + 1;
    return d;
}

static void test_conv_plan(void **state)
{
    (void)state;
    char err[256];
    gpu_conv_plan p;
    /* Symmetric "same" 3x3: cuDNN pads, nothing extra in the workspace. */
    conv2d_desc d = conv_desc(3, 28, 28, 16, 3, 1, 1, 1, 1, 1, 1);
    assert_true(gpu_conv_plan_geometry(&d, &p, err, sizeof err));
    assert_false(p.explicit_pad);
    assert_int_equal(p.pad_h, 1);
    assert_int_equal(p.in_h, 28);
    assert_true(gpu_conv_plan_workspace(&p, 1000, err, sizeof err));
    assert_int_equal(p.cudnn_floats, 256); /* 250 floats, aligned up */
    assert_int_equal(p.workspace_floats, 256);

    /* TF "same" with a 2x2 kernel pads one at the bottom/right only. */
    d = conv_desc(2, 5, 5, 4, 2, 1, 1, 0, 0, 1, 1);
    assert_int_equal(d.oh, 5);
    assert_true(gpu_conv_plan_geometry(&d, &p, err, sizeof err));
    assert_true(p.explicit_pad);
    assert_int_equal(p.pad_h, 0);
    assert_int_equal(p.in_h, 6);
    assert_int_equal(p.in_w, 6);
    assert_int_equal(p.padded_floats, 8L * 2 * 6 * 6);
    assert_true(gpu_conv_plan_workspace(&p, 0, err, sizeof err));
    assert_int_equal(p.cudnn_floats, 0);
    assert_int_equal(p.off_xpad, 0);
    assert_int_equal(p.off_dxpad, 576); /* 576 is a multiple of 64 */
    assert_int_equal(p.workspace_floats, 1152);
    assert_true(gpu_conv_plan_workspace(&p, 4, err, sizeof err));
    assert_int_equal(p.off_xpad, 64);
    assert_int_equal(p.off_dxpad % GPU_PLAN_ALIGN_FLOATS, 0);

    /* Strided, dilated. */
    d = conv_desc(1, 9, 9, 1, 3, 2, 2, 0, 0, 0, 0);
    assert_int_equal(d.oh, 3);
    assert_true(gpu_conv_plan_geometry(&d, &p, err, sizeof err));

    /* A wrong output size is caught. */
    d.oh = 4;
    assert_false(gpu_conv_plan_geometry(&d, &p, err, sizeof err));
    assert_non_null(strstr(err, "expected 3x3"));
    d = conv_desc(1, 9, 9, 1, 3, 1, 1, 0, 0, 0, 0);
    d.stride_h = 0;
    assert_false(gpu_conv_plan_geometry(&d, &p, err, sizeof err));
}

static void test_pool_plan(void **state)
{
    (void)state;
    char err[256];
    gpu_pool_plan p;
    pool2d_desc d = {.max_batch = 4, .c = 3, .h = 28, .w = 28, .kh = 2, .kw = 2,
                     .stride_h = 2, .stride_w = 2, .oh = 14, .ow = 14, .mode = POOL_MAX};
    assert_true(gpu_pool_plan_build(&d, &p, err, sizeof err));
    assert_true(p.use_cudnn);
    /* 3x3 stride 2 pad 1 both sides: cuDNN. */
    d.kh = d.kw = 3;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
    assert_true(gpu_pool_plan_build(&d, &p, err, sizeof err));
    assert_true(p.use_cudnn);
    assert_int_equal(p.pad_h, 1);
    /* "same" 2x2 stride 1 on 5x5: one extra at the bottom/right. */
    pool2d_desc s = {.max_batch = 4, .c = 1, .h = 5, .w = 5, .kh = 2, .kw = 2,
                     .stride_h = 1, .stride_w = 1, .pad_bottom = 1, .pad_right = 1,
                     .oh = 5, .ow = 5, .mode = POOL_AVG};
    assert_true(gpu_pool_plan_build(&s, &p, err, sizeof err));
    assert_false(p.use_cudnn);
    /* Padding as wide as the window: the backend's kernel. */
    pool2d_desc w = {.max_batch = 1, .c = 1, .h = 4, .w = 4, .kh = 1, .kw = 1,
                     .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1,
                     .pad_bottom = 1, .pad_right = 1, .oh = 6, .ow = 6, .mode = POOL_AVG};
    assert_true(gpu_pool_plan_build(&w, &p, err, sizeof err));
    assert_false(p.use_cudnn);
    w.oh = 5;
    assert_false(gpu_pool_plan_build(&w, &p, err, sizeof err));
    assert_non_null(strstr(err, "pool2d"));
}

static void test_batchnorm_plan(void **state)
{
    (void)state;
    batchnorm_desc d = {.max_batch = 32, .c = 16, .spatial = 49};
    assert_int_equal(gpu_batchnorm_workspace(&d), 32L * 16 * 49);
    d.c = 0;
    assert_int_equal(gpu_batchnorm_workspace(&d), -1);
    assert_int_equal(gpu_plan_floats(0), 0);
    assert_int_equal(gpu_plan_floats(1), 64);
    assert_int_equal(gpu_plan_floats(256), 64);
    assert_int_equal(gpu_plan_floats(257), 128);
}

/* ---- kernels' element formulas against the CPU backend ------------------ */

static float host_rand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static float *host_random(long n)
{
    float *p = malloc((size_t)n * sizeof *p);
    assert_non_null(p);
    for (long i = 0; i < n; i++)
        p[i] = host_rand();
    return p;
}

/* host_random's values times scale. */
static float *host_scaled(long n, float scale)
{
    float *p = host_random(n);
    for (long i = 0; i < n; i++)
        p[i] *= scale;
    return p;
}

/* A malloc'd copy of n floats. */
static float *host_copy(const float *src, long n)
{
    float *p = malloc((size_t)n * sizeof *p);
    assert_non_null(p);
    memcpy(p, src, (size_t)n * sizeof *p);
    return p;
}

/* An activation's buffers: x (host_random times scale), dy (host_random),
 * y on the CPU backend, yk (a copy of x) for the kernel's formula. */
typedef struct act_bufs {
    float *x, *dy, *y, *yk;
} act_bufs;

static act_bufs act_bufs_new(backend *cpu, long n, float scale)
{
    act_bufs b = {.x = host_scaled(n, scale)};
    b.dy = host_random(n);
    b.y = cpu->alloc(cpu, n);
    assert_non_null(b.y);
    b.yk = host_copy(b.x, n);
    return b;
}

static void act_bufs_free(backend *cpu, act_bufs *b)
{
    cpu->free(cpu, b->y);
    free(b->yk);
    free(b->x);
    free(b->dy);
}

/* The CPU backend on one thread, the reference the kernels' formulas are
 * checked against. */
static backend *cpu_reference(void)
{
    char err[256];
    backend *cpu = backend_cpu_create(1, err, sizeof err);
    if (!cpu)
        fail_msg("backend_cpu_create: %s", err);
    return cpu;
}

static void expect_near(const float *a, const float *b, long n, float tol)
{
    for (long i = 0; i < n; i++)
        if (!(fabsf(a[i] - b[i]) <= tol * (1.0f + fabsf(b[i]))))
            fail_msg("element %ld: %.9g vs %.9g", i, a[i], b[i]);
}

/* The kernel's dxk against the CPU's dx; both freed. */
static void expect_dx(float *dxk, float *dx, long n)
{
    expect_near(dxk, dx, n, 1e-6f);
    free(dx);
    free(dxk);
}

static void test_pool_formulas(void **state)
{
    (void)state;
    typedef struct { int c, h, w, k, stride, pt, pl, pb, pr; } pool_case;
    const pool_case cases[] = {
        {2, 5, 5, 2, 1, 0, 0, 1, 1},   /* "same" 2x2/1: one extra bottom/right */
        {3, 7, 6, 3, 2, 1, 1, 1, 1},   /* symmetric */
        {1, 6, 7, 3, 2, 0, 2, 1, 0},   /* lopsided both ways */
        {2, 4, 4, 1, 1, 1, 1, 1, 1},   /* windows entirely in the padding */
        {1, 9, 9, 4, 3, 2, 1, 2, 3},   /* stride < kernel, overlapping */
    };
    backend *cpu = cpu_reference();
    const int batch = 3;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int mode = 0; mode < 2; mode++) {
            const pool_case *pc = &cases[ci];
            pool2d_desc d = {
                .max_batch = batch, .c = pc->c, .h = pc->h, .w = pc->w, .kh = pc->k,
                .kw = pc->k, .stride_h = pc->stride, .stride_w = pc->stride,
                .pad_top = pc->pt, .pad_left = pc->pl, .pad_bottom = pc->pb,
                .pad_right = pc->pr, .mode = mode ? POOL_AVG : POOL_MAX,
            };
            d.oh = (d.h + d.pad_top + d.pad_bottom - d.kh) / d.stride_h + 1;
            d.ow = (d.w + d.pad_left + d.pad_right - d.kw) / d.stride_w + 1;
            assert_true(cpu->pool2d_prepare(cpu, &d) >= 0);
            gpu_pool_geom g = {
                .c = d.c, .h = d.h, .w = d.w, .kh = d.kh, .kw = d.kw,
                .stride_h = d.stride_h, .stride_w = d.stride_w, .pad_top = d.pad_top,
                .pad_left = d.pad_left, .oh = d.oh, .ow = d.ow, .max = d.mode == POOL_MAX,
            };
            long xn = (long)batch * d.c * d.h * d.w, yn = (long)batch * d.c * d.oh * d.ow;
            float *x = host_random(xn), *dy = host_random(yn);
            /* Ties, so "first maximum" matters. */
            for (long i = 0; i < xn; i += 3)
                x[i] = 0.5f;
            float *y = cpu->alloc(cpu, yn), *dx = cpu->alloc(cpu, xn);
            float *yk = malloc((size_t)yn * sizeof *yk), *dxk = malloc((size_t)xn * sizeof *dxk);
            cpu->pool2d_forward(cpu, &d, batch, x, y);
            for (long i = 0; i < yn; i++)
                yk[i] = gpu_pool_forward_at(&g, x, i);
            assert_memory_equal(yk, y, (size_t)yn * sizeof *y);
            cpu->pool2d_backward(cpu, &d, batch, x, y, dy, dx, false);
            for (long i = 0; i < xn; i++)
                dxk[i] = gpu_pool_backward_at(&g, x, y, dy, i);
            expect_near(dxk, dx, xn, 1e-6f);
            cpu->pool2d_release(cpu, &d);
            cpu->free(cpu, y);
            cpu->free(cpu, dx);
            free(x);
            free(dy);
            free(yk);
            free(dxk);
        }
    cpu->destroy(cpu);
}

/* The softmax kernel's host mirror (a row block's order) against the CPU
 * backend, on rows shorter and longer than a block. */
static void test_softmax_formulas(void **state)
{
    (void)state;
    backend *cpu = cpu_reference();
    const long shapes[][2] = {{9, 13}, {3, 5000}, {2, GPU_BLOCK_THREADS + 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const long rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        act_bufs b = act_bufs_new(cpu, n, 8.0f);
        cpu->activation_forward(cpu, ACT_SOFTMAX, rows, cols, b.x, b.y);
        for (long r = 0; r < rows; r++) /* in place, as dense layers use it */
            gpu_softmax_row(b.yk + r * cols, b.yk + r * cols, cols);
        expect_near(b.yk, b.y, n, 1e-6f);
        for (int acc = 0; acc < 2; acc++) {
            float *dx = host_random(n), *dxk = host_copy(dx, n);
            cpu->activation_backward(cpu, ACT_SOFTMAX, rows, cols, b.y, b.dy, dx, acc);
            for (long r = 0; r < rows; r++)
                gpu_softmax_row_backward(b.y + r * cols, b.dy + r * cols, dxk + r * cols, cols,
                                         acc);
            expect_dx(dxk, dx, n);
        }
        act_bufs_free(cpu, &b);
    }
    cpu->destroy(cpu);
}

/* relu, sigmoid and tanh: the kernels' per-element formulas against the
 * CPU backend, forward and backward from y, overwriting, accumulating and
 * in place (dx == dy). */
static void test_activation_formulas(void **state)
{
    (void)state;
    backend *cpu = cpu_reference();
    static const spec_activation acts[] = {ACT_RELU, ACT_SIGMOID, ACT_TANH};
    static const gpu_act_kind kinds[] = {GPU_ACT_RELU, GPU_ACT_SIGMOID, GPU_ACT_TANH};
    const long rows = 7, cols = 41, n = rows * cols;
    for (size_t a = 0; a < 3; a++) {
        act_bufs b = act_bufs_new(cpu, n, 4.0f);
        b.x[0] = 0.0f; /* relu's boundary: y == 0 passes no gradient */
        cpu->activation_forward(cpu, acts[a], rows, cols, b.x, b.y);
        for (long i = 0; i < n; i++)
            b.yk[i] = gpu_act_forward_at(kinds[a], b.x[i]);
        expect_near(b.yk, b.y, n, 1e-6f);
        for (int acc = 0; acc < 3; acc++) {
            /* acc 2: overwriting in place, dx == dy. */
            float *dx = host_random(n);
            if (acc == 2)
                memcpy(dx, b.dy, (size_t)n * sizeof *dx);
            float *dxk = host_copy(dx, n);
            cpu->activation_backward(cpu, acts[a], rows, cols, b.y, acc == 2 ? dx : b.dy, dx,
                                     acc == 1);
            for (long i = 0; i < n; i++) {
                float g = gpu_act_backward_at(kinds[a], b.y[i], b.dy[i]);
                dxk[i] = acc == 1 ? dxk[i] + g : g;
            }
            expect_dx(dxk, dx, n);
        }
        act_bufs_free(cpu, &b);
    }
    cpu->destroy(cpu);
}

/* Batchnorm's running statistics: the N == 1 case the GPU computes itself
 * (gpu_bn_single_at: variance 0 taken as is, no 0/0) and the rule
 * (gpu_bn_unbiased, gpu_bn_running) for N > 1, against the CPU backend. */
static void test_batchnorm_running_rule(void **state)
{
    (void)state;
    backend *cpu = cpu_reference();
    const int c = 6;
    const float momentum = 0.5f, eps = 1e-3f;
    const int shapes[][2] = {{1, 1}, {4, 1}, {1, 3}}; /* batch, spatial */
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int batch = shapes[s][0], sp = shapes[s][1];
        long n = (long)batch * c * sp, m = (long)batch * sp;
        batchnorm_desc d = {.max_batch = batch, .c = c, .spatial = sp, .epsilon = eps,
                            .momentum = momentum};
        assert_true(cpu->batchnorm_prepare(cpu, &d) >= 0);
        float *x = host_random(n), *gamma = host_random(c), *beta = host_random(c);
        float *rm = host_random(c), *rv = host_random(c);
        float rm0[6], rv0[6], sm[6], si[6], rmk[6], rvk[6], smk[6], sik[6];
        float *y = malloc((size_t)n * sizeof *y), *yk = malloc((size_t)n * sizeof *yk);
        assert_non_null(y);
        assert_non_null(yk);
        for (int i = 0; i < c; i++) {
            rv[i] = fabsf(rv[i]) + 0.5f;
            rm0[i] = rmk[i] = rm[i];
            rv0[i] = rvk[i] = rv[i];
        }
        cpu->batchnorm_forward_train(cpu, &d, batch, x, gamma, beta, rm, rv, sm, si, y, NULL);
        if (m == 1) {
            for (int i = 0; i < c; i++)
                gpu_bn_single_at(i, momentum, eps, x, gamma, beta, rmk, rvk, smk, sik, yk);
            expect_near(yk, y, n, 1e-6f);
            expect_near(smk, sm, c, 1e-6f);
            expect_near(sik, si, c, 1e-6f);
        } else {
            for (int i = 0; i < c; i++) {
                double mean = 0.0, sq = 0.0;
                for (int b = 0; b < batch; b++)
                    for (int k = 0; k < sp; k++)
                        mean += x[((long)b * c + i) * sp + k];
                mean /= (double)m;
                for (int b = 0; b < batch; b++)
                    for (int k = 0; k < sp; k++) {
                        double e = x[((long)b * c + i) * sp + k] - mean;
                        sq += e * e;
                    }
                double var = gpu_bn_unbiased(sq / (double)m, (double)m);
                assert_true(var > sq / (double)m); /* the m / (m - 1) correction */
                rmk[i] = gpu_bn_running(momentum, rm0[i], (float)mean);
                rvk[i] = gpu_bn_running(momentum, rv0[i], (float)var);
            }
        }
        expect_near(rmk, rm, c, 1e-6f);
        expect_near(rvk, rv, c, 1e-6f);
        for (int i = 0; i < c; i++) {
            assert_true(isfinite(rv[i]));
            if (m == 1) /* variance 0: the running variance only decays */
                assert_true(rv[i] == momentum * rv0[i] + (1.0f - momentum) * 0.0f);
        }
        cpu->batchnorm_release(cpu, &d);
        free(x);
        free(gamma);
        free(beta);
        free(rm);
        free(rv);
        free(y);
        free(yk);
    }
    cpu->destroy(cpu);
}

/* An asymmetric convolution equals: pad explicitly as the plan says,
 * convolve with no padding over the plan's input size, crop the input
 * gradient. Checked with the CPU backend doing the convolutions. */
static void test_conv_explicit_padding(void **state)
{
    (void)state;
    char err[256];
    backend *cpu = cpu_reference();
    const int batch = 2;
    conv2d_desc d = conv_desc(3, 6, 7, 4, 2, 1, 1, 0, 0, 1, 1);
    d.max_batch = batch;
    gpu_conv_plan p;
    assert_true(gpu_conv_plan_geometry(&d, &p, err, sizeof err));
    assert_true(p.explicit_pad);
    conv2d_desc u = d;
    u.h = p.in_h;
    u.w = p.in_w;
    u.pad_top = u.pad_bottom = p.pad_h;
    u.pad_left = u.pad_right = p.pad_w;
    long wd = cpu->conv2d_prepare(cpu, &d), wu = cpu->conv2d_prepare(cpu, &u);
    assert_true(wd >= 0 && wu >= 0);
    assert_int_equal(u.oh, d.oh);
    float *ws = cpu->alloc(cpu, (wd > wu ? wd : wu) + 1);
    long planes = (long)batch * d.c;
    long xn = planes * d.h * d.w, xpn = planes * p.in_h * p.in_w;
    long yn = (long)batch * d.k * d.oh * d.ow, wn = (long)d.k * d.c * d.kh * d.kw;
    float *x = host_random(xn), *w = host_random(wn), *dz = host_random(yn);
    float *xp = malloc((size_t)xpn * sizeof *xp);
    for (long i = 0; i < xpn; i++)
        xp[i] = gpu_pad_at(i, d.h, d.w, d.pad_top, d.pad_left, p.in_h, p.in_w, x);
    float *y_ref = cpu->alloc(cpu, yn), *y = cpu->alloc(cpu, yn);
    cpu->conv2d_forward(cpu, &d, batch, x, w, NULL, ACT_NONE, y_ref, ws);
    cpu->conv2d_forward(cpu, &u, batch, xp, w, NULL, ACT_NONE, y, ws);
    expect_near(y, y_ref, yn, 1e-5f);
    float *dx_ref = cpu->alloc(cpu, xn), *dxp = cpu->alloc(cpu, xpn), *dx = cpu->alloc(cpu, xn);
    float *dw_ref = cpu->alloc(cpu, wn), *dw = cpu->alloc(cpu, wn);
    cpu->conv2d_backward(cpu, &d, batch, x, w, dz, dx_ref, false, dw_ref, NULL, ws);
    cpu->conv2d_backward(cpu, &u, batch, xp, w, dz, dxp, false, dw, NULL, ws);
    for (long i = 0; i < xn; i++)
        dx[i] = gpu_crop_at(i, d.h, d.w, d.pad_top, d.pad_left, p.in_h, p.in_w, dxp);
    expect_near(dx, dx_ref, xn, 1e-5f);
    expect_near(dw, dw_ref, wn, 1e-5f);
    float *bufs[] = {ws, y_ref, y, dx_ref, dxp, dx, dw_ref, dw};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cpu->free(cpu, bufs[i]);
    free(x);
    free(w);
    free(dz);
    free(xp);
    cpu->conv2d_release(cpu, &d);
    cpu->conv2d_release(cpu, &u);
    cpu->destroy(cpu);
}

/* ---- shared formulas --------------------------------------------------- */

static void test_dropout_rule(void **state)
{
    (void)state;
    const float rates[] = {0.0f, 0.1f, 0.5f, 0.9f};
    const uint64_t seeds[] = {0, 1, 42, 0xdeadbeefcafef00dULL};
    for (size_t r = 0; r < 4; r++)
        for (size_t s = 0; s < 4; s++)
            for (uint64_t i = 0; i < 20000; i++)
                assert_int_equal(gpu_dropout_keep(seeds[s], i, rates[r]) != 0,
                                 backend_dropout_keep(seeds[s], i, rates[r]));
}

static spec_optimizer optimizer_cfg(spec_optimizer_name name, double momentum, bool nesterov)
{
    spec_optimizer c = {
        .name = name, .learning_rate = 0.01, .momentum = momentum, .nesterov = nesterov,
        .decay = 0.01, .rho = 0.9, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7,
        .weight_decay = 1e-4,
    };
    return c;
}

/* The device optimizer's update, run on the host element by element, must
 * give exactly engine/optim's bits: same coefficients, same operations. */
static void test_optimizer_formulas(void **state)
{
    (void)state;
    const spec_optimizer cfgs[] = {
        optimizer_cfg(OPT_SGD, 0.0, false), optimizer_cfg(OPT_SGD, 0.9, false),
        optimizer_cfg(OPT_SGD, 0.9, true),  optimizer_cfg(OPT_RMSPROP, 0.0, false),
        optimizer_cfg(OPT_ADAM, 0.0, false), optimizer_cfg(OPT_NADAM, 0.0, false),
    };
    enum { N = 37, STEPS = 6 };
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        float ref[N], dev[N], grad[N], slots[2 * N] = {0};
        srand(11 + (unsigned)c);
        for (int i = 0; i < N; i++)
            ref[i] = dev[i] = (float)rand() / RAND_MAX - 0.5f;
        optimizer *o = optim_create(&cfgs[c], N);
        assert_non_null(o);
        int n_slots = optim_slots(&cfgs[c]);
        float m_schedule = 1.0f;
        for (int step = 0; step < STEPS; step++) {
            for (int i = 0; i < N; i++)
                grad[i] = (float)rand() / RAND_MAX - 0.5f;
            float lr = 0.01f * (float)(step + 1);
            optim_step(o, ref, grad, N, lr);
            gpu_optim_coeffs k = gpu_optim_coeffs_for(&cfgs[c], step, lr, &m_schedule);
            for (long i = 0; i < N; i++)
                gpu_optim_update(&k, i, dev, grad, n_slots > 0 ? slots : NULL,
                                 n_slots > 1 ? slots + N : NULL);
            assert_memory_equal(ref, dev, sizeof ref);
        }
        /* The state matches too (after optim's 3-float header). */
        float saved[3 + 2 * N];
        assert_int_equal(optim_state_floats(o), 3 + n_slots * N);
        optim_state_save(o, saved);
        assert_memory_equal(saved + 3, slots, (size_t)n_slots * N * sizeof(float));
        assert_true(saved[2] == m_schedule);
        optim_free(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_rank),
        cmocka_unit_test(test_stage_sequence),
        cmocka_unit_test(test_sync_switch),
        cmocka_unit_test(test_world_size),
        cmocka_unit_test(test_visible_devices),
        cmocka_unit_test(test_device_choose),
        cmocka_unit_test(test_bucket_plan),
        cmocka_unit_test(test_bucket_progress),
        cmocka_unit_test(test_bucket_plan_random),
        cmocka_unit_test(test_bucket_plan_errors),
        cmocka_unit_test(test_conv_plan),
        cmocka_unit_test(test_pool_plan),
        cmocka_unit_test(test_batchnorm_plan),
        cmocka_unit_test(test_softmax_formulas),
        cmocka_unit_test(test_activation_formulas),
        cmocka_unit_test(test_batchnorm_running_rule),
        cmocka_unit_test(test_pool_formulas),
        cmocka_unit_test(test_conv_explicit_padding),
        cmocka_unit_test(test_dropout_rule),
        cmocka_unit_test(test_optimizer_formulas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
