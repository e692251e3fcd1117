/* test_step_alloc.c — a training step allocates nothing (issue 7: buffers
 * are allocated once per job). This executable replaces malloc and its
 * relatives with counting wrappers around glibc's, warms a model up for two
 * steps, then counts every allocation made on any thread during the next
 * steps: the single trainer's step (gather, forward, loss with metrics,
 * backward with the optimizer fused), the plain backward and optimizer
 * step, and inference. Every layer kind and every optimizer is covered.
 *
 * GEMMs run in OpenBLAS here, with the core type meson's test sets
 * (Haswell, allocation-free per call): oneDNN's sgemm takes a packing
 * buffer from the allocator on every call (engine/bench/FINDINGS.md),
 * which the test cannot forbid. It bounds it instead: with the build's
 * default GEMM library, a step allocates at most once per oneDNN call
 * (dnnl_sgemm is interposed and counted like malloc), and nothing without
 * oneDNN. Convolutions likewise run the engine's own algorithms here
 * (cpu_conv_dnnl_disable): oneDNN's primitives allocate their execution
 * context's argument map on every call. The test bounds that too: with
 * oneDNN's convolutions on, a step allocates at most CONV_EXEC_ALLOCS
 * times per primitive run (dnnl_primitive_execute is interposed and
 * counted). Under AddressSanitizer the wrappers would displace its
 * allocator, so the test is built without them and skips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef PUNCH_HAVE_DNNL
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#endif

#include "cpu/cpu_backend.h"
#include "cpu/cpu_conv.h"
#include "model/model.h"
#include "cpu/threadpool.h"
#include "train_test_util.h"
#include "cpu/cpu.h"

#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_COUNTING 0
#else
#define ALLOC_COUNTING 1
#endif

#if ALLOC_COUNTING
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static atomic_bool counting;
static atomic_long allocations;

/* Calls of oneDNN's sgemm while counting (stays 0 without oneDNN). */
static atomic_long gemm_calls;
/* Runs of oneDNN primitives (convolutions and their reorders) likewise. */
static atomic_long exec_calls;

/* Allocations one primitive run may make (oneDNN 2.6 measured 5 to 6:
 * the execution context's argument map and its nodes). */
#define CONV_EXEC_ALLOCS 8

static void alloc_note(void)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
    alloc_note();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    alloc_note();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    alloc_note();
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    alloc_note();
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    alloc_note();
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    alloc_note();
    void *p = __libc_memalign(align, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

#define JOB(model, optimizer)                                                              \
    "{\"model\": " model ", \"data\": {\"format\": \"synthetic\", \"num_classes\": 10}, "  \
    "\"training\": {\"loss\": \"categorical_crossentropy\", \"metrics\": [\"accuracy\", " \
    "\"mse\", \"mae\"], \"optimizer\": " optimizer "}}"

#define PRESET(name) "{\"preset\": \"" name "\", \"input\": [1, 28, 28]}"

/* The residual example's graph with batchnorm, avgpool, dropout and the
 * other activations added. */
static const char *const ZOO_MODEL =
    "{\"input\": [1, 28, 28], \"layers\": ["
    "{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"padding\": \"same\", "
    "\"activation\": \"relu\"},"
    "{\"type\": \"batchnorm\"},"
    "{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"padding\": \"same\", "
    "\"activation\": \"tanh\"},"
    "{\"type\": \"add\", \"inputs\": [1, 2]},"
    "{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 1, \"inputs\": [1]},"
    "{\"type\": \"concat\", \"inputs\": [3, 4]},"
    "{\"type\": \"avgpool2d\", \"pool\": 2},"
    "{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"stride\": 2, "
    "\"padding\": \"valid\", \"activation\": \"sigmoid\"},"
    "{\"type\": \"maxpool2d\", \"pool\": 2},"
    "{\"type\": \"flatten\"},"
    "{\"type\": \"dense\", \"units\": 32, \"activation\": \"relu\"},"
    "{\"type\": \"dropout\", \"rate\": 0.3},"
    "{\"type\": \"dense\", \"units\": 10, \"activation\": \"softmax\"}]}";

/* One step of the single trainer (engine/train/train.c: train_step), then
 * the plain backward and optimizer step, then inference on the batch. */
static void run_step(model *m, optimizer *opt, const dataset *d, int64_t *idx, int batch,
                     int step)
{
    char err[256];
    for (int r = 0; r < batch; r++)
        idx[r] = (r * 7 + step * 13) % d->n;
    assert_int_equal(model_load_batch(m, d, idx, batch, err, sizeof err), 0);
    model_forward(m, batch, true, (uint64_t)step);
    batch_metrics b;
    model_loss(m, batch, &b);
    model_backward_step(m, batch, opt, 1e-3f);
    model_forward(m, batch, true, (uint64_t)step + 1000);
    model_loss(m, batch, NULL);
    model_backward(m, batch);
    model_optimizer_step(m, opt, 1e-3f);
    assert_int_equal(model_load_range(m, d, step % 2, batch, err, sizeof err), 0);
    model_forward(m, batch, false, 0);
}

/* Allocations made by `steps` steps after two warm-up steps. */
static long count_step_allocations(const char *job, int threads, int batch, int steps)
{
    job_spec *s = spec_fixture_parse(job);
    char err[256];
    backend *be = backend_cpu_create(threads, err, sizeof err);
    assert_non_null(be);
    model *m = tt_make_model(s, be, batch);
    optimizer *opt = optim_create(&s->training.optimizer, m->n_params);
    assert_non_null(opt);
    dataset d;
    tt_make_data(&d, m, 3L * batch);
    int64_t *idx = malloc((size_t)batch * sizeof *idx);
    assert_non_null(idx);
    for (int step = 0; step < 2; step++)
        run_step(m, opt, &d, idx, batch, step);
    atomic_store(&allocations, 0);
    atomic_store(&gemm_calls, 0);
    atomic_store(&exec_calls, 0);
    atomic_store(&counting, true);
    for (int step = 2; step < 2 + steps; step++)
        run_step(m, opt, &d, idx, batch, step);
    atomic_store(&counting, false);
    long n = atomic_load(&allocations);
    free(idx);
    tt_free_all(&d, opt, m, be, s);
    return n;
}

static void expect_no_allocation(const char *name, const char *job, int threads, int batch)
{
    long n = count_step_allocations(job, threads, batch, 3);
    printf("%s, %d thread(s), batch %d: %ld allocations in 3 steps\n", name, threads, batch, n);
    if (n != 0)
        fail_msg("%s: %ld allocations in 3 training steps (expected none)", name, n);
}

#ifdef PUNCH_HAVE_DNNL
typedef dnnl_status_t (*dnnl_sgemm_fn)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float,
                                       const float *, dnnl_dim_t, const float *, dnnl_dim_t,
                                       float, float *, dnnl_dim_t);
static dnnl_sgemm_fn real_dnnl_sgemm;

/* The engine's calls land here (this executable's definition wins, as
 * malloc's does) and go on to libdnnl's, counted while counting is on. */
dnnl_status_t dnnl_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
                         float alpha, const float *A, dnnl_dim_t lda, const float *B,
                         dnnl_dim_t ldb, float beta, float *C, dnnl_dim_t ldc)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&gemm_calls, 1, memory_order_relaxed);
    return real_dnnl_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

typedef dnnl_status_t (*dnnl_execute_fn)(const_dnnl_primitive_t, dnnl_stream_t, int,
                                         const dnnl_exec_arg_t *);
static dnnl_execute_fn real_dnnl_execute;

/* As dnnl_sgemm: the engine's primitive runs, counted. */
dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t primitive, dnnl_stream_t stream,
                                     int nargs, const dnnl_exec_arg_t *args)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&exec_calls, 1, memory_order_relaxed);
    return real_dnnl_execute(primitive, stream, nargs, args);
}
#endif

static int setup(void **state)
{
    (void)state;
#ifdef PUNCH_HAVE_DNNL
    /* Resolved before any counting: dlsym may allocate. */
    real_dnnl_sgemm = (dnnl_sgemm_fn)dlsym(RTLD_NEXT, "dnnl_sgemm");
    assert_non_null(real_dnnl_sgemm);
    real_dnnl_execute = (dnnl_execute_fn)dlsym(RTLD_NEXT, "dnnl_primitive_execute");
    assert_non_null(real_dnnl_execute);
#endif
    cpu_sgemm_force_openblas(true);
    cpu_conv_dnnl_disable(true);
    return 0;
}

static void test_presets(void **state)
{
    (void)state;
    static const char *const adam = "{\"name\": \"adam\"}";
    char job[2048];
    snprintf(job, sizeof job, JOB(PRESET("mlp"), "%s"), adam);
    expect_no_allocation("mlp", job, 2, 64);
    expect_no_allocation("mlp", job, 1, 17);
    snprintf(job, sizeof job, JOB(PRESET("simplecnn"), "%s"), adam);
    expect_no_allocation("simplecnn", job, 2, 64);
    snprintf(job, sizeof job, JOB(PRESET("convnet"), "%s"), adam);
    expect_no_allocation("convnet", job, 2, 16);
}

static void test_layers_and_optimizers(void **state)
{
    (void)state;
    static const char *const optimizers[] = {
        "{\"name\": \"sgd\", \"momentum\": 0.9, \"nesterov\": true, \"decay\": 0.01}",
        "{\"name\": \"rmsprop\"}",
        "{\"name\": \"nadam\", \"weight_decay\": 0.001}",
        "{\"name\": \"adamw\", \"weight_decay\": 0.1}",
    };
    char job[4096];
    for (size_t i = 0; i < sizeof optimizers / sizeof *optimizers; i++) {
        snprintf(job, sizeof job, JOB("%s", "%s"), ZOO_MODEL, optimizers[i]);
        expect_no_allocation(optimizers[i], job, 2, 24);
    }
}

/* Chunk work that allocates once per chunk, on whichever pool thread runs
 * it. */
static void alloc_chunk(void *ctx, long begin, long end, int tid)
{
    (void)ctx;
    (void)begin;
    (void)end;
    (void)tid;
    free(malloc(64));
}

/* The zeros above mean something only if the wrappers see allocations,
 * on the pool's threads as well as the caller's: 8 chunks that allocate
 * once each count 8. Then what the build's default GEMM library adds to
 * an mlp step: with oneDNN, its GEMMs run (the counter sees them) and
 * allocate at most one packing buffer per call, nothing else allocating;
 * without it, nothing. */
static void test_counter_sees_every_thread(void **state)
{
    (void)state;
    thread_pool *pool = pool_create(2);
    assert_non_null(pool);
    atomic_store(&allocations, 0);
    atomic_store(&counting, true);
    pool_run_chunks(pool, 8, 8, alloc_chunk, NULL);
    atomic_store(&counting, false);
    pool_free(pool);
    assert_int_equal(atomic_load(&allocations), 8);

    char job[2048];
    snprintf(job, sizeof job, JOB(PRESET("mlp"), "%s"), "{\"name\": \"adam\"}");
    cpu_sgemm_force_openblas(false);
    long n = count_step_allocations(job, 2, 64, 3);
    cpu_sgemm_force_openblas(true);
    long calls = atomic_load(&gemm_calls);
#ifdef PUNCH_HAVE_DNNL
    assert_true(calls > 0);
#else
    assert_int_equal(calls, 0);
#endif
    if (n > calls)
        fail_msg("mlp with the default GEMM library: %ld allocations in 3 steps, more than its "
                 "%ld oneDNN GEMM calls", n, calls);
}

/* What oneDNN's convolutions add to a step of convnet (its 5x5 layers
 * made 3x3, so oneDNN takes the second): some primitive runs, each
 * allocating at most CONV_EXEC_ALLOCS times; without oneDNN, nothing. */
static void test_dnnl_conv_bounded(void **state)
{
    (void)state;
    static const char *const conv_model =
        "{\"input\": [1, 28, 28], \"layers\": ["
        "{\"type\": \"conv2d\", \"filters\": 32, \"kernel\": 3, \"padding\": \"same\", "
        "\"activation\": \"relu\"},"
        "{\"type\": \"maxpool2d\", \"pool\": 2},"
        "{\"type\": \"conv2d\", \"filters\": 64, \"kernel\": 3, \"padding\": \"same\", "
        "\"activation\": \"relu\"},"
        "{\"type\": \"maxpool2d\", \"pool\": 2},"
        "{\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 10, \"activation\": \"softmax\"}]}";
    char job[2048];
    snprintf(job, sizeof job, JOB("%s", "%s"), conv_model, "{\"name\": \"adam\"}");
    cpu_conv_dnnl_disable(false);
    long n = count_step_allocations(job, 2, 16, 3);
    cpu_conv_dnnl_disable(true);
    long runs = atomic_load(&exec_calls);
    printf("convnet 3x3 with oneDNN's convolutions: %ld allocations, %ld primitive runs\n", n,
           runs);
#ifdef PUNCH_HAVE_DNNL
    assert_true(runs > 0);
#else
    assert_int_equal(runs, 0);
#endif
    if (n > CONV_EXEC_ALLOCS * runs)
        fail_msg("oneDNN convolutions: %ld allocations in 3 steps, more than %d per primitive "
                 "run (%ld runs)", n, CONV_EXEC_ALLOCS, runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_layers_and_optimizers),
        cmocka_unit_test(test_counter_sees_every_thread),
        cmocka_unit_test(test_dnnl_conv_bounded),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
#else
int main(void)
{
    printf("skipped: built with AddressSanitizer, whose allocator the counting wrappers "
           "would displace\n");
    return 77;
}
#endif
