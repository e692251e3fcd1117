/* cpu_loss.c — the losses on the CPU backend: softmax cross-entropy
 * (split by rows over the pool, partial sums added in a fixed order),
 * binary cross-entropy and mean squared error, each with its gradient. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"

/* ---- losses ---------------------------------------------------------- */

/* Below this many logits the loss runs on the caller alone. */
#define CPU_XENT_MIN_PARALLEL 512L

typedef struct xent_job {
    int n;
    float inv_batch;
    const float *logits, *targets;
    float *probs, *dlogits;
    double partial[CPU_MAX_CHUNKS];
} xent_job;

/* Rows [begin, end): probabilities, gradient, and their loss summed in
 * row order into partial[tid]. The row's operations are repeated on
 * purpose in gpu/gpu_kernels.cu (k_softmax_xent), there split over a
 * block's threads (so its double sums add in a tree's order): this is the
 * CPU reference the CUDA kernel is tested against (test_gpu_vs_cpu);
 * change both together. */
static void xent_rows(void *ctx, long begin, long end, int tid)
{
    xent_job *j = ctx;
    int n = j->n;
    double total = 0.0;
    for (long r = begin; r < end; r++) {
        const float *z = j->logits + r * n;
        const float *t = j->targets + r * n;
        float *p = j->probs + r * n;
        float *d = j->dlogits + r * n;
        float mx = z[0];
        for (int c = 1; c < n; c++)
            mx = z[c] > mx ? z[c] : mx;
        double sum = 0.0;
        for (int c = 0; c < n; c++)
            sum += exp((double)z[c] - mx);
        double log_sum = log(sum);
        double loss = 0.0;
        for (int c = 0; c < n; c++) {
            double logp = (double)z[c] - mx - log_sum;
            p[c] = (float)exp(logp);
            loss -= (double)t[c] * logp;
            d[c] = (p[c] - t[c]) * j->inv_batch;
        }
        total += loss;
    }
    j->partial[tid] = total;
}

/* Rows split over the pool (one chunk per thread); the chunks' sums are
 * added in chunk order, so the loss depends only on the thread count. */
static double cpu_softmax_xent(backend *be, int batch, int n, const float *logits,
                               const float *targets, float *probs, float *dlogits)
{
    thread_pool *pool = cpu_pool(be);
    int threads = pool_threads(pool);
    xent_job j = {n, 1.0f / (float)batch, logits, targets, probs, dlogits, {0}};
    if (threads > CPU_MAX_CHUNKS || (long)batch * n < CPU_XENT_MIN_PARALLEL) {
        xent_rows(&j, 0, batch, 0);
        return j.partial[0];
    }
    pool_run(pool, batch, xent_rows, &j);
    double total = 0.0;
    for (int t = 0; t < threads; t++)
        total += j.partial[t];
    return total;
}

#define BCE_EPS 1e-7f

static double cpu_binary_xent(backend *be, int batch, int n, const float *p,
                              const float *targets, float *dp)
{
    (void)be;
    double total = 0.0;
    float scale = 1.0f / ((float)n * (float)batch);
    for (long i = 0; i < (long)batch * n; i++) {
        float pc = fminf(fmaxf(p[i], BCE_EPS), 1.0f - BCE_EPS);
        float t = targets[i];
        total -= (t * log((double)pc) + (1.0 - t) * log(1.0 - (double)pc)) / n;
        dp[i] = (pc - t) / (pc * (1.0f - pc)) * scale;
    }
    return total;
}

static double cpu_mse(backend *be, int batch, int n, const float *y, const float *targets,
                      float *dy)
{
    (void)be;
    double total = 0.0;
    float scale = 2.0f / ((float)n * (float)batch);
    for (long i = 0; i < (long)batch * n; i++) {
        float e = y[i] - targets[i];
        total += (double)e * e / n;
        dy[i] = e * scale;
    }
    return total;
}

/* Sets this file's ops of backend.h on be. */
void cpu_loss_register(backend *be)
{
    be->softmax_xent = cpu_softmax_xent;
    be->binary_xent = cpu_binary_xent;
    be->mse = cpu_mse;
}
