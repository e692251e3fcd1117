/* test_relu_pool.c — relu fused into max pooling: the backend's
 * relu_maxpool ops against the unfused composition (relu, max pooling,
 * pooling backward, relu') on tiled, odd, overlapping and padded
 * geometries with ties, zeros and all-negative windows (same values, and
 * the same routing of the gradient), against finite differences; and the
 * graph fusion in the model: a conv2d with relu read only by a max pooling
 * is fused and trains exactly like the same network with a separate relu
 * layer, one read by two layers is not, and both pass a whole-model
 * gradient check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "backend/rng.h"
#include "model_fixture.h"
#include "cpu/cpu.h"

typedef struct pool_case {
    int c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, batch;
} pool_case;

static const pool_case cases[] = {
    {4, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0, 3},  /* simplecnn: tiled, 14-wide rows */
    {2, 6, 40, 2, 2, 2, 2, 0, 0, 0, 0, 2},   /* tiled, 20-wide rows: 16 + 4 */
    {3, 7, 9, 2, 2, 2, 2, 0, 0, 0, 0, 2},    /* odd: last row and column unread */
    {2, 6, 6, 2, 2, 1, 1, 0, 0, 0, 0, 2},    /* overlapping windows */
    {2, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 3},    /* padded ("same") 3x3 at stride 2 */
    {1, 5, 37, 3, 3, 3, 3, 0, 0, 1, 2, 1},   /* padding on one side only */
};

static pool2d_desc desc_of(const pool_case *t)
{
    pool2d_desc d = {.max_batch = t->batch, .c = t->c, .h = t->h, .w = t->w, .kh = t->kh,
                     .kw = t->kw, .stride_h = t->sh, .stride_w = t->sw, .pad_top = t->pt,
                     .pad_left = t->pl, .pad_bottom = t->pb, .pad_right = t->pr,
                     .mode = POOL_MAX};
    d.oh = (t->h + t->pt + t->pb - t->kh) / t->sh + 1;
    d.ow = (t->w + t->pl + t->pr - t->kw) / t->sw + 1;
    return d;
}

static void *xalloc(size_t n)
{
    void *p = calloc(n > 0 ? n : 1, 1);
    assert_non_null(p);
    return p;
}

/* Values on a coarse grid: many ties, zeros, whole negative windows. */
static void fill_coarse(float *p, long n, rng *g)
{
    for (long i = 0; i < n; i++)
        p[i] = (float)((int)(rng_uniform(g) * 8.0) - 5) * 0.25f;
}

static void run_against_unfused(int ci, const pool_case *t, int threads)
{
    char err[256];
    backend *be = backend_cpu_create(threads, err, sizeof err);
    assert_non_null(be);
    assert_non_null(be->relu_maxpool_forward);
    pool2d_desc d = desc_of(t);
    assert_true(be->pool2d_prepare(be, &d) >= 0);
    long in = (long)t->batch * d.c * d.h * d.w, on = (long)t->batch * d.c * d.oh * d.ow;
    float *x = be->alloc(be, in), *xr = be->alloc(be, in), *y = be->alloc(be, on);
    float *yr = be->alloc(be, on), *dy = be->alloc(be, on), *dx = be->alloc(be, in);
    float *dxr = be->alloc(be, in), *dx0 = be->alloc(be, in);
    uint8_t *am = xalloc((size_t)on);
    rng g = rng_make(5, (uint64_t)ci);
    fill_coarse(x, in, &g);
    fill_coarse(dy, on, &g);
    fill_coarse(dx0, in, &g);

    be->relu_maxpool_forward(be, &d, t->batch, x, y, am);
    be->activation_forward(be, ACT_RELU, 1, in, x, xr);
    be->pool2d_forward(be, &d, t->batch, xr, yr);
    for (long i = 0; i < on; i++)
        if (y[i] != yr[i])
            fail_msg("case %d y[%ld]: fused %g, unfused %g", ci, i, (double)y[i], (double)yr[i]);

    for (int acc = 0; acc <= 1; acc++) {
        memcpy(dx, dx0, (size_t)in * sizeof *dx);
        be->relu_maxpool_backward(be, &d, t->batch, am, y, dy, dx, acc);
        /* Unfused: route through the pool, then relu' (from relu's output). */
        be->pool2d_backward(be, &d, t->batch, xr, yr, dy, dxr, false);
        be->activation_backward(be, ACT_RELU, 1, in, xr, dxr, dxr, false);
        for (long i = 0; i < in; i++) {
            float want = acc ? dx0[i] + dxr[i] : dxr[i];
            if (dx[i] != want)
                fail_msg("case %d (%s) dx[%ld]: fused %g, unfused %g", ci,
                         acc ? "accumulate" : "overwrite", i, (double)dx[i], (double)want);
        }
    }
    float *bufs[] = {x, xr, y, yr, dy, dx, dxr, dx0};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        be->free(be, bufs[i]);
    free(am);
    be->pool2d_release(be, &d);
    be->destroy(be);
}

static void test_ops_match_unfused(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_against_unfused((int)i, &cases[i], threads);
}

/* L = sum r * y against central differences, on distinct values at least
 * 0.01 apart and away from 0 (so no kink lies within eps). */
static void run_finite_differences(int ci, const pool_case *t)
{
    char err[256];
    backend *be = backend_cpu_create(2, err, sizeof err);
    assert_non_null(be);
    pool2d_desc d = desc_of(t);
    assert_true(be->pool2d_prepare(be, &d) >= 0);
    long in = (long)t->batch * d.c * d.h * d.w, on = (long)t->batch * d.c * d.oh * d.ow;
    float *x = be->alloc(be, in), *y = be->alloc(be, on), *r = be->alloc(be, on);
    float *dx = be->alloc(be, in);
    uint8_t *am = xalloc((size_t)on);
    long *perm = xalloc((size_t)in * sizeof *perm);
    rng g = rng_make(9, (uint64_t)ci);
    for (long i = 0; i < in; i++)
        perm[i] = i;
    for (long i = in - 1; i > 0; i--) {
        long j = (long)(rng_uniform(&g) * (double)(i + 1)), s = perm[i];
        perm[i] = perm[j];
        perm[j] = s;
    }
    for (long i = 0; i < in; i++)
        x[i] = (float)(perm[i] - in / 2) * 0.01f + 0.003f;
    for (long i = 0; i < on; i++)
        r[i] = (float)(2.0 * rng_uniform(&g) - 1.0);
    be->relu_maxpool_forward(be, &d, t->batch, x, y, am);
    be->relu_maxpool_backward(be, &d, t->batch, am, y, r, dx, false);
    const float eps = 1e-3f;
    for (long i = 0; i < in; i++) {
        double l[2];
        float saved = x[i];
        for (int s = 0; s < 2; s++) {
            x[i] = saved + (s ? -eps : eps);
            be->relu_maxpool_forward(be, &d, t->batch, x, y, am);
            l[s] = 0.0;
            for (long o = 0; o < on; o++)
                l[s] += (double)r[o] * y[o];
        }
        x[i] = saved;
        double num = (l[0] - l[1]) / (2.0 * eps);
        if (fabs(num - dx[i]) > 1e-3)
            fail_msg("case %d dx[%ld]: analytic %g, numeric %g", ci, i, (double)dx[i], num);
    }
    float *bufs[] = {x, y, r, dx};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        be->free(be, bufs[i]);
    free(am);
    free(perm);
    be->pool2d_release(be, &d);
    be->destroy(be);
}

static void test_ops_finite_differences(void **state)
{
    (void)state;
    for (size_t i = 1; i < sizeof cases / sizeof cases[0]; i++)
        run_finite_differences((int)i, &cases[i]);
}

/* ---- through the model ------------------------------------------------ */

#define JOB(layers)                                                                       \
    "{\"model\": {\"input\": [2, 8, 10], \"layers\": [" layers "]}, \"data\": "          \
    "{\"format\": \"synthetic\", \"num_classes\": 3}, \"training\": {\"loss\": "          \
    "\"categorical_crossentropy\"}}"

typedef struct net {
    job_spec *spec;
    backend *be;
    model *m;
    dataset data;
    int batch;
} net;

static net *net_make(const char *json, int batch)
{
    net *n = xalloc(sizeof *n);
    n->m = model_fixture_open(json, 2, batch, 3, &n->spec, &n->be);
    char err[256];
    n->batch = batch;
    dataset *d = &n->data;
    d->n = batch;
    d->features = n->m->in_size;
    d->shape = n->spec->input;
    d->num_classes = 3;
    d->x = xalloc((size_t)(d->n * d->features) * sizeof(float));
    d->y = xalloc((size_t)d->n * sizeof(int32_t));
    rng g = rng_make(11, 0);
    for (long i = 0; i < d->n * d->features; i++)
        d->x[i] = (float)(2.0 * rng_uniform(&g) - 1.0);
    for (long i = 0; i < d->n; i++)
        d->y[i] = (int32_t)(i % 3);
    assert_int_equal(model_load_range(n->m, d, 0, batch, err, sizeof err), 0);
    return n;
}

static void net_free(net *n)
{
    model_free(n->m);
    n->be->destroy(n->be);
    spec_free(n->spec);
    free(n->data.x);
    free(n->data.y);
    free(n);
}

static double net_loss(net *n)
{
    model_forward(n->m, n->batch, true, 7);
    return model_loss(n->m, n->batch, NULL) / n->batch;
}

static void net_gradcheck(net *n)
{
    model *m = n->m;
    net_loss(n);
    model_backward(m, n->batch);
    float *g = xalloc((size_t)m->n_params * sizeof *g);
    memcpy(g, m->grads, (size_t)m->n_params * sizeof *g);
    long stride = m->n_params > 200 ? m->n_params / 200 : 1;
    const float eps = 1e-3f;
    double l0 = net_loss(n);
    long checked = 0, kinks = 0;
    for (long i = 0; i < m->n_params; i += stride) {
        float saved = m->params[i];
        m->params[i] = saved + eps;
        double lp = net_loss(n);
        m->params[i] = saved - eps;
        double lm = net_loss(n);
        m->params[i] = saved;
        /* A relu or a pooling window switching within eps bends the loss:
         * the two one-sided slopes then disagree far more than the
         * curvature of a smooth loss allows. Such points are skipped. */
        if (fabs(lp - 2.0 * l0 + lm) > 1e-6 + 0.02 * fabs(lp - lm)) {
            kinks++;
            continue;
        }
        checked++;
        double num = (lp - lm) / (2.0 * eps);
        if (fabs(num - g[i]) > 2e-3 + 2e-2 * fabs(num))
            fail_msg("param %ld: analytic %.6g, numeric %.6g", i, (double)g[i], num);
    }
    /* Most points are smooth: the check is not vacuous. */
    assert_true(checked > 4 * kinks);
    free(g);
}

#define CONV_RELU "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\", " \
                  "\"activation\": \"relu\"}"
#define CONV_PLAIN "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\"}"

static void test_model_fusion_trains_like_unfused(void **state)
{
    (void)state;
    /* The second conv's relu goes into the pool; the first conv's stays. */
    net *f = net_make(JOB(CONV_RELU ", " CONV_RELU ", {\"type\": \"maxpool2d\", \"pool\": 2},"
                          "{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}"), 5);
    net *u = net_make(JOB(CONV_RELU ", " CONV_PLAIN ", {\"type\": \"relu\"},"
                          "{\"type\": \"maxpool2d\", \"pool\": 2},"
                          "{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}"), 5);
    assert_int_equal(f->m->layers[0].act, ACT_RELU);
    assert_int_equal(f->m->layers[1].act, ACT_NONE);
    assert_int_equal(f->m->layers[2].act, ACT_RELU);
    assert_int_equal(u->m->layers[3].act, ACT_NONE); /* relu layer in between: not fused */
    assert_int_equal(f->m->n_params, u->m->n_params);
    model_set_params(u->m, f->m->params);
    double lf = net_loss(f), lu = net_loss(u);
    assert_true(lf == lu);
    model_backward(f->m, f->batch);
    model_backward(u->m, u->batch);
    for (long i = 0; i < f->m->n_params; i++)
        if (f->m->grads[i] != u->m->grads[i])
            fail_msg("grad %ld: fused %g, unfused %g", i, (double)f->m->grads[i],
                     (double)u->m->grads[i]);
    net_gradcheck(f);
    net_free(f);
    net_free(u);
}

static void test_model_no_fusion_with_other_reader(void **state)
{
    (void)state;
    /* The conv's relu output is also averaged: the relu must stay. */
    net *n = net_make(JOB(CONV_RELU ", {\"type\": \"maxpool2d\", \"pool\": 2},"
                          "{\"type\": \"avgpool2d\", \"pool\": 2, \"inputs\": [0]},"
                          "{\"type\": \"add\", \"inputs\": [1, 2]},"
                          "{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}"), 4);
    assert_int_equal(n->m->layers[0].act, ACT_RELU);
    assert_int_equal(n->m->layers[1].act, ACT_NONE);
    net_gradcheck(n);
    net_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_match_unfused),
        cmocka_unit_test(test_ops_finite_differences),
        cmocka_unit_test(test_model_fusion_trains_like_unfused),
        cmocka_unit_test(test_model_no_fusion_with_other_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
