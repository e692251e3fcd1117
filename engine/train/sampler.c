/* sampler.c — the next token from one step's probabilities (sampler.h).
 * The temperature is applied in log space relative to the largest kept
 * probability, so p^(1/t) neither overflows for small t nor underflows to
 * all zeros for the most probable id. */
#include "train/sampler.h"

#include <math.h>

/* The most probable id; the lowest on ties. */
static int sampler_argmax(const float *p, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[best])
            best = i;
    return best;
}

/* The k-th largest value of p (k in [1, n]): the cut of top-k. Ids with a
 * value equal to the cut are kept in id order until k are kept. O(n k),
 * fine for the vocabularies here (256 bytes, a few hundred characters). */
static void sampler_keep_top(const float *p, int n, int k, float *w)
{
    for (int i = 0; i < n; i++)
        w[i] = -1.0f;
    for (int kept = 0; kept < k; kept++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (w[i] < 0.0f && (best < 0 || p[i] > p[best]))
                best = i;
        w[best] = p[best];
    }
}

int sampler_pick(const float *probs, int n, const sampler_options *o, rng *r, float *scratch)
{
    if (n <= 1 || o->temperature <= 0.0 || o->top_k == 1)
        return n <= 1 ? 0 : sampler_argmax(probs, n);
    int k = o->top_k > 0 && o->top_k < n ? o->top_k : n;
    float *w = scratch;
    if (k < n) {
        sampler_keep_top(probs, n, k, w);
    } else {
        for (int i = 0; i < n; i++)
            w[i] = probs[i];
    }
    int top = sampler_argmax(w, n);
    double pmax = w[top];
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        double v = w[i] > 0.0f && pmax > 0.0
                       ? exp((log((double)w[i]) - log(pmax)) / o->temperature)
                       : 0.0;
        w[i] = (float)v;
        sum += v;
    }
    if (!(sum > 0.0))
        return top;
    double u = rng_uniform(r) * sum, acc = 0.0;
    int last = top;
    for (int i = 0; i < n; i++) {
        if (w[i] <= 0.0f)
            continue;
        acc += w[i];
        last = i;
        if (u < acc)
            return i;
    }
    return last; /* rounding: u landed on the sum itself */
}
