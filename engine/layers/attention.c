/* attention.c — multi_head_attention, Keras's MultiHeadAttention: the
 * query input {T, F} and the key/value input {T, F_kv} (the same tensor
 * for self-attention; the second of "inputs" for cross-attention) are
 * projected to heads x key_dim, attended per head by the backend's fused
 * kernel (backend.h attention_forward: padded keys get no weight, padded
 * query rows give zeros), and projected back to F by the output kernel.
 *
 * Parameters, in Keras's order and shapes: query, key, value kernels
 * {F_in, heads, key_dim} each with a bias {heads, key_dim}, then the
 * output kernel {heads, key_dim, F} and its bias {F}. Every projection is
 * one GEMM over batch x T rows (the kernels read as {F_in, heads *
 * key_dim} matrices). Buffers: q, k, v, the attention output and the
 * row log-sum-exps in aux (kept from forward to backward); their
 * gradients in the shared workspace (backward only). */
#include "layers/layer.h"

#include <stdio.h>

enum { ATT_QK, ATT_QB, ATT_KK, ATT_KB, ATT_VK, ATT_VB, ATT_OK, ATT_OB };

typedef struct attention_dims {
    int steps, f, fkv, hd;
    long rows_max;   /* max_batch * steps */
} attention_dims;

static attention_dims attention_dims_of(const layer *l)
{
    const spec_layer *s = l->spec;
    attention_dims d;
    d.steps = s->in_shape.dim[0];
    d.f = s->in_shape.dim[1];
    d.fkv = l->n_in == 2 ? (int)(l->x_size[1] / d.steps) : d.f;
    d.hd = s->heads * s->key_dim;
    d.rows_max = (long)l->max_batch * d.steps;
    return d;
}

static attention_desc attention_desc_of(const layer *l)
{
    const spec_layer *s = l->spec;
    return (attention_desc){.max_batch = l->max_batch, .steps = s->in_shape.dim[0],
                            .heads = s->heads, .key_dim = s->key_dim, .causal = s->causal,
                            .dropout = s->rate};
}

/* Offsets (floats) of q, k, v, o and lse in aux; of dq, dk, dv, do and the
 * kernel's scratch in the workspace. */
static long attention_slot(const layer *l, int i)
{
    return (long)i * attention_dims_of(l).rows_max * attention_dims_of(l).hd;
}

/* Each tensor at an aligned offset after the one before. */
static void attention_add(layer *l, const char *name, int rank, long d0, long d1, long d2)
{
    long at = l->param_span;
    layer_add_tensor(l, name, false, at, rank, d0, d1, d2, 0);
}

static int attention_setup(layer *l, backend *be, char *err, size_t errlen)
{
    const spec_layer *s = l->spec;
    if (!be->attention_forward || !be->attention_backward || !be->attention_prepare) {
        snprintf(err, errlen, "multi_head_attention runs on the CPU backend in this version");
        return -1;
    }
    if (s->in_shape.rank != 2 || s->heads < 1 || s->key_dim < 1 ||
        (l->n_in == 2 && l->x_size[1] % s->in_shape.dim[0] != 0)) {
        snprintf(err, errlen, "multi_head_attention: needs sequences of equal steps");
        return -1;
    }
    attention_dims d = attention_dims_of(l);
    int h = s->heads, k = s->key_dim;
    attention_desc desc = attention_desc_of(l);
    long scratch = be->attention_prepare(be, &desc);
    if (scratch < 0) {
        snprintf(err, errlen, "multi_head_attention: the backend refuses %d heads of %d", h, k);
        return -1;
    }
    attention_add(l, "query_kernel", 3, d.f, h, k);
    if (s->use_bias)
        attention_add(l, "query_bias", 2, h, k, 0);
    attention_add(l, "key_kernel", 3, d.fkv, h, k);
    if (s->use_bias)
        attention_add(l, "key_bias", 2, h, k, 0);
    attention_add(l, "value_kernel", 3, d.fkv, h, k);
    if (s->use_bias)
        attention_add(l, "value_bias", 2, h, k, 0);
    attention_add(l, "output_kernel", 3, h, k, d.f);
    if (s->use_bias)
        attention_add(l, "output_bias", 1, d.f, 0, 0);
    long b = s->use_bias ? 1 : 0;
    l->n_params = (long)d.f * d.hd + 2L * d.fkv * d.hd + (long)d.hd * d.f +
                  b * (3L * d.hd + d.f);
    l->aux_floats = attention_slot(l, 4) + (long)l->max_batch * h * d.steps;
    l->workspace_floats = attention_slot(l, 4) + scratch;
    return 0;
}

/* The parameter tensor that is the `which`-th of Keras's list, NULL for a
 * bias without use_bias. */
static float *attention_param(const layer *l, float *base, int which)
{
    int t = which;
    if (!l->spec->use_bias) {
        if (which % 2)
            return NULL;
        t = which / 2;
    }
    return base + l->tensors[t].offset;
}

static void attention_init(const layer *l, float *params, float *state, rng *r)
{
    (void)state;
    attention_dims d = attention_dims_of(l);
    /* Keras: glorot_uniform on the kernels as {F_in, heads * key_dim}
     * matrices, zero biases. */
    const long fan[4][2] = {{d.f, d.hd}, {d.fkv, d.hd}, {d.fkv, d.hd}, {d.hd, d.f}};
    for (int i = 0; i < 4; i++) {
        float *w = attention_param(l, params, 2 * i);
        double limit = layer_init_limit(fan[i][0], fan[i][1]);
        for (long j = 0; j < fan[i][0] * fan[i][1]; j++)
            w[j] = rng_symmetric(r, limit);
        float *bias = attention_param(l, params, 2 * i + 1);
        for (long j = 0; bias && j < fan[i][1]; j++)
            bias[j] = 0.0f;
    }
}

static void attention_forward(layer *l, backend *be, int batch, bool training, uint64_t seed)
{
    attention_dims d = attention_dims_of(l);
    attention_desc desc = attention_desc_of(l);
    desc.steps = layer_steps(l);
    int rows = batch * desc.steps;
    const float *xq = l->x[0], *xkv = l->n_in == 2 ? l->x[1] : l->x[0];
    float *q = l->aux, *k = l->aux + attention_slot(l, 1), *v = l->aux + attention_slot(l, 2);
    float *o = l->aux + attention_slot(l, 3), *lse = l->aux + attention_slot(l, 4);
    be->dense_forward(be, rows, d.f, d.hd, xq, attention_param(l, l->params, ATT_QK),
                      attention_param(l, l->params, ATT_QB), ACT_NONE, q);
    be->dense_forward(be, rows, d.fkv, d.hd, xkv, attention_param(l, l->params, ATT_KK),
                      attention_param(l, l->params, ATT_KB), ACT_NONE, k);
    be->dense_forward(be, rows, d.fkv, d.hd, xkv, attention_param(l, l->params, ATT_VK),
                      attention_param(l, l->params, ATT_VB), ACT_NONE, v);
    be->attention_forward(be, &desc, batch, l->lengths, q, k, v, o, lse, training, seed,
                          l->workspace + attention_slot(l, 4));
    be->dense_forward(be, rows, d.hd, d.f, o, attention_param(l, l->params, ATT_OK),
                      attention_param(l, l->params, ATT_OB), ACT_NONE, l->y);
    l->step_seed = seed;
    l->step_training = training;
}

static void attention_backward(layer *l, backend *be, int batch)
{
    attention_dims d = attention_dims_of(l);
    attention_desc desc = attention_desc_of(l);
    desc.steps = layer_steps(l);
    int rows = batch * desc.steps;
    bool cross = l->n_in == 2;
    const float *xq = l->x[0], *xkv = cross ? l->x[1] : l->x[0];
    float *dxkv = cross ? l->dx[1] : l->dx[0];
    const float *q = l->aux, *k = l->aux + attention_slot(l, 1);
    const float *v = l->aux + attention_slot(l, 2), *o = l->aux + attention_slot(l, 3);
    const float *lse = l->aux + attention_slot(l, 4);
    float *dq = l->workspace, *dk = l->workspace + attention_slot(l, 1);
    float *dv = l->workspace + attention_slot(l, 2), *dout = l->workspace + attention_slot(l, 3);
    be->dense_backward(be, rows, d.hd, d.f, o, attention_param(l, l->params, ATT_OK), l->dy,
                       dout, false, attention_param(l, l->grads, ATT_OK),
                       attention_param(l, l->grads, ATT_OB));
    be->attention_backward(be, &desc, batch, l->lengths, q, k, v, o, lse, dout, dq, dk, dv,
                           l->step_training, l->step_seed, l->workspace + attention_slot(l, 4));
    be->dense_backward(be, rows, d.f, d.hd, xq, attention_param(l, l->params, ATT_QK), dq,
                       l->dx[0], l->dx_accumulate[0], attention_param(l, l->grads, ATT_QK),
                       attention_param(l, l->grads, ATT_QB));
    /* Self-attention: the key and value gradients add to the query's. */
    bool acc = cross ? l->dx_accumulate[1] : true;
    be->dense_backward(be, rows, d.fkv, d.hd, xkv, attention_param(l, l->params, ATT_KK), dk,
                       dxkv, acc, attention_param(l, l->grads, ATT_KK),
                       attention_param(l, l->grads, ATT_KB));
    be->dense_backward(be, rows, d.fkv, d.hd, xkv, attention_param(l, l->params, ATT_VK), dv,
                       dxkv, true, attention_param(l, l->grads, ATT_VK),
                       attention_param(l, l->grads, ATT_VB));
}

const layer_ops layer_attention_ops = {
    .setup = attention_setup,
    .init = attention_init,
    .forward = attention_forward,
    .backward = attention_backward,
};
