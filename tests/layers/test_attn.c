/* test_attn.c — the transformer layers: layer_norm (per step and flat),
 * gelu (both forms, fused into dense), positional_embedding and
 * sinusoidal_position, and multi_head_attention (self, causal, cross,
 * without biases, with dropout), each backward against finite
 * differences with mixed and full lengths on one and two threads; that a
 * padded key never gets weight; the attention output against a direct
 * O(T^2) computation; Keras's parameter counts; a small encoder that
 * learns through the model; and the spec's refusals by JSON path. */
#include "layer_harness.h"
#include "model_fixture.h"

#include <stdlib.h>
#include <unistd.h>

#include "model/model.h"
#include "cpu/cpu.h"

#define EPS 1e-3f
#define ATOL 5e-3
#define RTOL 1e-2
#define STEPS 6

static const int32_t MIXED[3] = {2, STEPS, 4};

static void check_all(const char *input, const char *layers, int index)
{
    for (int threads = 1; threads <= 2; threads++) {
        const int32_t *lens[2] = {MIXED, NULL};
        for (int k = 0; k < 2; k++) {
            harness *h = harness_make_seq(input, layers, index, 3, threads, STEPS, lens[k]);
            harness_gradcheck(h, EPS, ATOL, RTOL);
            harness_free(h);
        }
    }
}

static void test_layer_norm(void **state)
{
    (void)state;
    check_all("{\"sequence\": [5]}", "{\"type\": \"layer_norm\"}", 0);
    harness *h = harness_make("[7]", "{\"type\": \"layer_norm\", \"epsilon\": 0.001}", 0, 3, 1);
    harness_gradcheck(h, EPS, ATOL, RTOL);
    /* With gamma 1 and beta 0 each row has mean 0 and variance ~1. */
    for (int i = 0; i < 7; i++) {
        h->params[i] = 1.0f;
        h->params[h->l.tensors[1].offset + i] = 0.0f;
    }
    harness_loss(h);
    for (int n = 0; n < 3; n++) {
        double m = 0, v = 0;
        for (int i = 0; i < 7; i++)
            m += h->y[n * 7 + i] / 7.0;
        for (int i = 0; i < 7; i++)
            v += (h->y[n * 7 + i] - m) * (h->y[n * 7 + i] - m) / 7.0;
        assert_true(fabs(m) < 1e-5 && fabs(v - 1.0) < 5e-3);
    }
    harness_free(h);
}

static void test_gelu(void **state)
{
    (void)state;
    check_all("{\"sequence\": [4]}", "{\"type\": \"dense\", \"units\": 5, \"activation\": \"gelu\"}",
              0);
    check_all("{\"sequence\": [4]}",
              "{\"type\": \"dense\", \"units\": 5, \"activation\": \"gelu_exact\"}", 0);
    /* Values: PyTorch's gelu(x) and gelu(x, approximate="tanh") at 1.5. */
    char err[128];
    backend *be = backend_cpu_create(1, err, sizeof err);
    assert_non_null(be);
    float x[2] = {1.5f, -0.5f}, y[2];
    be->gelu_forward(be, true, 2, x, y);
    assert_float_equal(y[0], 1.399789, 1e-5);
    assert_float_equal(y[1], -0.154269, 1e-5);
    be->gelu_forward(be, false, 2, x, y);
    assert_float_equal(y[0], 1.399572, 1e-5);
    assert_float_equal(y[1], -0.154286, 1e-5);
    be->destroy(be);
}

static void test_positions(void **state)
{
    (void)state;
    check_all("{\"sequence\": [4]}", "{\"type\": \"positional_embedding\", \"max_length\": 9}",
              0);
    check_all("{\"sequence\": [4]}", "{\"type\": \"sinusoidal_position\"}", 0);
    /* The fixed table: step 3, features 0..3 of 4. */
    harness *h = harness_make_seq("{\"sequence\": [4]}", "{\"type\": \"sinusoidal_position\"}",
                                  0, 3, 1, STEPS, MIXED);
    harness_loss(h);
    long at = 3 * 4;
    const float want[4] = {(float)sin(3.0), (float)cos(3.0), (float)sin(0.03), (float)cos(0.03)};
    for (int c = 0; c < 4; c++)
        assert_float_equal(h->y[STEPS * 4 + at + c] - h->x[0][STEPS * 4 + at + c], want[c], 1e-5);
    /* Padding steps get nothing added. */
    for (long i = 2 * 4; i < STEPS * 4; i++)
        assert_true(h->y[i] == 0.0f);
    harness_free(h);
}

static void test_attention_gradients(void **state)
{
    (void)state;
    check_all("{\"sequence\": [4]}", "{\"type\": \"multi_head_attention\", \"heads\": 2}", 0);
    check_all("{\"sequence\": [4]}",
              "{\"type\": \"multi_head_attention\", \"heads\": 2, \"key_dim\": 3, "
              "\"causal\": true}", 0);
    check_all("{\"sequence\": [4]}",
              "{\"type\": \"multi_head_attention\", \"heads\": 1, \"use_bias\": false}", 0);
    check_all("{\"sequence\": [4]}",
              "{\"type\": \"dense\", \"units\": 3}, {\"type\": \"multi_head_attention\", "
              "\"heads\": 2, \"key_dim\": 2, \"inputs\": [-1, 0]}", 1);
    /* Dropout: the harness runs training steps with one seed, so the mask
     * is fixed and the function smooth. */
    check_all("{\"sequence\": [4]}",
              "{\"type\": \"multi_head_attention\", \"heads\": 2, \"dropout\": 0.3}", 0);
}

/* The same layer computed directly: softmax over real keys (up to the
 * row when causal), per head, then the output projection. */
static void attention_reference(harness *h, int n, int t, float *out)
{
    const spec_layer *s = h->l.spec;
    int f = 4, hd = s->heads * s->key_dim, len = MIXED[n];
    const float *x = h->x[0] + (long)n * STEPS * f;
    const float *p = h->params;
    const layer_tensor *T = h->l.tensors;
    double o[16] = {0};
    for (int hh = 0; hh < s->heads; hh++) {
        double q[8] = {0}, w[STEPS] = {0}, z = 0, mx = -1e30;
        int last = s->causal ? t + 1 : len;
        for (int c = 0; c < s->key_dim; c++) {
            int col = hh * s->key_dim + c;
            q[c] = p[T[1].offset + col];
            for (int i = 0; i < f; i++)
                q[c] += x[t * f + i] * p[T[0].offset + i * hd + col];
        }
        for (int j = 0; j < last; j++) {
            double dot = 0;
            for (int c = 0; c < s->key_dim; c++) {
                int col = hh * s->key_dim + c;
                double k = p[T[3].offset + col];
                for (int i = 0; i < f; i++)
                    k += x[j * f + i] * p[T[2].offset + i * hd + col];
                dot += q[c] * k;
            }
            w[j] = dot / sqrt(s->key_dim);
            mx = w[j] > mx ? w[j] : mx;
        }
        for (int j = 0; j < last; j++)
            z += (w[j] = exp(w[j] - mx));
        for (int j = 0; j < last; j++)
            for (int c = 0; c < s->key_dim; c++) {
                int col = hh * s->key_dim + c;
                double v = p[T[5].offset + col];
                for (int i = 0; i < f; i++)
                    v += x[j * f + i] * p[T[4].offset + i * hd + col];
                o[col] += w[j] / z * v;
            }
    }
    for (int i = 0; i < f; i++) {
        double y = p[T[7].offset + i];
        for (int c = 0; c < hd; c++)
            y += o[c] * p[T[6].offset + c * f + i];
        out[i] = (float)y;
    }
}

/* Against the direct computation, and padded keys (whatever they hold)
 * never change a real row. */
static void test_attention_values(void **state)
{
    (void)state;
    const char *kinds[2] = {"{\"type\": \"multi_head_attention\", \"heads\": 2}",
                            "{\"type\": \"multi_head_attention\", \"heads\": 2, \"causal\": true}"};
    for (int k = 0; k < 2; k++) {
        harness *h = harness_make_seq("{\"sequence\": [4]}", kinds[k], 0, 3, 2, STEPS, MIXED);
        harness_loss(h);
        float *y0 = malloc(3 * STEPS * 4 * sizeof *y0);
        assert_non_null(y0);
        memcpy(y0, h->y, 3 * STEPS * 4 * sizeof *y0);
        for (int n = 0; n < 3; n++)
            for (int t = 0; t < MIXED[n]; t++) {
                float ref[4];
                attention_reference(h, n, t, ref);
                for (int i = 0; i < 4; i++)
                    assert_float_equal(y0[(n * STEPS + t) * 4 + i], ref[i], 1e-5);
            }
        for (int n = 0; n < 3; n++)
            for (int t = MIXED[n]; t < STEPS; t++)
                for (int i = 0; i < 4; i++)
                    h->x[0][(n * STEPS + t) * 4 + i] = 100.0f + (float)t;
        harness_loss(h);
        for (int n = 0; n < 3; n++)
            assert_memory_equal(y0 + n * STEPS * 4, h->y + n * STEPS * 4,
                                (size_t)MIXED[n] * 4 * sizeof *y0);
        free(y0);
        harness_free(h);
    }
}

static job_spec *parse_job(const char *layers, spec_error *e)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"model\": {\"input\": {\"sequence\": [16]}, \"layers\": [%s, "
             "{\"type\": \"global_avgpool1d\"}, {\"type\": \"dense\", \"units\": 2}]},"
             " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2, \"max_length\": 8}}",
             layers);
    return spec_parse(json, strlen(json), e);
}

/* Keras: MultiHeadAttention(num_heads=2, key_dim=8) on 16 features has
 * 4 * (16 * 16 + 16) = 1088 parameters; with value_dim = key_dim = 3,
 * 3 * (16 * 6 + 6) + 6 * 16 + 16 = 418. LayerNormalization: 2F. */
static void test_parameter_counts(void **state)
{
    (void)state;
    spec_error e;
    job_spec *s = parse_job("{\"type\": \"multi_head_attention\", \"heads\": 2},"
                            "{\"type\": \"multi_head_attention\", \"heads\": 2, \"key_dim\": 3},"
                            "{\"type\": \"layer_norm\"},"
                            "{\"type\": \"positional_embedding\", \"max_length\": 10}",
                            &e);
    assert_non_null(s);
    assert_int_equal(s->layers[0].n_params, 1088);
    assert_int_equal(s->layers[0].key_dim, 8);
    assert_int_equal(s->layers[1].n_params, 418);
    assert_int_equal(s->layers[2].n_params, 32);
    assert_int_equal(s->layers[3].n_params, 160);
    spec_free(s);
}

static void assert_refused(const char *layers, const char *path, const char *words)
{
    spec_error e;
    job_spec *s = parse_job(layers, &e);
    if (s)
        fail_msg("accepted: %s", layers);
    if (strcmp(e.path, path) != 0 || !strstr(e.message, words))
        fail_msg("%s: got %s: %s", layers, e.path, e.message);
}

static void test_spec_refusals(void **state)
{
    (void)state;
    assert_refused("{\"type\": \"multi_head_attention\"}", "model.layers[0].heads", "missing");
    assert_refused("{\"type\": \"multi_head_attention\", \"heads\": 3}",
                   "model.layers[0].key_dim", "do not split");
    assert_refused("{\"type\": \"multi_head_attention\", \"heads\": 2, \"dropout\": 1}",
                   "model.layers[0].dropout", "");
    assert_refused("{\"type\": \"multi_head_attention\", \"heads\": 2, \"causal\": 1}",
                   "model.layers[0].causal", "");
    assert_refused("{\"type\": \"multi_head_attention\", \"heads\": 2, \"inputs\": [-1, -1, -1]}",
                   "model.layers[0].inputs", "cross-attention");
    assert_refused("{\"type\": \"multi_head_attention\", \"heads\": 2, \"value_dim\": 2}",
                   "model.layers[0].value_dim", "");
    assert_refused("{\"type\": \"positional_embedding\", \"max_length\": 4}", "model.layers[0]",
                   "shorter than");
    assert_refused("{\"type\": \"layer_norm\", \"epsilon\": 0}", "model.layers[0].epsilon", "");
    assert_refused("{\"type\": \"conv1d\", \"filters\": 4, \"kernel_size\": 3, "
                   "\"activation\": \"gelu\"}", "model.layers[0].activation", "dense");
}

static job_spec *parse_preset(const char *knobs, spec_error *e)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model\": {\"preset\": \"transformer_classifier\", \"input\": {\"tokens\": 256}%s},"
             " \"data\": {\"format\": \"npz\", \"train\": \"@t\", \"num_classes\": 3,"
             " \"max_length\": 16}}",
             knobs);
    return spec_parse(json, strlen(json), e);
}

/* Keras's counts for the preset: embedding 256 x 32, positions 16 x 32;
 * per block two layer norms (2 x 64), attention 4 x (32 x 32 + 32), the
 * mlp 32 x 128 + 128 and 128 x 32 + 32; the head 32 x 3 + 3. */
static void test_transformer_preset(void **state)
{
    (void)state;
    spec_error e;
    job_spec *s = parse_preset(", \"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32", &e);
    if (!s)
        fail_msg("%s: %s", e.path, e.message);
    long block = 2 * 64 + 4 * (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32);
    assert_int_equal(s->n_params, 256L * 32 + 16 * 32 + 2 * block + 32 * 3 + 3);
    assert_int_equal(s->n_layers, 2 + 2 * 7 + 2);
    assert_int_equal(s->layers[3].heads, 4);
    assert_int_equal(s->layers[3].key_dim, 8);
    spec_free(s);
    static const struct {
        const char *knobs, *path, *words;
    } bad[] = {
        {", \"n_layer\": 0", "model.n_layer", ""},
        {", \"n_layer\": 65", "model.n_layer", ""},
        {", \"n_head\": 3", "model.n_embd", "n_head"},
        {", \"max_length\": 8", "model.max_length", "data.max_length"},
        {", \"block_size\": 8", "model.block_size", "no knob"},
        {", \"n_embd\": \"wide\"", "model.n_embd", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s = parse_preset(bad[i].knobs, &e);
        if (s || strcmp(e.path, bad[i].path) != 0 || !strstr(e.message, bad[i].words))
            fail_msg("%s: got %s: %s", bad[i].knobs, s ? "accepted" : e.path, s ? "" : e.message);
    }
    const char *loose = "{\"model\": {\"input\": [4], \"n_layer\": 2, \"layers\": "
                        "[{\"type\": \"dense\", \"units\": 2}]}, \"data\": {\"format\": "
                        "\"synthetic\", \"num_classes\": 2}}";
    assert_null(spec_parse(loose, strlen(loose), &e));
    assert_string_equal(e.path, "model.n_layer");
}

enum { TV = 50, TE = 16, TH = 2, TL = 2, TT = 8, TC = 3, TN = 4 };
static const int32_t TLENS[TN] = {8, 5, 1, 3};

/* A preset model on the CPU, its parameters initialised and then moved
 * off their initial values (so no bias sits at 0 nor norm at 1), and
 * TN token sequences of TLENS loaded into it; with `next`, labels are the
 * next token at every step (-1 at padding), else the class n % TC. */
static model *torch_fixture(const char *json, bool next, job_spec **spec, backend **be,
                            dataset *d)
{
    model *m = model_fixture_open(json, 2, TN, 7, spec, be);
    char err[256];
    rng g = rng_make(3, 0);
    for (int i = 0; i < m->n_layers; i++)
        for (int t = 0; t < m->layers[i].n_tensors; t++) {
            const layer_tensor *lt = &m->layers[i].tensors[t];
            for (long j = 0; j < layer_tensor_size(lt); j++)
                m->layers[i].params[lt->offset + j] += 0.2f * ((float)rng_uniform(&g) - 0.5f);
        }
    *d = (dataset){.n = TN, .features = TT, .shape = {2, {TT, 1, 1}},
                   .num_classes = next ? TV : TC, .label_steps = next ? TT : 1};
    d->x = calloc(TN * TT, sizeof *d->x);
    d->y = calloc(TN * (size_t)d->label_steps, sizeof *d->y);
    d->len = calloc(TN, sizeof *d->len);
    assert_true(d->x && d->y && d->len);
    for (int n = 0; n < TN; n++) {
        d->len[n] = TLENS[n];
        for (int t = 0; t < TT; t++) {
            int id = 1 + (n * 7 + t * 13) % (TV - 1);
            d->x[n * TT + t] = t < TLENS[n] ? (float)id : 0.0f;
            if (next)
                d->y[n * TT + t] = t < TLENS[n] ? 1 + (id % (TV - 1)) : -1;
        }
        if (!next)
            d->y[n] = n % TC;
    }
    assert_int_equal(model_load_range(m, d, 0, TN, err, sizeof err), 0);
    return m;
}

/* attn_torch.py MODE on the model's tensors and the loaded batch: its
 * n_out floats into out. */
static void torch_reference(const char *mode, const model *m, const dataset *d, float *out,
                            long n_out)
{
    char in[] = "/tmp/punch-attn-XXXXXX";
    int fd = mkstemp(in);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    for (int i = 0; i < m->n_layers; i++)
        for (int t = 0; t < m->layers[i].n_tensors; t++) {
            const layer_tensor *lt = &m->layers[i].tensors[t];
            fwrite(m->layers[i].params + lt->offset, sizeof(float),
                   (size_t)layer_tensor_size(lt), f);
        }
    fwrite(d->x, sizeof(float), TN * TT, f);
    for (int n = 0; n < TN; n++) {
        float len = (float)TLENS[n];
        fwrite(&len, sizeof len, 1, f);
    }
    assert_int_equal(fclose(f), 0);
    char path[sizeof in + 4], cmd[1024];
    snprintf(path, sizeof path, "%s.out", in);
    const char *root = getenv("PUNCH_SOURCE_ROOT");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/layers/attn_torch.py %s %s %s %d %d "
             "%d %d %d %d %d", root ? root : ".", mode, in, path, TV, TE, TH, TL, TT, TC, TN);
    assert_int_equal(system(cmd), 0);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(out, sizeof(float), (size_t)n_out, f), n_out);
    fclose(f);
    unlink(in);
    unlink(path);
}

static void torch_fixture_free(model *m, backend *be, job_spec *spec, dataset *d)
{
    model_free(m);
    be->destroy(be);
    spec_free(spec);
    free(d->x);
    free(d->y);
    free(d->len);
}

/* The transformer_classifier preset's forward pass (eval mode) equals an
 * independent PyTorch model (attn_torch.py) loaded with the same weights,
 * on mixed lengths, within 1e-5. Skipped without /usr/bin/python3 and
 * torch. */
static void test_preset_matches_torch(void **state)
{
    (void)state;
    if (system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0)
        skip();
    const char *json = "{\"model\": {\"preset\": \"transformer_classifier\", \"input\": "
                       "{\"tokens\": 50}, \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16},"
                       " \"data\": {\"format\": \"npz\", \"train\": \"@t\", \"num_classes\": 3,"
                       " \"max_length\": 8}, \"training\": {\"loss\": "
                       "\"categorical_crossentropy\"}}";
    job_spec *spec;
    backend *be;
    dataset d;
    model *m = torch_fixture(json, false, &spec, &be, &d);
    model_forward(m, TN, false, 0);
    model_loss(m, TN, NULL);
    float ref[2 * TN * TC];
    torch_reference("classifier", m, &d, ref, 2 * TN * TC);
    const layer *last = &m->layers[m->n_layers - 1];
    for (int i = 0; i < TN * TC; i++) {
        if (m->output_kind == OUTPUT_SOFTMAX_LOGITS)
            assert_float_equal(last->y[i], ref[i], 1e-5);
        assert_float_equal(m->output[i], ref[TN * TC + i], 1e-5);
    }
    torch_fixture_free(m, be, spec, &d);
}

static const char *const GPT_JOB =
    "{\"model\": {\"preset\": \"gpt\", \"input\": {\"tokens\": 50}, \"n_layer\": 2,"
    " \"n_head\": 2, \"n_embd\": 16, \"block_size\": 8},"
    " \"data\": {\"format\": \"npz\", \"train\": \"@t\", \"num_classes\": 50,"
    " \"max_length\": 8, \"per_step_labels\": true},"
    " \"training\": {\"loss\": \"categorical_crossentropy\","
    " \"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.01}}}";

/* The gpt preset: nanoGPT's parameter count (no output weight of its
 * own), its logits at every real step equal PyTorch's nanoGPT-style
 * model within 1e-5, and a few steps of training lower its loss (the
 * tied table's gradient reaches the optimizer). */
static void test_gpt_preset(void **state)
{
    (void)state;
    job_spec *spec;
    backend *be;
    dataset d;
    model *m = torch_fixture(GPT_JOB, true, &spec, &be, &d);
    /* nanoGPT's count: wte 50 x 16, wpe 8 x 16, per block 2 norms, attention
     * 4 x (16 x 16 + 16), mlp 16 x 64 + 64 + 64 x 16 + 16; ln_f 32. */
    long block = 2 * 32 + 4 * (16 * 16 + 16) + (16 * 64 + 64) + (64 * 16 + 16);
    assert_int_equal(spec->n_params, 50 * 16 + 8 * 16 + 2 * block + 32);
    if (system("/usr/bin/python3 -c 'import torch' 2>/dev/null") == 0) {
        model_forward(m, TN, false, 0);
        float *ref = malloc(TN * TT * TV * sizeof *ref);
        assert_non_null(ref);
        torch_reference("gpt", m, &d, ref, TN * TT * TV);
        const layer *last = &m->layers[m->n_layers - 1];
        assert_int_equal(m->output_kind, OUTPUT_SOFTMAX_LOGITS);
        for (int n = 0; n < TN; n++)
            for (int i = 0; i < TLENS[n] * TV; i++)
                assert_float_equal(last->y[n * TT * TV + i], ref[n * TT * TV + i], 1e-5);
        free(ref);
    }
    /* The token table's gradient (input side plus tied output side)
     * against finite differences of the loss, at rows of ids in use. */
    model_forward(m, TN, false, 0);
    model_loss(m, TN, NULL);
    model_backward(m, TN);
    float *table = m->layers[0].params;
    const float *g = m->layers[0].grads;
    /* The loss is summed over the real steps; the gradient is its mean. */
    double tokens = 0;
    for (int n = 0; n < TN; n++)
        tokens += TLENS[n];
    for (int id = 1; id < TV; id += 7)
        for (int c = 0; c < TE; c += 5) {
            long i = (long)id * TE + c;
            float saved = table[i], eps = 1e-2f;
            table[i] = saved + eps;
            model_forward(m, TN, false, 0);
            double lp = model_loss(m, TN, NULL) / tokens;
            table[i] = saved - eps;
            model_forward(m, TN, false, 0);
            double lm = model_loss(m, TN, NULL) / tokens;
            table[i] = saved;
            double num = (lp - lm) / (2.0 * eps);
            if (fabs(num - g[i]) > 1e-3 + 2e-2 * fabs(num))
                fail_msg("tied table [%d, %d]: analytic %g, numeric %g", id, c, (double)g[i], num);
        }
    optimizer *opt = optim_create(&spec->training.optimizer, m->n_params);
    assert_non_null(opt);
    char err[256];
    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        assert_int_equal(model_load_range(m, &d, 0, TN, err, sizeof err), 0);
        model_forward(m, TN, true, (uint64_t)step);
        double loss = model_loss(m, TN, NULL);
        if (step == 0)
            first = loss;
        last = loss;
        model_backward_step(m, TN, opt, 0.01f);
    }
    if (!(last < 0.5 * first))
        fail_msg("gpt loss %g -> %g: did not fall by half", first, last);
    optim_free(opt);
    torch_fixture_free(m, be, spec, &d);
}

/* A transformer encoder written as layers, through model_create: the
 * class is whether the first step's feature 0 is positive, which only
 * attention can carry to the pooled steps. */
static void test_encoder_learns(void **state)
{
    (void)state;
    const char *json =
        "{\"model\": {\"input\": {\"sequence\": [4]}, \"layers\": ["
        "{\"type\": \"dense\", \"units\": 16},"
        "{\"type\": \"positional_embedding\"},"
        "{\"type\": \"layer_norm\"},"
        "{\"type\": \"multi_head_attention\", \"heads\": 2, \"causal\": false},"
        "{\"type\": \"add\", \"inputs\": [1, 3]},"
        "{\"type\": \"layer_norm\"},"
        "{\"type\": \"dense\", \"units\": 32, \"activation\": \"gelu\"},"
        "{\"type\": \"dense\", \"units\": 16},"
        "{\"type\": \"add\", \"inputs\": [4, 7]},"
        "{\"type\": \"global_avgpool1d\"},"
        "{\"type\": \"dense\", \"units\": 2}]},"
        " \"data\": {\"format\": \"synthetic\", \"num_classes\": 2, \"max_length\": 8},"
        " \"training\": {\"loss\": \"categorical_crossentropy\","
        " \"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.01}}}";
    enum { N = 32, T = 8, F = 4 };
    job_spec *spec;
    backend *be;
    model *m = model_fixture_open(json, 2, N, 5, &spec, &be);
    char err[256];
    dataset d = {.n = N, .features = T * F, .shape = {2, {T, F, 1}}, .num_classes = 2,
                 .label_steps = 1};
    d.x = calloc(N * T * F, sizeof *d.x);
    d.y = calloc(N, sizeof *d.y);
    d.len = calloc(N, sizeof *d.len);
    assert_true(d.x && d.y && d.len);
    rng g = rng_make(8, 0);
    for (int n = 0; n < N; n++) {
        d.len[n] = 3 + n % (T - 2);
        for (int i = 0; i < d.len[n] * F; i++)
            d.x[n * T * F + i] = (float)rng_uniform(&g) * 2.0f - 1.0f;
        d.y[n] = n % 2;
        d.x[n * T * F] = d.y[n] ? 1.0f : -1.0f;
    }
    optimizer *opt = optim_create(&spec->training.optimizer, m->n_params);
    assert_non_null(opt);
    double first = 0, last = 0;
    for (int step = 0; step < 60; step++) {
        assert_int_equal(model_load_range(m, &d, 0, N, err, sizeof err), 0);
        model_forward(m, N, true, (uint64_t)step);
        double loss = model_loss(m, N, NULL) / N;
        if (step == 0)
            first = loss;
        last = loss;
        model_backward_step(m, N, opt, 0.01f);
    }
    if (!(last < 0.3 * first))
        fail_msg("loss %g -> %g: did not fall", first, last);
    optim_free(opt);
    model_free(m);
    be->destroy(be);
    spec_free(spec);
    free(d.x);
    free(d.y);
    free(d.len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_norm),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_attention_gradients),
        cmocka_unit_test(test_attention_values),
        cmocka_unit_test(test_parameter_counts),
        cmocka_unit_test(test_spec_refusals),
        cmocka_unit_test(test_transformer_preset),
        cmocka_unit_test(test_preset_matches_torch),
        cmocka_unit_test(test_gpt_preset),
        cmocka_unit_test(test_encoder_learns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
