/* layer_harness.h — runs one layer of a parsed job spec in isolation on
 * the CPU backend, with random inputs and parameters, and checks its
 * backward pass against central finite differences of the scalar
 * L = sum(r * y) for a fixed random r (so dL/dy = r). Shared by the layer
 * tests; header-only because each test is one executable. */
#ifndef PUNCH_LAYER_HARNESS_H
#define PUNCH_LAYER_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/rng.h"
#include "layers/layer.h"
#include "jobspec/spec.h"
#include "spec_fixture.h"
#include "cpu/cpu.h"

typedef struct harness {
    job_spec *spec;
    backend *be;
    layer l;
    int batch;
    float *x[SPEC_MAX_INPUTS], *dx[SPEC_MAX_INPUTS];
    float *y, *dy, *r;
    float *params, *grads, *state, *aux, *ws;
    uint64_t seed;
} harness;

/* Parse a job whose model is `layers` (JSON array body) on `input`, with a
 * flatten and a dense 2 appended so the spec validates; sequence inputs
 * ({"sequence": [F]}, {"tokens": V}) get max_length steps (0: the default). */
static inline job_spec *harness_spec_steps(const char *input, const char *layers,
                                           const char *loss, int max_length)
{
    char json[4096], steps[48] = "";
    if (max_length > 0)
        snprintf(steps, sizeof steps, ", \"max_length\": %d", max_length);
    /* Synthetic data draws byte values, too large as ids of a small
     * vocabulary: a token model names an (unread) upload instead. */
    const char *format = strstr(input, "tokens") ? "\"npz\", \"train\": \"@tokens.npz\""
                                                 : "\"synthetic\"";
    snprintf(json, sizeof json,
             "{\"model\": {\"input\": %s, \"layers\": [%s, {\"type\": \"flatten\"},"
             " {\"type\": \"dense\", \"units\": 2}]},"
             " \"data\": {\"format\": %s, \"num_classes\": 2%s},"
             " \"training\": {\"loss\": \"%s\"}}",
             input, layers, format, steps, loss ? loss : "mse");
    return spec_fixture_parse(json);
}

static inline job_spec *harness_spec(const char *input, const char *layers, const char *loss)
{
    return harness_spec_steps(input, layers, loss, 0);
}

/* max |a - ref| / max |ref| (max |a - ref| when ref is all zeros): how the
 * convolution algorithms' tests compare one algorithm with another. */
static inline double harness_rel_err(const float *a, const float *ref, long n)
{
    double dmax = 0.0, rmax = 0.0;
    for (long i = 0; i < n; i++) {
        double diff = fabs((double)a[i] - ref[i]);
        dmax = diff > dmax ? diff : dmax;
        rmax = fabs(ref[i]) > rmax ? fabs(ref[i]) : rmax;
    }
    return rmax > 0.0 ? dmax / rmax : dmax;
}

/* A zeroed buffer of n floats (one at least, so n = 0 is not NULL). */
static inline float *harness_fresh(long n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    assert_non_null(p);
    return p;
}

/* Frees the buffers listed: HARNESS_FREE(x, w, dz). */
static inline void harness_free_bufs(float *const *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
}
#define HARNESS_FREE(...)                                                                  \
    harness_free_bufs((float *const[]){__VA_ARGS__},                                       \
                      sizeof((float *const[]){__VA_ARGS__}) / sizeof(float *))

/* A square convolution of the convolution tests: kern x kern, the same
 * stride, dilation (0: 1) and padding on every side, `extra` more at the
 * bottom and right (oneDNN's asymmetric case), groups (0: 1). */
typedef struct harness_conv {
    int batch, c, h, w, k;
    int kern, stride, pad, extra, dil, groups;
} harness_conv;

static inline conv2d_desc harness_conv_desc(harness_conv hc)
{
    int dil = hc.dil > 0 ? hc.dil : 1, span = dil * (hc.kern - 1) + 1;
    return (conv2d_desc){.max_batch = hc.batch, .c = hc.c, .h = hc.h, .w = hc.w, .k = hc.k,
                         .kh = hc.kern, .kw = hc.kern, .stride_h = hc.stride,
                         .stride_w = hc.stride, .pad_top = hc.pad, .pad_left = hc.pad,
                         .pad_bottom = hc.pad + hc.extra, .pad_right = hc.pad + hc.extra,
                         .dil_h = dil, .dil_w = dil,
                         .oh = (hc.h + 2 * hc.pad + hc.extra - span) / hc.stride + 1,
                         .ow = (hc.w + 2 * hc.pad + hc.extra - span) / hc.stride + 1,
                         .groups = hc.groups > 0 ? hc.groups : 1};
}

static inline void harness_fill(float *p, long n, rng *g, float lo, float hi)
{
    for (long i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * (float)rng_uniform(g);
}

static inline float *harness_alloc(harness *h, long n)
{
    float *p = h->be->alloc(h->be, n > 0 ? n : 1);
    assert_non_null(p);
    return p;
}

/* Set the layer's parameters from n floats in tensor order without
 * padding (a dense layer's weight then bias), each tensor at its aligned
 * offset. */
static inline void harness_set_params(harness *h, const float *src, long n)
{
    long packed = 0;
    for (int t = 0; t < h->l.n_tensors && packed < n; t++) {
        const layer_tensor *lt = &h->l.tensors[t];
        if (lt->is_state)
            continue;
        long size = layer_tensor_size(lt);
        if (size > n - packed)
            size = n - packed;
        memcpy(h->params + lt->offset, src + packed, (size_t)size * sizeof *src);
        packed += size;
    }
}

/* Layer `index` of the spec, batch `batch`, threads `threads`; on a
 * sequence input, max_length steps and each sample's length in lengths
 * (NULL: all full; the array must outlive the harness), the inputs'
 * padding steps zeroed as the model keeps them. */
static inline harness *harness_make_seq(const char *input, const char *layers, int index,
                                        int batch, int threads, int max_length,
                                        const int32_t *lengths)
{
    harness *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->spec = harness_spec_steps(input, layers, NULL, max_length);
    char err[256];
    h->be = backend_cpu_create(threads, err, sizeof err);
    assert_non_null(h->be);
    h->batch = batch;
    h->seed = 12345;
    layer *l = &h->l;
    const spec_layer *s = &h->spec->layers[index];
    l->spec = s;
    l->index = index;
    l->ops = layer_ops_for(s->type);
    l->max_batch = batch;
    l->act = layer_final_activation(s);
    l->in_size = spec_shape_size(&s->in_shape);
    l->out_size = spec_shape_size(&s->out_shape);
    l->n_in = s->n_inputs;
    for (int k = 0; k < s->n_inputs; k++) {
        int src = s->inputs[k];
        l->x_size[k] = spec_shape_size(src < 0 ? &h->spec->input
                                               : &h->spec->layers[src].out_shape);
    }
    if (l->ops->setup(l, h->be, err, sizeof err) != 0)
        fail_msg("setup: %s", err);
    rng g = rng_make(99, (uint64_t)index);
    for (int k = 0; k < l->n_in; k++) {
        h->x[k] = harness_alloc(h, batch * l->x_size[k]);
        h->dx[k] = harness_alloc(h, batch * l->x_size[k]);
        harness_fill(h->x[k], batch * l->x_size[k], &g, -1.0f, 1.0f);
        if (lengths && max_length > 0) {
            long per_step = l->x_size[k] / max_length;
            for (int n = 0; n < batch; n++)
                for (long i = (long)lengths[n] * per_step; i < l->x_size[k]; i++)
                    h->x[k][n * l->x_size[k] + i] = 0.0f;
        }
        l->x[k] = h->x[k];
        l->dx[k] = h->dx[k];
    }
    h->y = harness_alloc(h, batch * l->out_size);
    h->dy = harness_alloc(h, batch * l->out_size);
    h->r = harness_alloc(h, batch * l->out_size);
    harness_fill(h->r, batch * l->out_size, &g, -1.0f, 1.0f);
    /* The layer's slice with its alignment padding, zero like the model's. */
    h->params = harness_alloc(h, l->param_span);
    h->grads = harness_alloc(h, l->param_span);
    h->be->zero(h->be, h->params, l->param_span);
    h->be->zero(h->be, h->grads, l->param_span);
    h->state = harness_alloc(h, l->n_state);
    h->aux = harness_alloc(h, l->aux_floats);
    h->ws = harness_alloc(h, l->workspace_floats);
    if (l->ops->init)
        l->ops->init(l, h->params, h->state, &g);
    /* Random biases and gammas too, so no parameter sits at a special value. */
    for (int t = 0; t < l->n_tensors; t++)
        if (!l->tensors[t].is_state)
            harness_fill(h->params + l->tensors[t].offset, layer_tensor_size(&l->tensors[t]),
                         &g, -0.5f, 0.5f);
    if (s->type == LAYER_BATCHNORM)
        for (long i = 0; i < l->n_params / 2; i++)
            h->params[i] += 1.0f; /* gamma, the first tensor */
    l->y = h->y;
    l->dy = h->dy;
    l->params = h->params;
    l->grads = h->grads;
    l->state = h->state;
    l->aux = h->aux;
    l->workspace = h->ws;
    l->lengths = lengths;
    return h;
}

static inline harness *harness_make(const char *input, const char *layers, int index,
                                    int batch, int threads)
{
    return harness_make_seq(input, layers, index, batch, threads, 0, NULL);
}

static inline void harness_free(harness *h)
{
    if (h->l.ops->release)
        h->l.ops->release(&h->l, h->be);
    for (int k = 0; k < h->l.n_in; k++) {
        h->be->free(h->be, h->x[k]);
        h->be->free(h->be, h->dx[k]);
    }
    float *bufs[] = {h->y, h->dy, h->r, h->params, h->grads, h->state, h->aux, h->ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        h->be->free(h->be, bufs[i]);
    h->be->destroy(h->be);
    spec_free(h->spec);
    free(h);
}

static inline double harness_loss(harness *h)
{
    h->l.ops->forward(&h->l, h->be, h->batch, true, h->seed);
    double s = 0.0;
    for (long i = 0; i < h->batch * h->l.out_size; i++)
        s += (double)h->r[i] * h->y[i];
    return s;
}

/* Analytic gradients: forward, dy = r, backward with every dx overwritten. */
static inline void harness_backward(harness *h, bool accumulate)
{
    harness_loss(h);
    memcpy(h->dy, h->r, (size_t)(h->batch * h->l.out_size) * sizeof(float));
    for (int k = 0; k < h->l.n_in; k++)
        h->l.dx_accumulate[k] = accumulate;
    h->l.ops->backward(&h->l, h->be, h->batch);
}

/* Compare the analytic gradient g of the values v (n of them) with finite
 * differences, on up to `samples` evenly spread indices. */
static inline void harness_check(harness *h, float *v, const float *g, long n, const char *what,
                                 float eps, double atol, double rtol)
{
    long step = n > 60 ? n / 60 : 1;
    for (long i = 0; i < n; i += step) {
        float saved = v[i];
        v[i] = saved + eps;
        double lp = harness_loss(h);
        v[i] = saved - eps;
        double lm = harness_loss(h);
        v[i] = saved;
        double num = (lp - lm) / (2.0 * (double)eps);
        double diff = fabs(num - (double)g[i]);
        if (diff > atol + rtol * fabs(num))
            fail_msg("%s %s[%ld]: analytic %.6g, numeric %.6g",
                     spec_layer_type_name(h->l.spec->type), what, i, (double)g[i], num);
    }
}

/* The full check: parameter and input gradients against finite
 * differences, then accumulation (dx += ...) against overwriting. */
static inline void harness_gradcheck(harness *h, float eps, double atol, double rtol)
{
    layer *l = &h->l;
    long np = l->param_span;
    float *g = malloc((size_t)(np + 1) * sizeof *g);
    float *gx[SPEC_MAX_INPUTS] = {0};
    assert_non_null(g);
    harness_backward(h, false);
    memcpy(g, h->grads, (size_t)np * sizeof *g);
    for (int k = 0; k < l->n_in; k++) {
        gx[k] = malloc((size_t)(h->batch * l->x_size[k]) * sizeof(float));
        assert_non_null(gx[k]);
        memcpy(gx[k], h->dx[k], (size_t)(h->batch * l->x_size[k]) * sizeof(float));
    }
    for (int t = 0; t < l->n_tensors; t++) {
        const layer_tensor *lt = &l->tensors[t];
        if (!lt->is_state)
            harness_check(h, h->params + lt->offset, g + lt->offset, layer_tensor_size(lt),
                          "param", eps, atol, rtol);
    }
    for (int k = 0; k < l->n_in; k++)
        harness_check(h, h->x[k], gx[k], h->batch * l->x_size[k], "input", eps, atol, rtol);

    /* Accumulate mode adds to what is there. */
    for (int k = 0; k < l->n_in; k++)
        for (long i = 0; i < h->batch * l->x_size[k]; i++)
            h->dx[k][i] = 0.25f;
    harness_backward(h, true);
    for (int k = 0; k < l->n_in; k++)
        for (long i = 0; i < h->batch * l->x_size[k]; i++)
            if (fabsf(h->dx[k][i] - (gx[k][i] + 0.25f)) > 1e-5f * (1.0f + fabsf(gx[k][i])))
                fail_msg("%s: accumulate dx[%ld] = %g, want %g + 0.25",
                         spec_layer_type_name(l->spec->type), i, (double)h->dx[k][i],
                         (double)gx[k][i]);
    for (int k = 0; k < l->n_in; k++)
        free(gx[k]);
    free(g);
}

#endif
