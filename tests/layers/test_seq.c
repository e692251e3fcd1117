/* test_seq.c — the sequence layers and the model's time axis: every new
 * layer's backward against finite differences with mixed and full
 * lengths on one and two threads; masked pooling (padding never wins a
 * max nor counts in a mean); the embedding gradient's bits independent of
 * the thread count; dense and concat per step; windowed pooling over
 * time that shortens each sample; a small token model (embedding ->
 * conv1d -> maxpool1d -> global_maxpool1d -> dense) that learns, whose
 * loss does not move by one bit when padding steps change, and that
 * refuses out-of-range ids; the spec's refusals of what is not built. */
#include "layer_harness.h"
#include "model_fixture.h"

#include "model/model.h"
#include "cpu/cpu.h"

#define EPS 1e-3f
#define ATOL 5e-3
#define RTOL 1e-2
#define STEPS 6

/* Lengths of a batch of 3: short, full and in between. */
static const int32_t MIXED[3] = {2, STEPS, 4};

static void check_seq(const char *input, const char *layers, int index, const int32_t *lengths,
                      int threads)
{
    harness *h = harness_make_seq(input, layers, index, 3, threads, STEPS, lengths);
    harness_gradcheck(h, EPS, ATOL, RTOL);
    harness_free(h);
}

/* Mixed lengths and full ones, on 1 and 2 threads. */
static void check_all(const char *input, const char *layers, int index)
{
    for (int threads = 1; threads <= 2; threads++) {
        check_seq(input, layers, index, MIXED, threads);
        check_seq(input, layers, index, NULL, threads);
    }
}

/* Padding of every output a layer writes is zero (the invariant). */
static void assert_padding_zero(const float *y, const int32_t *lengths, int batch, int steps,
                                long per_step)
{
    for (int n = 0; n < batch; n++)
        for (long i = (long)lengths[n] * per_step; i < steps * per_step; i++)
            if (y[n * steps * per_step + i] != 0.0f)
                fail_msg("sample %d: padding value %ld is %g", n, i,
                         (double)y[n * steps * per_step + i]);
}

static void test_conv1d(void **state)
{
    (void)state;
    check_all("{\"sequence\": [3]}",
              "{\"type\": \"conv1d\", \"filters\": 4, \"kernel_size\": 3, \"padding\": "
              "\"same\", \"activation\": \"tanh\"}", 0);
    check_all("{\"sequence\": [2]}",
              "{\"type\": \"conv1d\", \"filters\": 3, \"kernel\": 2, \"padding\": \"causal\","
              " \"dilation_rate\": 2}", 0);
    check_all("{\"sequence\": [2]}",
              "{\"type\": \"conv1d\", \"filters\": 3, \"kernel_size\": 4, \"padding\": "
              "\"same\", \"use_bias\": false}", 0);
    /* Windows that shorten each sample by its own amount. */
    check_all("{\"sequence\": [2]}",
              "{\"type\": \"conv1d\", \"filters\": 3, \"kernel_size\": 3}", 0);
    check_all("{\"sequence\": [2]}",
              "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 2, \"strides\": 2,"
              " \"padding\": \"same\", \"activation\": \"sigmoid\"}", 0);
    check_all("{\"sequence\": [2]}",
              "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 3, \"stride\": 2,"
              " \"padding\": \"causal\"}", 0);
}

/* A valid window of 3 on samples of 2, 6 and 4 steps: 1 partial, 4 and 2
 * output steps; the rest of each output is padding (zero). */
static void test_conv1d_lengths(void **state)
{
    (void)state;
    harness *h = harness_make_seq("{\"sequence\": [2]}",
                                  "{\"type\": \"conv1d\", \"filters\": 3, \"kernel_size\": 3}",
                                  0, 3, 1, STEPS, MIXED);
    static const int32_t out[3] = {1, 4, 2};
    assert_int_equal(h->spec->layers[0].out_shape.dim[0], 4);
    int len = 2;
    assert_true(layer_seq_length(&h->spec->layers[0], &len));
    assert_int_equal(len, 1);
    harness_backward(h, false);
    assert_padding_zero(h->y, out, 3, 4, 3);
    assert_padding_zero(h->dx[0], MIXED, 3, STEPS, 2);
    harness_free(h);
}

static void test_conv1d_padding_zero(void **state)
{
    (void)state;
    harness *h = harness_make_seq("{\"sequence\": [3]}",
                                  "{\"type\": \"conv1d\", \"filters\": 4, \"kernel_size\": 3,"
                                  " \"padding\": \"same\", \"activation\": \"sigmoid\"}",
                                  0, 3, 1, STEPS, MIXED);
    harness_backward(h, false);
    assert_padding_zero(h->y, MIXED, 3, STEPS, 4);
    assert_padding_zero(h->dx[0], MIXED, 3, STEPS, 3);
    harness_free(h);
}

/* Keras's "same" padding for a sequence of `len` steps alone: with a
 * stride of 2 the padding before depends on the length. */
static int same_pad_before(int len, int span, int stride)
{
    int out = (len + stride - 1) / stride;
    int total = (out - 1) * stride + span - len;
    return total > 0 ? total / 2 : 0;
}

/* Strided "same" windows pad each sample as if it stood alone: lengths 3
 * and 5 get 1 step of padding before a window of 3 (6 steps get none),
 * checked against a direct evaluation of the window sums. */
static void test_same_stride_per_sample(void **state)
{
    (void)state;
    static const int32_t odd[3] = {3, STEPS, 5};
    harness *h = harness_make_seq("{\"sequence\": [2]}",
                                  "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 3,"
                                  " \"strides\": 2, \"padding\": \"same\", \"use_bias\": false}",
                                  0, 3, 1, STEPS, odd);
    harness_loss(h);
    int out_steps = h->spec->layers[0].out_shape.dim[0];
    for (int n = 0; n < 3; n++) {
        int len = odd[n], pad = same_pad_before(len, 3, 2);
        for (int t = 0; t < (len + 1) / 2; t++)
            for (int f = 0; f < 2; f++) {
                double want = 0.0;
                for (int k = 0; k < 3; k++) {
                    int src = t * 2 - pad + k;
                    for (int c = 0; src >= 0 && src < len && c < 2; c++)
                        want += (double)h->params[(k * 2 + c) * 2 + f] *
                                h->x[0][(n * STEPS + src) * 2 + c];
                }
                float got = h->y[(n * out_steps + t) * 2 + f];
                if (fabs(got - want) > 1e-5)
                    fail_msg("conv1d sample %d (length %d) step %d filter %d: %g, alone %g", n,
                             len, t, f, (double)got, want);
            }
    }
    harness_free(h);
    for (int max = 0; max <= 1; max++) {
        h = harness_make_seq("{\"sequence\": [1]}",
                             max ? "{\"type\": \"maxpool1d\", \"pool_size\": 3, \"strides\": 2,"
                                   " \"padding\": \"same\"}"
                                 : "{\"type\": \"avgpool1d\", \"pool_size\": 3, \"strides\": 2,"
                                   " \"padding\": \"same\"}",
                             0, 3, 1, STEPS, odd);
        harness_loss(h);
        out_steps = h->spec->layers[0].out_shape.dim[0];
        for (int n = 0; n < 3; n++) {
            int len = odd[n], pad = same_pad_before(len, 3, 2);
            for (int t = 0; t < (len + 1) / 2; t++) {
                int t0 = t * 2 - pad < 0 ? 0 : t * 2 - pad;
                int t1 = t * 2 - pad + 3 < len ? t * 2 - pad + 3 : len;
                double want = max ? -1e30 : 0.0;
                for (int i = t0; i < t1; i++) {
                    double v = h->x[0][n * STEPS + i];
                    want = max ? (v > want ? v : want) : want + v / (t1 - t0);
                }
                float got = h->y[n * out_steps + t];
                if (fabs(got - want) > 1e-5)
                    fail_msg("%s sample %d (length %d) step %d: %g, alone %g",
                             max ? "maxpool1d" : "avgpool1d", n, len, t, (double)got, want);
            }
        }
        harness_free(h);
    }
    check_all("{\"sequence\": [2]}",
              "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 3, \"strides\": 2,"
              " \"padding\": \"same\"}", 0);
}

static void test_global_pools(void **state)
{
    (void)state;
    check_all("{\"sequence\": [4]}", "{\"type\": \"global_avgpool1d\"}", 0);
    check_all("{\"sequence\": [4]}", "{\"type\": \"global_maxpool1d\"}", 0);
}

/* A huge value planted at every padding step: never the max, never in
 * the mean, and no gradient goes there. */
static void check_masked_pool(const char *type, bool is_max)
{
    char layers[128];
    snprintf(layers, sizeof layers, "{\"type\": \"%s\"}", type);
    harness *h = harness_make_seq("{\"sequence\": [4]}", layers, 0, 3, 2, STEPS, MIXED);
    for (int n = 0; n < 3; n++)
        for (int t = MIXED[n]; t < STEPS; t++)
            for (int f = 0; f < 4; f++)
                h->x[0][(n * STEPS + t) * 4 + f] = 1e30f;
    harness_backward(h, false);
    for (int n = 0; n < 3; n++)
        for (int f = 0; f < 4; f++) {
            double want = is_max ? -1e300 : 0.0;
            for (int t = 0; t < MIXED[n]; t++) {
                double v = h->x[0][(n * STEPS + t) * 4 + f];
                want = is_max ? fmax(want, v) : want + v / MIXED[n];
            }
            assert_true(fabs(h->y[n * 4 + f] - want) < 1e-6);
        }
    assert_padding_zero(h->dx[0], MIXED, 3, STEPS, 4);
    harness_free(h);
}

static void test_masked_pooling(void **state)
{
    (void)state;
    check_masked_pool("global_maxpool1d", true);
    check_masked_pool("global_avgpool1d", false);
}

static void test_pool1d(void **state)
{
    (void)state;
    static const char *const windows[] = {
        "\"pool_size\": 2", "\"pool_size\": 3, \"strides\": 1",
        "\"pool\": 3, \"padding\": \"same\"", "\"pool_size\": 4, \"stride\": 2",
    };
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++)
        for (int max = 0; max <= 1; max++) {
            char layers[160];
            snprintf(layers, sizeof layers, "{\"type\": \"%s\", %s}",
                     max ? "maxpool1d" : "avgpool1d", windows[i]);
            check_all("{\"sequence\": [3]}", layers, 0);
        }
}

/* pool_size 4, strides 2 on 6 steps: 2 whole windows; a sample of 2
 * steps gets one partial window, one of 4 steps one whole one. Padding
 * holds a huge value that no window may see. */
static void test_pool1d_masked(void **state)
{
    (void)state;
    harness *h = harness_make_seq("{\"sequence\": [1]}",
                                  "{\"type\": \"maxpool1d\", \"pool_size\": 4, "
                                  "\"strides\": 2}", 0, 3, 1, STEPS, MIXED);
    for (int n = 0; n < 3; n++)
        for (int t = 0; t < STEPS; t++)
            h->x[0][n * STEPS + t] = t < MIXED[n] ? (float)(t + 10 * n) : 1e30f;
    harness_backward(h, false);
    assert_int_equal(h->spec->layers[0].out_shape.dim[0], 2);
    /* sample 0: window [0, 2) of its 2 steps; sample 2: [0, 4) only. */
    assert_true(h->y[0] == 1.0f && h->y[1] == 0.0f);
    assert_true(h->y[2] == 13.0f && h->y[3] == 15.0f);
    assert_true(h->y[4] == 23.0f && h->y[5] == 0.0f);
    assert_padding_zero(h->dx[0], MIXED, 3, STEPS, 1);
    harness_free(h);
}

static void test_dense_per_step(void **state)
{
    (void)state;
    const char *layers = "{\"type\": \"dense\", \"units\": 5, \"activation\": \"tanh\"}";
    check_all("{\"sequence\": [3]}", layers, 0);
    /* Step t of the output depends on step t of the input only: the same
     * weights on every step, the GEMM's rows being batch * steps. */
    harness *h = harness_make_seq("{\"sequence\": [3]}", layers, 0, 2, 1, STEPS, NULL);
    memcpy(h->x[0] + 3, h->x[0], 3 * sizeof(float));
    harness_loss(h);
    for (int k = 0; k < 5; k++)
        assert_true(h->y[k] == h->y[5 + k]);
    assert_int_equal(h->l.tensors[0].dims[0], 3);
    assert_int_equal(h->l.tensors[0].dims[1], 5);
    harness_free(h);
}

static void test_concat_per_step(void **state)
{
    (void)state;
    /* Two per-step dense layers joined feature-wise at every step. */
    const char *layers = "{\"type\": \"dense\", \"units\": 2},"
                         "{\"type\": \"dense\", \"units\": 3, \"inputs\": [-1]},"
                         "{\"type\": \"concat\", \"inputs\": [0, 1]}";
    harness *h = harness_make_seq("{\"sequence\": [2]}", layers, 2, 2, 1, STEPS, NULL);
    assert_int_equal(h->spec->layers[2].out_shape.rank, 2);
    assert_int_equal(h->spec->layers[2].out_shape.dim[1], 5);
    harness_loss(h);
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < STEPS; t++) {
            for (int k = 0; k < 2; k++)
                assert_true(h->y[(n * STEPS + t) * 5 + k] == h->x[0][(n * STEPS + t) * 2 + k]);
            for (int k = 0; k < 3; k++)
                assert_true(h->y[(n * STEPS + t) * 5 + 2 + k] ==
                            h->x[1][(n * STEPS + t) * 3 + k]);
        }
    harness_gradcheck(h, EPS, ATOL, RTOL);
    harness_free(h);
}

/* Token ids into the harness's input: whole ids in [0, vocab) at real
 * steps, an id far outside the table at padding (never read). */
static void fill_ids(harness *h, const int32_t *lengths, int vocab, unsigned seed)
{
    rng g = rng_make(seed, 0);
    for (int n = 0; n < h->batch; n++)
        for (int t = 0; t < STEPS; t++)
            h->x[0][n * STEPS + t] = t < (lengths ? lengths[n] : STEPS)
                                         ? (float)(int)(rng_uniform(&g) * vocab)
                                         : 1e9f;
}

static void test_embedding(void **state)
{
    (void)state;
    const char *layers = "{\"type\": \"embedding\", \"output_dim\": 3}";
    for (int threads = 1; threads <= 2; threads++)
        for (int full = 0; full <= 1; full++) {
            const int32_t *lengths = full ? NULL : MIXED;
            harness *h = harness_make_seq("{\"tokens\": 7}", layers, 0, 3, threads, STEPS,
                                          lengths);
            fill_ids(h, lengths, 7, 5);
            assert_string_equal(h->l.tensors[0].name, "embeddings");
            assert_int_equal(h->l.tensors[0].dims[0], 7);
            harness_backward(h, false);
            long np = h->l.n_params;
            float *g = malloc((size_t)np * sizeof *g);
            assert_non_null(g);
            memcpy(g, h->grads, (size_t)np * sizeof *g);
            harness_check(h, h->params, g, np, "embeddings", EPS, ATOL, RTOL);
            if (lengths)
                assert_padding_zero(h->y, lengths, 3, STEPS, 3);
            free(g);
            harness_free(h);
        }
}

/* Many repeats of few ids: the scatter-add's bits must not depend on how
 * the vocabulary is split over threads. */
static void test_embedding_deterministic(void **state)
{
    (void)state;
    float *ref = NULL;
    for (int threads = 1; threads <= 3; threads++) {
        harness *h = harness_make_seq("{\"tokens\": 5}",
                                      "{\"type\": \"embedding\", \"output_dim\": 7}", 0, 3,
                                      threads, STEPS, MIXED);
        fill_ids(h, MIXED, 5, 9);
        harness_backward(h, false);
        long np = h->l.n_params;
        if (!ref) {
            ref = malloc((size_t)np * sizeof *ref);
            assert_non_null(ref);
            memcpy(ref, h->grads, (size_t)np * sizeof *ref);
        } else {
            assert_memory_equal(ref, h->grads, (size_t)np * sizeof *ref);
        }
        harness_free(h);
    }
    free(ref);
}

/* ---- the model --------------------------------------------------------- */

#define VOCAB 11
#define T_MAX 12
#define N_SEQ 16
#define MARKER 5

static const char *const TOKEN_JOB =
    "{\"model\": {\"input\": {\"tokens\": 11}, \"layers\": ["
    "{\"type\": \"embedding\", \"output_dim\": 8},"
    "{\"type\": \"conv1d\", \"filters\": 8, \"kernel_size\": 3, \"padding\": \"same\","
    " \"activation\": \"relu\"},"
    "{\"type\": \"maxpool1d\", \"pool_size\": 2},"
    "{\"type\": \"global_maxpool1d\"},"
    "{\"type\": \"dense\", \"units\": 2}]},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@tokens.npz\", \"num_classes\": 2, \"max_length\": 12},"
    " \"training\": {\"loss\": \"categorical_crossentropy\","
    " \"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.02}}}";

typedef struct token_fixture {
    job_spec *spec;
    backend *be;
    model *m;
    dataset d;
} token_fixture;

/* N_SEQ sequences of ids in [1, VOCAB), lengths 3..T_MAX, labelled by
 * whether MARKER occurs among their real steps; padding holds zeros. */
static void token_data(dataset *d)
{
    d->n = N_SEQ;
    d->features = T_MAX;
    d->shape = (spec_shape){2, {T_MAX, 1, 1}};
    d->num_classes = 2;
    d->label_steps = 1;
    d->x = calloc((size_t)(N_SEQ * T_MAX), sizeof *d->x);
    d->y = calloc(N_SEQ, sizeof *d->y);
    d->len = calloc(N_SEQ, sizeof *d->len);
    assert_non_null(d->x);
    assert_non_null(d->y);
    assert_non_null(d->len);
    rng g = rng_make(21, 0);
    for (int n = 0; n < N_SEQ; n++) {
        d->len[n] = 3 + (int32_t)(rng_uniform(&g) * (T_MAX - 2));
        if (d->len[n] > T_MAX)
            d->len[n] = T_MAX;
        for (int t = 0; t < d->len[n]; t++) {
            int id = 1 + (int)(rng_uniform(&g) * (VOCAB - 1));
            d->x[n * T_MAX + t] = (float)(id == MARKER ? MARKER + 1 : id);
        }
        d->y[n] = n % 2;
        if (d->y[n])
            d->x[n * T_MAX + (int)(rng_uniform(&g) * d->len[n])] = MARKER;
    }
}

/* A model of `json` on `threads` threads, parameters from `seed`, on the
 * hand-made token set. */
static token_fixture *token_make_spec(const char *json, int threads, unsigned long seed)
{
    token_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->m = model_fixture_open(json, threads, N_SEQ, seed, &f->spec, &f->be);
    token_data(&f->d);
    return f;
}

static token_fixture *token_make(int threads)
{
    return token_make_spec(TOKEN_JOB, threads, 3);
}

static void token_free(token_fixture *f)
{
    model_free(f->m);
    f->be->destroy(f->be);
    spec_free(f->spec);
    free(f->d.x);
    free(f->d.y);
    free(f->d.len);
    free(f);
}

static double token_loss(token_fixture *f)
{
    char err[256];
    if (model_load_range(f->m, &f->d, 0, N_SEQ, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    model_forward(f->m, N_SEQ, false, 0);
    return model_loss(f->m, N_SEQ, NULL) / N_SEQ;
}

static void test_token_model_learns(void **state)
{
    (void)state;
    token_fixture *f = token_make(2);
    optimizer *opt = optim_create(&f->spec->training.optimizer, f->m->n_params);
    assert_non_null(opt);
    double first = token_loss(f);
    char err[256];
    for (int step = 0; step < 40; step++) {
        assert_int_equal(model_load_range(f->m, &f->d, 0, N_SEQ, err, sizeof err), 0);
        model_forward(f->m, N_SEQ, true, (uint64_t)step);
        model_loss(f->m, N_SEQ, NULL);
        model_backward_step(f->m, N_SEQ, opt, 0.02f);
    }
    double last = token_loss(f);
    if (!(last < 0.5 * first))
        fail_msg("loss %g -> %g: did not fall by half", first, last);
    optim_free(opt);
    token_free(f);
}

/* Whatever the data holds past a sample's length (here ids out of the
 * vocabulary), the loss and every gradient are the same bits. */
static void test_token_model_padding_ignored(void **state)
{
    (void)state;
    token_fixture *f = token_make(2);
    double clean = token_loss(f);
    model_backward(f->m, N_SEQ);
    float *g = malloc((size_t)f->m->n_params * sizeof *g);
    assert_non_null(g);
    memcpy(g, f->m->grads, (size_t)f->m->n_params * sizeof *g);
    for (int n = 0; n < N_SEQ; n++)
        for (int t = f->d.len[n]; t < T_MAX; t++)
            f->d.x[n * T_MAX + t] = (float)(1000 + t * n);
    double dirty = token_loss(f);
    model_backward(f->m, N_SEQ);
    assert_memory_equal(&clean, &dirty, sizeof clean);
    assert_memory_equal(g, f->m->grads, (size_t)f->m->n_params * sizeof *g);
    free(g);
    token_free(f);
}

static void test_token_model_bad_ids(void **state)
{
    (void)state;
    token_fixture *f = token_make(1);
    char err[256] = "";
    f->d.x[3 * T_MAX] = VOCAB;
    assert_int_equal(model_load_range(f->m, &f->d, 0, N_SEQ, err, sizeof err), -1);
    assert_non_null(strstr(err, "token id 11 outside [0, 11)"));
    f->d.x[3 * T_MAX] = 2.5f;
    assert_int_equal(model_load_range(f->m, &f->d, 0, N_SEQ, err, sizeof err), -1);
    assert_non_null(strstr(err, "token id 2.5"));
    f->d.x[3 * T_MAX] = 2.0f;
    f->d.len[4] = T_MAX + 1;
    assert_int_equal(model_load_range(f->m, &f->d, 0, N_SEQ, err, sizeof err), -1);
    assert_non_null(strstr(err, "length 13 outside [1, 12]"));
    token_free(f);
}

/* The whole graph's parameter gradients against finite differences of
 * the mean loss, with mixed lengths: dense per step (the model masks its
 * padding), conv1d causal then valid and strided and a pooling window
 * (new lengths for the layers after), masked average pooling. */
static void test_sequence_model_gradients(void **state)
{
    (void)state;
    const char *json =
        "{\"model\": {\"input\": {\"tokens\": 11}, \"layers\": ["
        "{\"type\": \"embedding\", \"output_dim\": 4},"
        "{\"type\": \"dense\", \"units\": 5, \"activation\": \"sigmoid\"},"
        "{\"type\": \"conv1d\", \"filters\": 3, \"kernel_size\": 2, \"padding\": \"causal\","
        " \"activation\": \"tanh\"},"
        "{\"type\": \"conv1d\", \"filters\": 3, \"kernel_size\": 2, \"strides\": 2},"
        "{\"type\": \"avgpool1d\", \"pool_size\": 3, \"strides\": 2, \"padding\": "
        "\"same\"},"
        "{\"type\": \"global_avgpool1d\"},"
        "{\"type\": \"dense\", \"units\": 2}]},"
        " \"data\": {\"format\": \"npz\", \"train\": \"@tokens.npz\", \"num_classes\": 2, \"max_length\": 12},"
        " \"training\": {\"loss\": \"categorical_crossentropy\"}}";
    for (int threads = 1; threads <= 2; threads++) {
        token_fixture *f = token_make_spec(json, threads, 4);
        model *m = f->m;
        token_loss(f);
        model_backward(m, N_SEQ);
        float *g = malloc((size_t)m->n_params * sizeof *g);
        assert_non_null(g);
        memcpy(g, m->grads, (size_t)m->n_params * sizeof *g);
        long stride = m->n_params > 200 ? m->n_params / 200 : 1;
        for (long i = 0; i < m->n_params; i += stride) {
            float saved = m->params[i];
            m->params[i] = saved + EPS;
            double lp = token_loss(f);
            m->params[i] = saved - EPS;
            double lm = token_loss(f);
            m->params[i] = saved;
            double num = (lp - lm) / (2.0 * EPS);
            if (fabs(num - g[i]) > 2e-3 + 2e-2 * fabs(num))
                fail_msg("param %ld: analytic %.6g, numeric %.6g", i, (double)g[i], num);
        }
        free(g);
        token_free(f);
    }
}

/* What this version does not build is refused by name, before training. */
static void expect_refused(const char *layers, const char *input, const char *needle)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model\": {\"input\": %s, \"layers\": [%s]},"
             " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2, \"max_length\": 8}}",
             input, layers);
    spec_error e;
    job_spec *s = spec_parse(json, strlen(json), &e);
    if (s) {
        spec_free(s);
        fail_msg("accepted: %s", json);
    }
    char msg[600];
    spec_error_str(&e, msg, sizeof msg);
    if (!strstr(msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
}

static void test_spec_refusals(void **state)
{
    (void)state;
    const char *tail = ", {\"type\": \"global_maxpool1d\"}, {\"type\": \"dense\", \"units\": 2}";
    char buf[512];
    snprintf(buf, sizeof buf, "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 5, "
                              "\"dilation_rate\": 2}%s", tail);
    expect_refused(buf, "{\"sequence\": [3]}", "does not fit");
    snprintf(buf, sizeof buf, "{\"type\": \"maxpool1d\", \"pool_size\": 9}%s", tail);
    expect_refused(buf, "{\"sequence\": [3]}", "does not fit");
    snprintf(buf, sizeof buf, "{\"type\": \"avgpool1d\", \"padding\": \"causal\"}%s", tail);
    expect_refused(buf, "{\"sequence\": [3]}", "padding");
    snprintf(buf, sizeof buf, "{\"type\": \"conv1d\", \"filters\": 2}%s", tail);
    expect_refused(buf, "{\"sequence\": [3]}", "kernel_size");
    snprintf(buf, sizeof buf, "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 3, "
                              "\"kernel\": 3, \"padding\": \"same\"}%s", tail);
    expect_refused(buf, "{\"sequence\": [3]}", "not both");
    snprintf(buf, sizeof buf, "{\"type\": \"embedding\", \"output_dim\": 4}%s", tail);
    expect_refused(buf, "{\"sequence\": [3]}", "token ids");
    snprintf(buf, sizeof buf, "{\"type\": \"embedding\", \"output_dim\": 4, \"input_dim\": 5}%s",
             tail);
    expect_refused(buf, "{\"tokens\": 9}", "smaller than the vocabulary");
    expect_refused("{\"type\": \"global_avgpool1d\"}", "[4]", "needs a sequence input");
    expect_refused("{\"type\": \"batchnorm\"}, {\"type\": \"flatten\"}, "
                   "{\"type\": \"dense\", \"units\": 2}",
                   "{\"sequence\": [3]}", "not defined on a sequence");
}

/* The resolved spec of every new layer parses back to the same layers. */
static void test_spec_round_trip(void **state)
{
    (void)state;
    job_spec *a = spec_fixture_parse(
        "{\"model\": {\"input\": {\"tokens\": 30}, \"layers\": ["
        "{\"type\": \"embedding\", \"output_dim\": 6, \"input_dim\": 32, \"mask_zero\": true},"
        "{\"type\": \"conv1d\", \"filters\": 5, \"kernel_size\": 3, \"strides\": 2,"
        " \"dilation_rate\": 1, \"padding\": \"causal\", \"activation\": \"relu\","
        " \"use_bias\": false},"
        "{\"type\": \"avgpool1d\", \"pool_size\": 3, \"padding\": \"same\"},"
        "{\"type\": \"dense\", \"units\": 4},"
        "{\"type\": \"global_maxpool1d\"},"
        "{\"type\": \"dense\", \"units\": 2}]},"
        " \"data\": {\"format\": \"npz\", \"train\": \"@tokens.npz\", \"num_classes\": 2, \"max_length\": 20}}");
    json_t *j = spec_to_json(a);
    assert_non_null(j);
    spec_error e;
    job_spec *b = spec_parse_json(j, &e);
    json_decref(j);
    assert_non_null(b);
    assert_int_equal(a->n_layers, b->n_layers);
    assert_int_equal(a->n_params, b->n_params);
    for (int i = 0; i < a->n_layers; i++) {
        const spec_layer *x = &a->layers[i], *y = &b->layers[i];
        assert_int_equal(x->type, y->type);
        assert_memory_equal(&x->out_shape, &y->out_shape, sizeof x->out_shape);
        assert_int_equal(x->kernel[0], y->kernel[0]);
        assert_int_equal(x->stride[0], y->stride[0]);
        assert_int_equal(x->pad[0], y->pad[0]);
        assert_int_equal(x->padding, y->padding);
        assert_int_equal(x->activation, y->activation);
        assert_int_equal(x->use_bias, y->use_bias);
        assert_int_equal(x->mask_zero, y->mask_zero);
        assert_int_equal(x->input_dim, y->input_dim);
    }
    /* 20 steps -> causal stride 2: 10 -> pool 3 same, stride 3: 4. */
    assert_int_equal(a->layers[1].out_shape.dim[0], 10);
    assert_int_equal(a->layers[2].out_shape.dim[0], 4);
    assert_int_equal(a->layers[0].n_params, 32 * 6);
    spec_free(a);
    spec_free(b);
}

/* Per-step labels (data.per_step_labels) need an output at every step:
 * a model with one output a sample is refused with a message saying
 * what to give (tests/sequences/test_seq_steps.c trains the ones that
 * have it). */
static void test_per_step_labels_refused(void **state)
{
    (void)state;
    job_spec *s = spec_fixture_parse(
        "{\"model\": {\"input\": {\"sequence\": [3]}, \"layers\": ["
        "{\"type\": \"dense\", \"units\": 2}, {\"type\": \"flatten\"},"
        "{\"type\": \"dense\", \"units\": 2}]},"
        " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2, \"max_length\": 4}}");
    s->data.per_step_labels = true;
    char err[256];
    backend *be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(be);
    model *m = model_create(s, be, 4, err, sizeof err);
    assert_null(m);
    assert_non_null(strstr(err, "needs a last layer with an output at every input step"));
    be->destroy(be);
    spec_free(s);
}

/* Branches that shorten time differently cannot meet: a strided "same"
 * conv1d keeps ceil(L / 2) steps, a "valid" pool of 2 floor(L / 2), so a
 * sample of 3 steps would reach the add with 2 and 1. Alike branches pass. */
static void test_merge_lengths_refused(void **state)
{
    (void)state;
    static const char *const fmt =
        "{\"model\": {\"input\": {\"sequence\": [2]}, \"layers\": ["
        "{\"type\": \"conv1d\", \"filters\": 2, \"kernel_size\": 3, \"strides\": 2,"
        " \"padding\": \"same\"},"
        "{\"type\": \"%s\", \"pool_size\": 2, \"padding\": \"%s\", \"inputs\": [-1]},"
        "{\"type\": \"add\", \"inputs\": [0, 1]}, {\"type\": \"global_maxpool1d\"},"
        "{\"type\": \"dense\", \"units\": 2}]},"
        " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2, \"max_length\": 6}}";
    char err[512], json[1024];
    backend *be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(be);
    snprintf(json, sizeof json, fmt, "maxpool1d", "valid");
    job_spec *s = spec_fixture_parse(json);
    assert_non_null(s);
    model *m = model_create(s, be, 4, err, sizeof err);
    assert_null(m);
    if (!strstr(err, "model.layers[2]: its inputs shorten time differently: a sequence of 3 "
                     "steps reaches it with 2 steps from layers[0] and 1 from layers[1]"))
        fail_msg("unexpected refusal: %s", err);
    spec_free(s);
    snprintf(json, sizeof json, fmt, "avgpool1d", "same");
    s = spec_fixture_parse(json);
    assert_non_null(s);
    m = model_create(s, be, 4, err, sizeof err);
    if (!m)
        fail_msg("alike branches refused: %s", err);
    model_free(m);
    spec_free(s);
    be->destroy(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_conv1d_padding_zero),
        cmocka_unit_test(test_same_stride_per_sample),
        cmocka_unit_test(test_conv1d_lengths),
        cmocka_unit_test(test_global_pools),
        cmocka_unit_test(test_masked_pooling),
        cmocka_unit_test(test_pool1d),
        cmocka_unit_test(test_pool1d_masked),
        cmocka_unit_test(test_dense_per_step),
        cmocka_unit_test(test_concat_per_step),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_embedding_deterministic),
        cmocka_unit_test(test_token_model_learns),
        cmocka_unit_test(test_token_model_padding_ignored),
        cmocka_unit_test(test_token_model_bad_ids),
        cmocka_unit_test(test_sequence_model_gradients),
        cmocka_unit_test(test_spec_refusals),
        cmocka_unit_test(test_spec_round_trip),
        cmocka_unit_test(test_per_step_labels_refused),
        cmocka_unit_test(test_merge_lengths_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
