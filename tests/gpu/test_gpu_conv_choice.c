/* test_gpu_conv_choice.c — the CUDA backend's convolution algorithm choice
 * and per-batch-size workspace check (engine/gpu/gpu_conv_choice.h), on
 * the host: the same functions gpu_conv.c calls, fed records shaped like
 * cuDNN's perf results and a fake probe in place of cuDNN's queries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu/gpu_conv_choice.h"

#define CAP ((size_t)1 << 30)
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static gpu_algo_perf rec(int algo, bool ok, bool det, gpu_math math, size_t memory)
{
    return (gpu_algo_perf){algo, ok, det, math, memory};
}

/* ---- algorithm choice ----------------------------------------------------- */

static void test_deterministic_preferred_over_faster(void **state)
{
    (void)state;
    /* cuDNN lists fastest first; the non-deterministic one is passed over. */
    gpu_algo_perf p[] = {
        rec(0, true, false, GPU_MATH_FMA, 0),
        rec(3, true, false, GPU_MATH_FMA, 64),
        rec(1, true, true, GPU_MATH_FMA, 128),
    };
    bool det = false;
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, false, &det), 2);
    assert_true(det);
}

static void test_fma_preferred_default_accepted(void **state)
{
    (void)state;
    gpu_algo_perf p[] = {
        rec(5, true, true, GPU_MATH_DEFAULT, 0),
        rec(1, true, true, GPU_MATH_FMA, 0),
    };
    bool det = false;
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, false, &det), 1);
    assert_true(det);
    /* cuDNN 9 may report an FP32 FMA kernel as DEFAULT_MATH: taken when it
     * is the only deterministic one. */
    gpu_algo_perf q[] = {
        rec(0, true, false, GPU_MATH_FMA, 0),
        rec(5, true, true, GPU_MATH_DEFAULT, 0),
    };
    assert_int_equal(gpu_conv_algo_pick(q, N(q), CAP, false, &det), 1);
    assert_true(det);
}

static void test_tensor_op_refused(void **state)
{
    (void)state;
    /* TF32 / conversion would break the FP32 promise, deterministic or not. */
    gpu_algo_perf p[] = {
        rec(1, true, true, GPU_MATH_TENSOR_OP, 0),
        rec(2, true, true, GPU_MATH_TENSOR_OP_ALLOW_CONVERSION, 0),
        rec(0, true, false, GPU_MATH_FMA, 0),
    };
    bool det = true;
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, false, &det), 2);
    assert_false(det);
    gpu_algo_perf only[] = {
        rec(1, true, true, GPU_MATH_TENSOR_OP, 0),
        rec(2, true, false, GPU_MATH_TENSOR_OP_ALLOW_CONVERSION, 0),
    };
    assert_int_equal(gpu_conv_algo_pick(only, N(only), CAP, false, &det), -1);
}

static void test_failed_and_too_large_skipped(void **state)
{
    (void)state;
    gpu_algo_perf p[] = {
        rec(4, false, true, GPU_MATH_FMA, 0),      /* status not SUCCESS */
        rec(2, true, true, GPU_MATH_FMA, CAP + 1), /* over the cap */
        rec(1, true, true, GPU_MATH_DEFAULT, CAP), /* exactly the cap fits */
    };
    bool det = false;
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, false, &det), 2);
    assert_true(det);
    gpu_algo_perf none[] = {rec(4, false, true, GPU_MATH_FMA, 0)};
    assert_int_equal(gpu_conv_algo_pick(none, N(none), CAP, false, &det), -1);
    assert_int_equal(gpu_conv_algo_pick(none, 0, CAP, false, &det), -1);
}

/* training.deterministic false: cuDNN's order decides, whatever the
 * determinism; FP32 and the workspace cap still hold, FMA still first. */
static void test_any_determinism_takes_fastest(void **state)
{
    (void)state;
    gpu_algo_perf p[] = {
        rec(0, true, false, GPU_MATH_FMA, 0),
        rec(3, true, false, GPU_MATH_FMA, 64),
        rec(1, true, true, GPU_MATH_FMA, 128),
    };
    bool det = true;
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, true, &det), 0);
    assert_false(det);
    /* The strict rule on the same records keeps the deterministic one. */
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, false, &det), 2);
    assert_true(det);
    gpu_algo_perf q[] = {
        rec(1, true, false, GPU_MATH_TENSOR_OP, 0),  /* TF32: never */
        rec(0, true, false, GPU_MATH_FMA, CAP + 1),  /* over the cap */
        rec(5, true, false, GPU_MATH_DEFAULT, 0),
        rec(2, true, true, GPU_MATH_FMA, 0),
    };
    assert_int_equal(gpu_conv_algo_pick(q, N(q), CAP, true, &det), 3);
    assert_true(det);
}

static void test_fallback_flagged_non_deterministic(void **state)
{
    (void)state;
    /* No usable deterministic record: the first non-deterministic FMA one,
     * before a DEFAULT one listed earlier. */
    gpu_algo_perf p[] = {
        rec(7, true, true, GPU_MATH_FMA, CAP + 1),
        rec(6, true, false, GPU_MATH_DEFAULT, 0),
        rec(0, true, false, GPU_MATH_FMA, 0),
    };
    bool det = true;
    assert_int_equal(gpu_conv_algo_pick(p, N(p), CAP, false, &det), 2);
    assert_false(det);
    gpu_conv_algos a = {.algo = {1, 1, 0}, .deterministic = {true, true, false}};
    assert_false(gpu_conv_algos_deterministic(&a));
    a.deterministic[2] = true;
    assert_true(gpu_conv_algos_deterministic(&a));
}

/* ---- batch sizes ---------------------------------------------------------- */

/* A fake cuDNN: the workspace each batch needs with the shared algorithms,
 * and counts of the queries made. */
typedef struct fake {
    size_t need[300];
    int need_calls, pick_calls;
    int asked[300];         /* batch sizes asked, in order */
    int n_asked;
    bool fail;
} fake;

static bool fake_need(void *ctx, int batch, const gpu_conv_algos *a, size_t *bytes)
{
    fake *f = ctx;
    (void)a;
    f->need_calls++;
    f->asked[f->n_asked++] = batch;
    *bytes = f->need[batch];
    return !f->fail;
}

static bool fake_pick(void *ctx, int batch, size_t cap, gpu_conv_algos *out)
{
    fake *f = ctx;
    (void)batch;
    f->pick_calls++;
    assert_int_equal(cap, 1000);
    *out = (gpu_conv_algos){.algo = {0, 1, 3}, .deterministic = {true, true, false}};
    return true;
}

static const gpu_conv_algos shared = {.algo = {1, 1, 1}, .deterministic = {true, true, true}};

static void test_only_occurring_sizes_queried(void **state)
{
    (void)state;
    /* An epoch of 1000 samples in batches of 256 (last 232), evaluation of
     * 300 (last 44): the sizes that occur are 256, 232 and 44, and each is
     * checked once, max_batch already at prepare. */
    fake f = {0};
    for (int b = 1; b <= 256; b++)
        f.need[b] = (size_t)b * 2;
    gpu_conv_batches t;
    assert_true(gpu_conv_batches_init(&t, 256, &shared, 1000));
    gpu_conv_probe probe = {fake_need, fake_pick, &f};
    const int run[] = {256, 256, 256, 232, 256, 44, 256, 256, 256, 232, 256, 44};
    for (int i = 0; i < N(run); i++) {
        bool fresh = true;
        const gpu_conv_algos *a = gpu_conv_batches_get(&t, run[i], &probe, &fresh);
        assert_ptr_equal(a, &t.shared);
        assert_false(fresh);
    }
    assert_int_equal(f.need_calls, 2);
    assert_int_equal(f.asked[0], 232);
    assert_int_equal(f.asked[1], 44);
    assert_int_equal(f.pick_calls, 0);
    gpu_conv_batches_free(&t);
}

static void test_size_over_workspace_gets_own_algorithms(void **state)
{
    (void)state;
    /* cuDNN does not promise the need grows with the batch: a short batch
     * needing more than the layer owns runs algorithms chosen under that
     * cap, chosen once. */
    fake f = {0};
    f.need[7] = 1001;
    f.need[8] = 1000;
    gpu_conv_batches t;
    assert_true(gpu_conv_batches_init(&t, 16, &shared, 1000));
    gpu_conv_probe probe = {fake_need, fake_pick, &f};
    bool fresh = false;
    const gpu_conv_algos *a = gpu_conv_batches_get(&t, 7, &probe, &fresh);
    assert_non_null(a);
    assert_true(fresh);
    assert_int_equal(a->algo[2], 3);
    assert_false(gpu_conv_algos_deterministic(a));
    a = gpu_conv_batches_get(&t, 7, &probe, &fresh);
    assert_false(fresh);
    assert_int_equal(a->algo[2], 3);
    a = gpu_conv_batches_get(&t, 8, &probe, &fresh);
    assert_ptr_equal(a, &t.shared);
    assert_int_equal(f.need_calls, 2);
    assert_int_equal(f.pick_calls, 1);
    gpu_conv_batches_free(&t);
}

static void test_batches_errors(void **state)
{
    (void)state;
    fake f = {.fail = true};
    gpu_conv_batches t;
    assert_false(gpu_conv_batches_init(&t, 0, &shared, 0));
    assert_true(gpu_conv_batches_init(&t, 4, &shared, 0));
    gpu_conv_probe probe = {fake_need, fake_pick, &f};
    bool fresh;
    assert_null(gpu_conv_batches_get(&t, 0, &probe, &fresh));
    assert_null(gpu_conv_batches_get(&t, 5, &probe, &fresh));
    assert_null(gpu_conv_batches_get(&t, 2, &probe, &fresh)); /* the query failed */
    f.fail = false;
    assert_ptr_equal(gpu_conv_batches_get(&t, 2, &probe, &fresh), &t.shared);
    gpu_conv_batches_free(&t);
    gpu_conv_batches_free(&t); /* idempotent */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_preferred_over_faster),
        cmocka_unit_test(test_fma_preferred_default_accepted),
        cmocka_unit_test(test_tensor_op_refused),
        cmocka_unit_test(test_failed_and_too_large_skipped),
        cmocka_unit_test(test_fallback_flagged_non_deterministic),
        cmocka_unit_test(test_any_determinism_takes_fastest),
        cmocka_unit_test(test_only_occurring_sizes_queried),
        cmocka_unit_test(test_size_over_workspace_gets_own_algorithms),
        cmocka_unit_test(test_batches_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
