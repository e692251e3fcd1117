/* permutation.c — the per-epoch shuffle. Every rank computes the same
 * permutation of the whole training set from (seed, epoch) alone and takes
 * its shard as a slice of it, so the order a sample is seen in does not
 * depend on the number of ranks, and a resumed run reproduces it. */
#include "data_internal.h"

/* Stream tag that keeps shuffles apart from the synthetic-data streams. */
#define PERMUTATION_STREAM 0x5045524d00000000ULL /* "PERM" */

void dataset_epoch_permutation(long n, unsigned long seed, int epoch, int64_t *perm)
{
    if (n <= 0)
        return;
    for (long i = 0; i < n; i++)
        perm[i] = i;
    data_rng r;
    data_rng_seed(&r, seed, PERMUTATION_STREAM | (uint32_t)epoch);
    /* Fisher-Yates, from the end. */
    for (long i = n - 1; i > 0; i--) {
        long j = (long)data_rng_below(&r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
