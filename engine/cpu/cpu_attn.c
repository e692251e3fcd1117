/* cpu_attn.c — multi-head scaled dot-product attention on the CPU
 * backend, flash-attention style: each (sample, head) is one task; its
 * queries go in blocks of ATTN_BLOCK rows, whose scores against the
 * sample's real keys (a block x T tile, 16 KiB at T = 64) are made by one
 * GEMM, softmaxed in place while still in cache and multiplied into the
 * output by a second GEMM. Only each row's log-sum-exp is kept: the
 * backward pass recomputes the tile from q, k and it, so memory stays
 * O(T) per head instead of O(T^2). Each task writes its own head's
 * columns and sums over its blocks in order, so the bits depend on
 * nothing but the inputs. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

#define ATTN_BLOCK 64

typedef struct attn_job {
    const attention_desc *d;
    const int32_t *lengths;
    const float *q, *k, *v, *o, *lse, *do_;
    float *out, *out_lse, *dq, *dk, *dv;
    bool training;
    uint64_t seed;
    float *workspace;
} attn_job;

/* Scratch floats of one task: the score tile, its gradient and (with
 * dropout) the dropped weights. */
static long attn_scratch(const attention_desc *d)
{
    return 3L * ATTN_BLOCK * d->steps;
}

static long cpu_attention_prepare(backend *be, const attention_desc *d)
{
    if (d->steps < 1 || d->heads < 1 || d->key_dim < 1 || d->dropout < 0.0f ||
        d->dropout >= 1.0f)
        return -1;
    return (long)be->threads * attn_scratch(d);
}

static int attn_length(const attn_job *j, int n)
{
    return j->lengths ? j->lengths[n] : j->d->steps;
}

static bool attn_dropping(const attn_job *j)
{
    return j->training && j->d->dropout > 0.0f;
}

/* Dropout of row i's weights w[0 .. valid) (n, h fixed by `base`, the
 * index of weight (n, h, i, 0)): dropped ones to 0, kept ones scaled. */
static void attn_drop_row(const attn_job *j, uint64_t base, float *w, int valid)
{
    float keep_scale = 1.0f / (1.0f - j->d->dropout);
    for (int c = 0; c < valid; c++)
        w[c] = backend_dropout_keep(j->seed, base + (uint64_t)c, j->d->dropout)
                   ? w[c] * keep_scale : 0.0f;
}

/* Row i of a tile: softmax of its first `valid` scores in place, zeros
 * after; returns the log-sum-exp. */
static float attn_softmax_row(float *s, int valid, int nk)
{
    float mx = s[0];
    for (int c = 1; c < valid; c++)
        mx = s[c] > mx ? s[c] : mx;
    float sum = 0.0f;
    for (int c = 0; c < valid; c++) {
        s[c] = expf(s[c] - mx);
        sum += s[c];
    }
    float inv = 1.0f / sum;
    for (int c = 0; c < valid; c++)
        s[c] *= inv;
    for (int c = valid; c < nk; c++)
        s[c] = 0.0f;
    return mx + logf(sum);
}

/* The keys query row i sees: all real ones, or those up to i. */
static int attn_valid(const attention_desc *d, int i, int len)
{
    return d->causal ? (i + 1 < len ? i + 1 : len) : len;
}

static void attn_forward_task(const attn_job *j, int n, int h, float *s)
{
    const attention_desc *d = j->d;
    int T = d->steps, H = d->heads, dk = d->key_dim, ld = H * dk;
    int len = attn_length(j, n);
    long off = (long)n * T * ld + (long)h * dk;
    const float *q = j->q + off, *k = j->k + off, *v = j->v + off;
    float *o = j->out + off, *lse = j->out_lse + ((long)n * H + h) * T;
    float scale = 1.0f / sqrtf((float)dk);
    for (int i0 = 0; i0 < len; i0 += ATTN_BLOCK) {
        int bq = len - i0 < ATTN_BLOCK ? len - i0 : ATTN_BLOCK;
        int nk = attn_valid(d, i0 + bq - 1, len);
        cpu_sgemm(false, true, bq, nk, dk, scale, q + (long)i0 * ld, ld, k, ld, 0.0f, s, nk);
        for (int r = 0; r < bq; r++) {
            int valid = attn_valid(d, i0 + r, len);
            lse[i0 + r] = attn_softmax_row(s + (long)r * nk, valid, nk);
            if (attn_dropping(j))
                attn_drop_row(j, (((uint64_t)n * H + h) * T + i0 + r) * T, s + (long)r * nk,
                              valid);
        }
        cpu_sgemm(false, false, bq, dk, nk, 1.0f, s, nk, v, ld, 0.0f, o + (long)i0 * ld, ld);
    }
    for (int i = len; i < T; i++) {
        memset(o + (long)i * ld, 0, (size_t)dk * sizeof *o);
        lse[i] = 0.0f;
    }
}

static void attn_forward_tasks(void *ctx, long begin, long end, int tid)
{
    const attn_job *j = ctx;
    float *s = j->workspace + (long)tid * attn_scratch(j->d);
    for (long t = begin; t < end; t++)
        attn_forward_task(j, (int)(t / j->d->heads), (int)(t % j->d->heads), s);
}

static void cpu_attention_forward(backend *be, const attention_desc *d, int batch,
                                  const int32_t *lengths, const float *q, const float *k,
                                  const float *v, float *o, float *lse, bool training,
                                  uint64_t seed, float *workspace)
{
    attn_job j = {.d = d, .lengths = lengths, .q = q, .k = k, .v = v, .out = o,
                  .out_lse = lse, .training = training, .seed = seed, .workspace = workspace};
    pool_run(cpu_pool(be), (long)batch * d->heads, attn_forward_tasks, &j);
}

/* One block's score gradient, in place in dp (bq x nk, holding dO V^T):
 * dS = P * (dP - D) * scale with D_i = dO_i . O_i, dP the gradient of the
 * undropped weights P (tile p). With dropout pd gets the dropped weights
 * (for dV) and dP is dPd masked and scaled the same way. */
static void attn_score_grads(const attn_job *j, int n, int h, int i0, int bq, int nk,
                             const float *p, float *pd, float *dp)
{
    const attention_desc *d = j->d;
    int T = d->steps, H = d->heads, dk = d->key_dim, ld = H * dk;
    int len = attn_length(j, n);
    long off = (long)n * T * ld + (long)h * dk;
    float scale = 1.0f / sqrtf((float)dk);
    for (int r = 0; r < bq; r++) {
        int i = i0 + r, valid = attn_valid(d, i, len);
        const float *dor = j->do_ + off + (long)i * ld, *or = j->o + off + (long)i * ld;
        float dsum = 0.0f;
        for (int c = 0; c < dk; c++)
            dsum += dor[c] * or[c];
        const float *pr = p + (long)r * nk;
        float *dpr = dp + (long)r * nk;
        if (attn_dropping(j)) {
            /* The forward's mask, redrawn: dropped weights and their
             * gradients to 0, kept ones scaled by 1 / (1 - rate). */
            float *pdr = pd + (long)r * nk, ks = 1.0f / (1.0f - d->dropout);
            uint64_t base = (((uint64_t)n * H + h) * T + i) * T;
            for (int c = 0; c < valid; c++) {
                bool keep = backend_dropout_keep(j->seed, base + (uint64_t)c, d->dropout);
                pdr[c] = keep ? pr[c] * ks : 0.0f;
                dpr[c] = keep ? dpr[c] * ks : 0.0f;
            }
            for (int c = valid; c < nk; c++)
                pdr[c] = 0.0f;
        }
        for (int c = 0; c < valid; c++)
            dpr[c] = pr[c] * (dpr[c] - dsum) * scale;
        for (int c = valid; c < nk; c++)
            dpr[c] = 0.0f;
    }
}

static void attn_backward_task(const attn_job *j, int n, int h, float *s)
{
    const attention_desc *d = j->d;
    int T = d->steps, H = d->heads, dk = d->key_dim, ld = H * dk;
    int len = attn_length(j, n);
    long off = (long)n * T * ld + (long)h * dk;
    const float *q = j->q + off, *k = j->k + off, *v = j->v + off, *dO = j->do_ + off;
    const float *lse = j->lse + ((long)n * H + h) * T;
    float *dq = j->dq + off, *dk_ = j->dk + off, *dv = j->dv + off;
    float *p = s, *dp = s + (long)ATTN_BLOCK * T, *pd = dp + (long)ATTN_BLOCK * T;
    float scale = 1.0f / sqrtf((float)dk);
    for (int i = 0; i < T; i++) {
        memset(dk_ + (long)i * ld, 0, (size_t)dk * sizeof *dk_);
        memset(dv + (long)i * ld, 0, (size_t)dk * sizeof *dv);
        if (i >= len)
            memset(dq + (long)i * ld, 0, (size_t)dk * sizeof *dq);
    }
    for (int i0 = 0; i0 < len; i0 += ATTN_BLOCK) {
        int bq = len - i0 < ATTN_BLOCK ? len - i0 : ATTN_BLOCK;
        int nk = attn_valid(d, i0 + bq - 1, len);
        cpu_sgemm(false, true, bq, nk, dk, scale, q + (long)i0 * ld, ld, k, ld, 0.0f, p, nk);
        for (int r = 0; r < bq; r++) {
            int valid = attn_valid(d, i0 + r, len);
            float *pr = p + (long)r * nk;
            for (int c = 0; c < valid; c++)
                pr[c] = expf(pr[c] - lse[i0 + r]);
            for (int c = valid; c < nk; c++)
                pr[c] = 0.0f;
        }
        cpu_sgemm(false, true, bq, nk, dk, 1.0f, dO + (long)i0 * ld, ld, v, ld, 0.0f, dp, nk);
        attn_score_grads(j, n, h, i0, bq, nk, p, pd, dp);
        const float *weights = attn_dropping(j) ? pd : p;
        cpu_sgemm(true, false, nk, dk, bq, 1.0f, weights, nk, dO + (long)i0 * ld, ld, 1.0f, dv,
                  ld);
        cpu_sgemm(false, false, bq, dk, nk, 1.0f, dp, nk, k, ld, 0.0f, dq + (long)i0 * ld, ld);
        cpu_sgemm(true, false, nk, dk, bq, 1.0f, dp, nk, q + (long)i0 * ld, ld, 1.0f, dk_, ld);
    }
}

static void attn_backward_tasks(void *ctx, long begin, long end, int tid)
{
    const attn_job *j = ctx;
    float *s = j->workspace + (long)tid * attn_scratch(j->d);
    for (long t = begin; t < end; t++)
        attn_backward_task(j, (int)(t / j->d->heads), (int)(t % j->d->heads), s);
}

static void cpu_attention_backward(backend *be, const attention_desc *d, int batch,
                                   const int32_t *lengths, const float *q, const float *k,
                                   const float *v, const float *o, const float *lse,
                                   const float *do_, float *dq, float *dk, float *dv,
                                   bool training, uint64_t seed, float *workspace)
{
    attn_job j = {.d = d, .lengths = lengths, .q = q, .k = k, .v = v, .o = o, .lse = lse,
                  .do_ = do_, .dq = dq, .dk = dk, .dv = dv, .training = training,
                  .seed = seed, .workspace = workspace};
    pool_run(cpu_pool(be), (long)batch * d->heads, attn_backward_tasks, &j);
}

void cpu_attn_register(backend *be)
{
    be->attention_prepare = cpu_attention_prepare;
    be->attention_forward = cpu_attention_forward;
    be->attention_backward = cpu_attention_backward;
}
