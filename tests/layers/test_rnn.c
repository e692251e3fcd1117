/* test_rnn.c — the lstm, gru and bidirectional layers on the CPU backend:
 * forward against Keras's equations evaluated here in double precision,
 * backward against finite differences, with mixed and full lengths, both
 * directions, every merge mode and one and two threads; padding steps of
 * y and dx exactly zero; bit-identical reruns; the refusal on a backend
 * without recurrent ops; token ids read as one-hot rows (finite
 * differences, equal to explicit one-hot floats, the kernel gradient's
 * bits on any thread count, ids out of range). */
#include "layer_harness.h"
#include "cpu/cpu.h"

#define EPS 1e-3f
#define ATOL 5e-3
#define RTOL 1e-2
#define MAXU 16 /* the reference's fixed state size */

static const int32_t mixed[3] = {5, 2, 3};

/* One direction of the reference. */
typedef struct ref_cell {
    bool lstm, reset_after, go_backwards, return_sequences, time_order;
    int T, F, U;
} ref_cell;

static double ref_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* Keras's cell over one sample of length L: the states written to y at the
 * rows the layer promises ((T, U) or (U), padding rows zero). */
static void ref_sample(const ref_cell *c, const float *x, int L, const float *w, const float *r,
                       const float *b, double *y)
{
    int U = c->U, G = (c->lstm ? 4 : 3) * U;
    double h[MAXU] = {0}, cs[MAXU] = {0}, z[4 * MAXU], rz[4 * MAXU], hn[MAXU];
    if (c->return_sequences)
        memset(y, 0, sizeof *y * (size_t)(c->T * U));
    for (int s = 0; s < L; s++) {
        int t = c->go_backwards ? L - 1 - s : s;
        for (int g = 0; g < G; g++) {
            z[g] = b[g];
            for (int f = 0; f < c->F; f++)
                z[g] += (double)x[t * c->F + f] * w[f * G + g];
            rz[g] = !c->lstm && c->reset_after ? b[G + g] : 0.0;
            for (int k = 0; k < U; k++)
                rz[g] += h[k] * r[k * G + g];
        }
        for (int u = 0; u < U; u++) {
            if (c->lstm) {
                double i = ref_sigmoid(z[u] + rz[u]), f = ref_sigmoid(z[U + u] + rz[U + u]);
                double g = tanh(z[2 * U + u] + rz[2 * U + u]);
                double o = ref_sigmoid(z[3 * U + u] + rz[3 * U + u]);
                cs[u] = f * cs[u] + i * g;
                hn[u] = o * tanh(cs[u]);
                continue;
            }
            double zg = ref_sigmoid(z[u] + rz[u]), rg = ref_sigmoid(z[U + u] + rz[U + u]);
            double rec;
            if (c->reset_after) {
                rec = rg * rz[2 * U + u];
            } else {
                rec = 0.0;
                for (int k = 0; k < U; k++) {
                    double rk = ref_sigmoid(z[U + k] + rz[U + k]);
                    rec += rk * h[k] * r[k * G + 2 * U + u];
                }
            }
            double hh = tanh(z[2 * U + u] + rec);
            hn[u] = zg * h[u] + (1.0 - zg) * hh;
        }
        memcpy(h, hn, sizeof *h * (size_t)U);
        if (c->return_sequences) {
            int row = c->time_order && c->go_backwards ? L - 1 - s : s;
            memcpy(y + row * U, h, sizeof *h * (size_t)U);
        }
    }
    if (!c->return_sequences)
        memcpy(y, h, sizeof *h * (size_t)U);
}

static const float *tensor(const harness *h, int t)
{
    return h->params + h->l.tensors[t].offset;
}

/* The reference output of the harness's layer, per merge mode for a
 * bidirectional one, compared with what the layer computed. */
static void check_forward(harness *h, const int32_t *lengths)
{
    const spec_layer *s = h->l.spec;
    bool bidir = s->type == LAYER_BIDIRECTIONAL;
    spec_layer_type cell = bidir ? s->rnn : s->type;
    ref_cell c = {cell == LAYER_LSTM, cell == LAYER_GRU && s->reset_after, s->go_backwards,
                  s->return_sequences, false, s->in_shape.dim[0], s->in_shape.dim[1],
                  s->units};
    long per = c.return_sequences ? (long)c.T * c.U : c.U;
    double *ya = malloc(sizeof *ya * (size_t)per), *yb = malloc(sizeof *yb * (size_t)per);
    assert_non_null(ya);
    assert_non_null(yb);
    h->l.ops->forward(&h->l, h->be, h->batch, true, 0);
    for (int n = 0; n < h->batch; n++) {
        int L = lengths ? lengths[n] : c.T;
        const float *x = h->x[0] + (long)n * h->l.in_size;
        const float *y = h->y + (long)n * h->l.out_size;
        ref_sample(&c, x, L, tensor(h, 0), tensor(h, 1), tensor(h, 2), ya);
        if (!bidir) {
            for (long i = 0; i < per; i++)
                if (fabs(y[i] - ya[i]) > 2e-5)
                    fail_msg("%s sample %d [%ld]: %.7g, want %.7g",
                             spec_layer_type_name(s->type), n, i, (double)y[i], ya[i]);
            continue;
        }
        ref_cell cb = c;
        cb.go_backwards = cb.time_order = true;
        ref_sample(&cb, x, L, tensor(h, 3), tensor(h, 4), tensor(h, 5), yb);
        int U = c.U;
        for (long i = 0; i < per; i++) {
            double want = 0.0, got = 0.0;
            switch (s->merge_mode) {
            case MERGE_CONCAT: {
                long row = i / U, u = i % U;
                if (fabs(y[row * 2 * U + u] - ya[i]) > 2e-5 ||
                    fabs(y[row * 2 * U + U + u] - yb[i]) > 2e-5)
                    fail_msg("bidirectional concat sample %d [%ld]: %.7g %.7g, want %.7g %.7g",
                             n, i, (double)y[row * 2 * U + u], (double)y[row * 2 * U + U + u],
                             ya[i], yb[i]);
                continue;
            }
            case MERGE_SUM: want = ya[i] + yb[i]; break;
            case MERGE_AVE: want = 0.5 * (ya[i] + yb[i]); break;
            case MERGE_MUL: want = ya[i] * yb[i]; break;
            }
            got = y[i];
            if (fabs(got - want) > 2e-5)
                fail_msg("bidirectional merge %d sample %d [%ld]: %.7g, want %.7g",
                         (int)s->merge_mode, n, i, got, want);
        }
    }
    free(ya);
    free(yb);
}

/* After a backward pass that overwrote dx: every padding step of y (with
 * return_sequences) and of dx is exactly zero. */
static void check_padding(harness *h, const int32_t *lengths)
{
    const spec_layer *s = h->l.spec;
    int T = s->in_shape.dim[0];
    long fy = h->l.out_size / T, fx = h->l.in_size / T;
    for (long i = 0; i < h->batch * h->l.in_size; i++)
        h->dx[0][i] = 7.0f;
    harness_backward(h, false);
    for (int n = 0; n < h->batch; n++)
        for (int t = lengths[n]; t < T; t++) {
            for (long f = 0; s->return_sequences && f < fy; f++)
                assert_true(h->y[(long)n * h->l.out_size + t * fy + f] == 0.0f);
            for (long f = 0; f < fx; f++)
                assert_true(h->dx[0][(long)n * h->l.in_size + t * fx + f] == 0.0f);
        }
}

/* Finite differences, the reference forward and the padding, for one layer. */
static void check_layer(const char *layer_json, int threads, const int32_t *lengths)
{
    harness *h = harness_make_seq("{\"sequence\": [3]}", layer_json, 0, 3, threads, 5,
                                  lengths);
    check_forward(h, lengths);
    harness_gradcheck(h, EPS, ATOL, RTOL);
    if (lengths)
        check_padding(h, lengths);
    harness_free(h);
}

static void check_cell(const char *type, const char *extra)
{
    for (int threads = 1; threads <= 2; threads++)
        for (int rs = 0; rs < 2; rs++)
            for (int gb = 0; gb < 2; gb++)
                for (int full = 0; full < 2; full++) {
                    char l[256];
                    snprintf(l, sizeof l,
                             "{\"type\": \"%s\", \"units\": 4, \"return_sequences\": %s, "
                             "\"go_backwards\": %s%s}",
                             type, rs ? "true" : "false", gb ? "true" : "false", extra);
                    check_layer(l, threads, full ? NULL : mixed);
                }
}

static void test_lstm(void **state)
{
    (void)state;
    check_cell("lstm", "");
}

static void test_gru(void **state)
{
    (void)state;
    check_cell("gru", "");
    check_cell("gru", ", \"reset_after\": false");
}

static void test_bidirectional(void **state)
{
    (void)state;
    const char *modes[] = {"concat", "sum", "ave", "mul"};
    const char *cells[] = {"\"type\": \"lstm\"", "\"type\": \"gru\"",
                           "\"type\": \"gru\", \"reset_after\": false"};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t m = 0; m < 4; m++)
            for (size_t c = 0; c < 3; c++)
                for (int rs = 0; rs < 2; rs++) {
                    char l[256];
                    snprintf(l, sizeof l,
                             "{\"type\": \"bidirectional\", \"merge_mode\": \"%s\", \"layer\": "
                             "{%s, \"units\": 3, \"return_sequences\": %s}}",
                             modes[m], cells[c], rs ? "true" : "false");
                    check_layer(l, threads, (m + c + (size_t)rs) % 2 ? mixed : NULL);
                }
}

/* A hand-checkable case: one feature, one unit, every weight set by hand,
 * two steps; the numbers below are Keras's equations worked by hand. */
static void test_lstm_by_hand(void **state)
{
    (void)state;
    harness *h = harness_make_seq("{\"sequence\": [1]}",
                                  "{\"type\": \"lstm\", \"units\": 1}", 0, 1, 1, 2, NULL);
    /* kernel (1, 4), recurrent (1, 4), bias (4): gates i, f, c, o. */
    const float p[] = {0.5f, -0.25f, 1.0f, 0.75f, 0.1f, 0.2f, -0.3f, 0.4f,
                       0.0f, 1.0f, 0.0f, 0.0f};
    harness_set_params(h, p, 12);
    h->x[0][0] = 1.0f;
    h->x[0][1] = -2.0f;
    h->l.ops->forward(&h->l, h->be, 1, false, 0);
    /* Step 1 from zero state: i = s(0.5), f = s(0.75), g = tanh(1), o = s(0.75),
     * c1 = i g, h1 = o tanh(c1). Step 2 adds 2 * kernel (x = -2) negated and
     * h1 * recurrent. */
    double i1 = 1 / (1 + exp(-0.5)), g1 = tanh(1.0), o1 = 1 / (1 + exp(-0.75));
    double c1 = i1 * g1, h1 = o1 * tanh(c1);
    double i2 = 1 / (1 + exp(-(-1.0 + 0.1 * h1))), f2 = 1 / (1 + exp(-(1.5 + 0.2 * h1)));
    double g2 = tanh(-2.0 - 0.3 * h1), o2 = 1 / (1 + exp(-(-1.5 + 0.4 * h1)));
    double c2 = f2 * c1 + i2 * g2, h2 = o2 * tanh(c2);
    assert_true(fabs(h->y[0] - h2) < 1e-6);
    harness_free(h);
}

/* Same inputs, same thread count: the same bits, forward and backward. */
static void test_bit_identical(void **state)
{
    (void)state;
    static const int32_t lens[16] = {6, 1, 3, 6, 2, 5, 4, 6, 1, 2, 3, 4, 5, 6, 6, 2};
    const char *layers[] = {
        "{\"type\": \"lstm\", \"units\": 64, \"return_sequences\": true}",
        "{\"type\": \"gru\", \"units\": 64, \"go_backwards\": true}",
        "{\"type\": \"bidirectional\", \"merge_mode\": \"mul\", \"layer\": {\"type\": "
        "\"gru\", \"units\": 64, \"reset_after\": false, \"return_sequences\": true}}",
    };
    for (size_t k = 0; k < sizeof layers / sizeof *layers; k++) {
        harness *a = harness_make_seq("{\"sequence\": [8]}", layers[k], 0, 16, 2, 6, lens);
        harness *b = harness_make_seq("{\"sequence\": [8]}", layers[k], 0, 16, 2, 6, lens);
        harness_backward(a, false);
        harness_backward(b, false);
        harness_backward(b, false);
        size_t ny = (size_t)(16 * a->l.out_size), nx = (size_t)(16 * a->l.in_size);
        assert_memory_equal(a->y, b->y, ny * sizeof(float));
        assert_memory_equal(a->grads, b->grads, (size_t)a->l.param_span * sizeof(float));
        assert_memory_equal(a->dx[0], b->dx[0], nx * sizeof(float));
        harness_free(a);
        harness_free(b);
    }
}

/* Keras's initialisation: orthogonal recurrent kernel rows, forget bias 1. */
static void test_init(void **state)
{
    (void)state;
    harness *h = harness_make_seq("{\"sequence\": [3]}", "{\"type\": \"lstm\", \"units\": 5}",
                                  0, 1, 1, 4, NULL);
    float *p = calloc((size_t)h->l.param_span, sizeof *p);
    assert_non_null(p);
    rng g = rng_make(1, 2);
    h->l.ops->init(&h->l, p, NULL, &g);
    const float *r = p + h->l.tensors[1].offset, *b = p + h->l.tensors[2].offset;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double dot = 0.0;
            for (int c = 0; c < 20; c++)
                dot += (double)r[i * 20 + c] * r[j * 20 + c];
            assert_true(fabs(dot - (i == j)) < 1e-5);
        }
    for (int g2 = 0; g2 < 20; g2++)
        assert_true(b[g2] == (g2 >= 5 && g2 < 10 ? 1.0f : 0.0f));
    free(p);
    harness_free(h);
}

/* Token ids (issue 28): the layer reads each id as a one-hot row. */

#define VOCAB 7

/* Integer ids as floats at the real steps, 0 at padding (as the model
 * keeps it); every id of the vocabulary appears, some several times. */
static void fill_ids(harness *h, int T, const int32_t *lengths)
{
    for (int n = 0; n < h->batch; n++)
        for (int t = 0; t < T; t++) {
            int L = lengths ? lengths[n] : T;
            h->x[0][n * T + t] = t < L ? (float)((5 * n + 3 * t + 1) % VOCAB) : 0.0f;
        }
}

static harness *make_tokens(const char *layer_json, int batch, int threads, int T,
                            const int32_t *lengths)
{
    char input[32];
    snprintf(input, sizeof input, "{\"tokens\": %d}", VOCAB);
    harness *h = harness_make_seq(input, layer_json, 0, batch, threads, T, lengths);
    assert_int_equal(h->l.desc.rnn[0].in, VOCAB);
    assert_true(h->l.desc.rnn[0].one_hot);
    fill_ids(h, T, lengths);
    return h;
}

/* Parameter gradients against finite differences (ids have none: dx must
 * come back untouched). */
static void check_tokens(const char *layer_json, int threads, const int32_t *lengths)
{
    harness *h = make_tokens(layer_json, 3, threads, 5, lengths);
    for (long i = 0; i < 3 * h->l.in_size; i++)
        h->dx[0][i] = 7.0f;
    harness_backward(h, false);
    for (long i = 0; i < 3 * h->l.in_size; i++)
        assert_true(h->dx[0][i] == 7.0f);
    for (int t = 0; t < h->l.n_tensors; t++) {
        const layer_tensor *lt = &h->l.tensors[t];
        harness_check(h, h->params + lt->offset, h->grads + lt->offset,
                      layer_tensor_size(lt), lt->name, EPS, ATOL, RTOL);
    }
    harness_free(h);
}

static const char *const token_layers[] = {
    "{\"type\": \"lstm\", \"units\": 4}",
    "{\"type\": \"lstm\", \"units\": 4, \"return_sequences\": true, \"go_backwards\": true}",
    "{\"type\": \"gru\", \"units\": 4, \"return_sequences\": true}",
    "{\"type\": \"gru\", \"units\": 4, \"reset_after\": false, \"go_backwards\": true}",
    "{\"type\": \"bidirectional\", \"layer\": {\"type\": \"lstm\", \"units\": 3, "
    "\"return_sequences\": true}}",
    "{\"type\": \"bidirectional\", \"merge_mode\": \"mul\", \"layer\": {\"type\": "
    "\"gru\", \"units\": 3}}",
};

static void test_tokens_gradients(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++)
        for (size_t k = 0; k < sizeof token_layers / sizeof *token_layers; k++)
            for (int full = 0; full < 2; full++)
                check_tokens(token_layers[k], threads, full ? NULL : mixed);
}

/* The layer of a on explicit one-hot float rows {T, V} of a's ids (a zero
 * row at padding and for an id outside [0, V)), with a's weights and
 * output gradient. */
static harness *one_hot_twin(const harness *a, const char *layer_json, int threads, int T,
                             const int32_t *lengths)
{
    char input[48];
    snprintf(input, sizeof input, "{\"sequence\": [%d]}", VOCAB);
    harness *b = harness_make_seq(input, layer_json, 0, a->batch, threads, T, lengths);
    assert_false(b->l.desc.rnn[0].one_hot);
    assert_int_equal(a->l.param_span, b->l.param_span);
    memcpy(b->params, a->params, (size_t)a->l.param_span * sizeof(float));
    memcpy(b->r, a->r, (size_t)(a->batch * a->l.out_size) * sizeof(float));
    memset(b->x[0], 0, (size_t)(a->batch * b->l.in_size) * sizeof(float));
    for (int n = 0; n < a->batch; n++)
        for (int t = 0; t < (lengths ? lengths[n] : T); t++) {
            float id = a->x[0][n * T + t];
            if (id >= 0.0f && id < (float)VOCAB)
                b->x[0][(n * T + t) * VOCAB + (int)id] = 1.0f;
        }
    return b;
}

/* a's outputs and parameter gradients are its one-hot twin b's. */
static void expect_twin_results(const harness *a, const harness *b, const char *layer_json)
{
    for (long i = 0; i < a->batch * a->l.out_size; i++)
        if (!(fabsf(a->y[i] - b->y[i]) <= 1e-6f))
            fail_msg("%s y[%ld]: %.8g, one-hot %.8g", layer_json, i, (double)a->y[i],
                     (double)b->y[i]);
    for (long i = 0; i < a->l.param_span; i++)
        if (!(fabsf(a->grads[i] - b->grads[i]) <= 1e-6f * (1.0f + fabsf(b->grads[i]))))
            fail_msg("%s grad[%ld]: %.8g, one-hot %.8g", layer_json, i, (double)a->grads[i],
                     (double)b->grads[i]);
}

/* The same layer and weights on the ids spread into explicit one-hot
 * float rows {T, V}: the same outputs and weight gradients. */
static void test_tokens_match_one_hot(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++)
        for (size_t k = 0; k < sizeof token_layers / sizeof *token_layers; k++) {
            const int32_t *lengths = k % 2 ? NULL : mixed;
            harness *a = make_tokens(token_layers[k], 3, threads, 5, lengths);
            harness *b = one_hot_twin(a, token_layers[k], threads, 5, lengths);
            harness_backward(a, false);
            harness_backward(b, false);
            expect_twin_results(a, b, token_layers[k]);
            harness_free(a);
            harness_free(b);
        }
}

/* The kernel gradient's scatter-add gives the same bits on any thread
 * count. One step, so nothing upstream of it runs a GEMM whose split could
 * differ (h R is exactly zero from the zero state); 64 samples over 7 ids
 * put many rows into each kernel row, and G * samples is past the size
 * where the scatter goes to the pool. */
static void test_tokens_thread_bits(void **state)
{
    (void)state;
    const char *json = "{\"type\": \"lstm\", \"units\": 64, \"return_sequences\": true}";
    harness *ref = make_tokens(json, 64, 1, 1, NULL);
    harness_backward(ref, false);
    long n = layer_tensor_size(&ref->l.tensors[0]);
    const float *dw = ref->grads + ref->l.tensors[0].offset;
    bool nonzero = false;
    for (long i = 0; i < n; i++)
        nonzero = nonzero || dw[i] != 0.0f;
    assert_true(nonzero);
    for (int threads = 2; threads <= 3; threads++) {
        harness *h = make_tokens(json, 64, threads, 1, NULL);
        harness_backward(h, false);
        assert_memory_equal(h->grads + h->l.tensors[0].offset, dw, (size_t)n * sizeof(float));
        harness_free(h);
    }
    harness_free(ref);
}

/* An id outside [0, V) (which the model refuses at batch load) projects
 * to zero and adds to no row of the kernel's gradient: the same results
 * as a zero input row, nothing read or written outside the kernel. */
static void test_tokens_bad_ids(void **state)
{
    (void)state;
    const char *json = "{\"type\": \"gru\", \"units\": 4, \"return_sequences\": true}";
    harness *h = make_tokens(json, 3, 1, 5, NULL);
    h->x[0][1] = (float)VOCAB;
    h->x[0][7] = -1.0f;
    h->x[0][12] = NAN;
    h->x[0][13] = 1e30f;
    harness_backward(h, false);
    harness *b = one_hot_twin(h, json, 1, 5, NULL);
    harness_backward(b, false);
    for (long i = 0; i < 3 * h->l.out_size; i++)
        assert_true(isfinite(h->y[i]));
    expect_twin_results(h, b, json);
    harness_free(b);
    harness_free(h);
}

/* A backend without the recurrent ops (CUDA today) refuses at setup. */
static void test_no_backend_ops(void **state)
{
    (void)state;
    job_spec *spec = harness_spec_steps("{\"sequence\": [3]}",
                                        "{\"type\": \"lstm\", \"units\": 4}", NULL, 5);
    char err[256];
    backend *cpu = backend_cpu_create(1, err, sizeof err);
    assert_non_null(cpu);
    backend be = *cpu;
    be.name = "cuda";
    be.rnn_prepare = NULL;
    be.rnn_forward = NULL;
    be.rnn_backward = NULL;
    layer l = {.spec = &spec->layers[0], .ops = layer_ops_for(LAYER_LSTM), .max_batch = 2};
    assert_int_equal(l.ops->setup(&l, &be, err, sizeof err), -1);
    assert_string_equal(err, "lstm: not available on the cuda backend yet");
    cpu->destroy(cpu);
    spec_free(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm_by_hand),
        cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_gru),
        cmocka_unit_test(test_bidirectional),
        cmocka_unit_test(test_bit_identical),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_no_backend_ops),
        cmocka_unit_test(test_tokens_gradients),
        cmocka_unit_test(test_tokens_match_one_hot),
        cmocka_unit_test(test_tokens_thread_bits),
        cmocka_unit_test(test_tokens_bad_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
