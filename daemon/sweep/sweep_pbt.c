/* sweep_pbt.c — PBT's exploit decisions (sweep_pbt.h). */
#include "sweep/sweep_pbt.h"

#include <math.h>
#include <stdlib.h>

#include "sweep/sweep_search.h"

uint64_t sweep_pbt_state(uint64_t seed, int generation)
{
    /* A different odd constant from splitmix64's step, so generation g's
     * stream does not run into generation g+1's. */
    return seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(generation + 1));
}

size_t sweep_pbt_count(size_t n, double quantile)
{
    size_t k = (size_t)ceil(quantile * (double)n - 1e-9);
    return k > n / 2 ? n / 2 : k;
}

/* Does member a rank before member b? */
static bool sweep_pbt_before(const double *metric, size_t a, size_t b, bool maximize)
{
    double x = metric[a], y = metric[b];
    if (isnan(x) || isnan(y)) {
        if (isnan(x) != isnan(y))
            return !isnan(x);
        return a < b;
    }
    if (x != y)
        return maximize ? x > y : x < y;
    return a < b;
}

int sweep_pbt_plan(const double *metric, size_t n, double quantile, bool maximize,
                   uint64_t *state, int *donor)
{
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return -1;
    /* Insertion sort: a population is at most a sweep's trials, and this
     * runs once per generation. */
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && sweep_pbt_before(metric, i, order[j - 1], maximize)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
        donor[i] = -1;
    }
    size_t k = sweep_pbt_count(n, quantile);
    /* The bottom in rank order, worst last, each drawing its donor. */
    for (size_t r = n - k; r < n; r++) {
        size_t pick = (size_t)(sweep_search_unit(state) * (double)k);
        donor[order[r]] = (int)order[pick < k ? pick : k - 1];
    }
    free(order);
    return (int)k;
}
