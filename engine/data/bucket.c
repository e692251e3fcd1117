/* bucket.c — data.bucket_by_length: an epoch's shuffled order rearranged
 * so that each batch holds sequences of similar lengths. The order is a
 * function of (the shuffled order, the lengths, the batch size, seed,
 * epoch) alone, so every rank computes the same one and a resumed run
 * finds its position in it again; batch k is still positions
 * [k B, (k + 1) B) of the order, so the trainers' slicing is unchanged. */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

/* Batches per sorted chunk: enough that a chunk holds lengths close to
 * each other, few enough that the batches of an epoch still mix samples
 * from all over the set. */
#define BUCKET_CHUNK_BATCHES 64

/* Stream tag that keeps the batch shuffle apart from the permutation. */
#define BUCKET_STREAM 0x4255434b00000000ULL /* "BUCK" */

static int bucket_key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sort perm[0, m) by length, ties in their shuffled order: each key is
 * (length, position) in one integer, so qsort's instability cannot show. */
static void bucket_sort_chunk(int64_t *perm, long m, const int32_t *len, uint64_t *keys,
                              int64_t *copy)
{
    for (long i = 0; i < m; i++) {
        keys[i] = (uint64_t)(uint32_t)len[perm[i]] << 32 | (uint64_t)i;
        copy[i] = perm[i];
    }
    qsort(keys, (size_t)m, sizeof *keys, bucket_key_cmp);
    for (long i = 0; i < m; i++)
        perm[i] = copy[keys[i] & 0xffffffffULL];
}

int dataset_bucket_order(int64_t *perm, long lo, long hi, const int32_t *len, long batch,
                         unsigned long seed, int epoch)
{
    long n = hi - lo;
    if (!len || batch <= 0 || n <= batch)
        return 0;
    long chunk = batch * BUCKET_CHUNK_BATCHES;
    if (chunk > n)
        chunk = n;
    long full = n / batch;
    uint64_t *keys = malloc((size_t)chunk * sizeof *keys);
    int64_t *copy = malloc((size_t)n * sizeof *copy);
    long *order = malloc((size_t)full * sizeof *order);
    if (!keys || !copy || !order || chunk > 0xffffffffL) {
        free(keys);
        free(copy);
        free(order);
        return -1;
    }
    int64_t *p = perm + lo;
    for (long c = 0; c < n; c += chunk)
        bucket_sort_chunk(p + c, n - c < chunk ? n - c : chunk, len, keys, copy);
    /* Shuffle the full batches (sorted chunks would otherwise run short to
     * long); a short last batch stays last, where the trainers expect it. */
    for (long k = 0; k < full; k++)
        order[k] = k;
    data_rng r;
    data_rng_seed(&r, (uint64_t)seed ^ (uint64_t)lo * 0x9e3779b97f4a7c15ULL,
                  BUCKET_STREAM | (uint32_t)epoch);
    for (long k = full - 1; k > 0; k--) {
        long j = (long)data_rng_below(&r, (uint64_t)k + 1);
        long t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    memcpy(copy, p, (size_t)n * sizeof *copy);
    for (long k = 0; k < full; k++)
        memcpy(p + k * batch, copy + order[k] * batch, (size_t)batch * sizeof *p);
    free(keys);
    free(copy);
    free(order);
    return 0;
}

long dataset_padded_steps(const int64_t *perm, long n, const int32_t *len, long batch)
{
    long total = 0;
    for (long first = 0; first < n; first += batch) {
        long m = n - first < batch ? n - first : batch;
        int32_t most = 0;
        for (long i = 0; i < m; i++)
            most = len[perm[first + i]] > most ? len[perm[first + i]] : most;
        total += m * (long)most;
    }
    return total;
}
