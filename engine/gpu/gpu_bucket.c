/* gpu_bucket.c — the allreduce bucketing plan and the per-step launch
 * bookkeeping; see gpu_bucket.h. */
#include "gpu/gpu_bucket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long gpu_bucket_floats(double bucket_mb)
{
    double floats = bucket_mb * 1024.0 * 1024.0 / (double)sizeof(float);
    if (!(floats >= 1.0))
        return 1;
    if (floats > 1e15)
        return (long)1e15;
    return (long)floats;
}

/* Spans must tile [spans[first].offset, end) in model order. */
static bool gpu_bucket_check_spans(const gpu_param_span *spans, int n_layers, char *err,
                                   size_t errlen)
{
    long next = -1;
    for (int i = 0; i < n_layers; i++) {
        if (spans[i].count < 0 || spans[i].offset < 0) {
            snprintf(err, errlen, "bucket plan: layer %d has a negative span", i);
            return false;
        }
        if (spans[i].count == 0)
            continue;
        if (next >= 0 && spans[i].offset != next) {
            snprintf(err, errlen,
                     "bucket plan: layer %d starts at float %ld, expected %ld "
                     "(parameters must be contiguous in layer order)",
                     i, spans[i].offset, next);
            return false;
        }
        next = spans[i].offset + spans[i].count;
    }
    return true;
}

bool gpu_bucket_plan_build(const gpu_param_span *spans, int n_layers, long bucket_floats,
                           gpu_bucket_plan *plan, char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    if (n_layers < 0 || bucket_floats < 1) {
        snprintf(err, errlen, "bucket plan: invalid layer count or bucket size");
        return false;
    }
    if (!gpu_bucket_check_spans(spans, n_layers, err, errlen))
        return false;
    plan->n_layers = n_layers;
    plan->bucket_of = malloc((size_t)(n_layers > 0 ? n_layers : 1) * sizeof *plan->bucket_of);
    /* At most one bucket per layer with parameters. */
    plan->buckets = malloc((size_t)(n_layers > 0 ? n_layers : 1) * sizeof *plan->buckets);
    if (!plan->bucket_of || !plan->buckets) {
        gpu_bucket_plan_free(plan);
        snprintf(err, errlen, "bucket plan: out of memory");
        return false;
    }
    gpu_bucket *cur = NULL;
    for (int i = n_layers - 1; i >= 0; i--) {
        plan->bucket_of[i] = -1;
        if (spans[i].count == 0)
            continue;
        /* Walking down, a layer joins the open bucket while the bucket
         * stays within the limit; otherwise it opens the next one. */
        if (!cur || cur->count + spans[i].count > bucket_floats) {
            cur = &plan->buckets[plan->n_buckets++];
            cur->count = 0;
            cur->last_layer = i;
            cur->n_param_layers = 0;
        }
        cur->offset = spans[i].offset;
        cur->count += spans[i].count;
        cur->first_layer = i;
        cur->n_param_layers++;
        plan->bucket_of[i] = plan->n_buckets - 1;
    }
    return true;
}

void gpu_bucket_plan_free(gpu_bucket_plan *plan)
{
    free(plan->buckets);
    free(plan->bucket_of);
    memset(plan, 0, sizeof *plan);
}

bool gpu_bucket_progress_begin(gpu_bucket_progress *p, const gpu_bucket_plan *plan)
{
    p->plan = plan;
    p->next = 0;
    if (plan->n_buckets > p->cap) {
        int *q = realloc(p->pending, (size_t)plan->n_buckets * sizeof *q);
        if (!q)
            return false;
        p->pending = q;
        p->cap = plan->n_buckets;
    }
    for (int b = 0; b < plan->n_buckets; b++)
        p->pending[b] = plan->buckets[b].n_param_layers;
    return true;
}

void gpu_bucket_progress_layer_done(gpu_bucket_progress *p, int layer)
{
    if (!p->plan || layer < 0 || layer >= p->plan->n_layers)
        return;
    int b = p->plan->bucket_of[layer];
    if (b >= 0 && p->pending[b] > 0)
        p->pending[b]--;
}

int gpu_bucket_progress_next(gpu_bucket_progress *p, bool all)
{
    if (!p->plan || p->next >= p->plan->n_buckets)
        return -1;
    if (!all && p->pending[p->next] > 0)
        return -1;
    return p->next++;
}

void gpu_bucket_progress_free(gpu_bucket_progress *p)
{
    free(p->pending);
    memset(p, 0, sizeof *p);
}
