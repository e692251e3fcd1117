/* gpu_conv_choice.c — convolution algorithm choice and the per-batch-size
 * workspace check of the CUDA backend; see gpu_conv_choice.h. */
#include "gpu/gpu_conv_choice.h"

#include <stdlib.h>

enum {
    GPU_BATCH_UNCHECKED = 0,
    GPU_BATCH_SHARED,       /* runs with the layer's algorithms */
    GPU_BATCH_OWN,          /* runs with entry->own */
};

/* FP32 without tensor cores: FMA, or DEFAULT as cuDNN 9 may call it. */
static bool gpu_math_fp32(gpu_math m)
{
    return m == GPU_MATH_FMA || m == GPU_MATH_DEFAULT;
}

/* One pass of gpu_conv_algo_pick: which determinism and math it takes. */
typedef enum { PICK_DET, PICK_NONDET, PICK_EITHER } pick_kind;
typedef struct pick_pass {
    pick_kind kind;
    gpu_math math;
} pick_pass;

int gpu_conv_algo_pick(const gpu_algo_perf *perf, int n, size_t cap, bool any_determinism,
                       bool *deterministic)
{
    /* Passes in order of preference; PICK_EITHER takes both kinds in
     * cuDNN's order, fastest first. */
    static const pick_pass strict[] = {
        {PICK_DET, GPU_MATH_FMA},
        {PICK_DET, GPU_MATH_DEFAULT},
        {PICK_NONDET, GPU_MATH_FMA},
        {PICK_NONDET, GPU_MATH_DEFAULT},
    };
    static const pick_pass loose[] = {
        {PICK_EITHER, GPU_MATH_FMA},
        {PICK_EITHER, GPU_MATH_DEFAULT},
    };
    const pick_pass *pass = any_determinism ? loose : strict;
    size_t passes = any_determinism ? sizeof loose / sizeof loose[0]
                                    : sizeof strict / sizeof strict[0];
    *deterministic = false;
    for (size_t p = 0; p < passes; p++)
        for (int i = 0; i < n; i++) {
            const gpu_algo_perf *r = &perf[i];
            if (!r->ok || r->memory > cap || !gpu_math_fp32(r->math) ||
                (pass[p].kind != PICK_EITHER && r->deterministic != (pass[p].kind == PICK_DET)) ||
                r->math != pass[p].math)
                continue;
            *deterministic = r->deterministic;
            return i;
        }
    return -1;
}

bool gpu_conv_algos_deterministic(const gpu_conv_algos *a)
{
    for (int d = 0; d < GPU_CONV_DIRS; d++)
        if (!a->deterministic[d])
            return false;
    return true;
}

bool gpu_conv_batches_init(gpu_conv_batches *t, int max_batch, const gpu_conv_algos *shared,
                           size_t cap)
{
    *t = (gpu_conv_batches){.max_batch = max_batch, .cap = cap, .shared = *shared};
    if (max_batch < 1)
        return false;
    t->entry = calloc((size_t)max_batch + 1, sizeof *t->entry);
    if (!t->entry)
        return false;
    t->entry[max_batch].state = GPU_BATCH_SHARED;
    return true;
}

void gpu_conv_batches_free(gpu_conv_batches *t)
{
    free(t->entry);
    t->entry = NULL;
}

const gpu_conv_algos *gpu_conv_batches_get(gpu_conv_batches *t, int batch,
                                           const gpu_conv_probe *probe, bool *fresh)
{
    *fresh = false;
    if (batch < 1 || batch > t->max_batch)
        return NULL;
    struct gpu_conv_batch_entry *e = &t->entry[batch];
    if (e->state == GPU_BATCH_SHARED)
        return &t->shared;
    if (e->state == GPU_BATCH_OWN)
        return &e->own;
    size_t need;
    if (!probe->need(probe->ctx, batch, &t->shared, &need))
        return NULL;
    if (need <= t->cap) {
        e->state = GPU_BATCH_SHARED;
        return &t->shared;
    }
    if (!probe->pick(probe->ctx, batch, t->cap, &e->own))
        return NULL;
    e->state = GPU_BATCH_OWN;
    *fresh = true;
    return &e->own;
}
