/* sweep_pbt.h — population based training (Jaderberg et al. 2017, PBT):
 * at a generation boundary, which members exploit which, as a pure
 * function of their metrics and a seeded generator. Members are ranked
 * by metric (none ranks last, ties by position); each of the bottom
 * ceil(quantile * n) (at most n / 2) takes the weights of a member of the
 * top as many, drawn with the generator; the rest continue as they are. */
#ifndef PUNCH_SWEEP_PBT_H
#define PUNCH_SWEEP_PBT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The generator's state for generation g's decisions (exploit draws, then
 * explore draws) of a sweep with this seed: the same on every host and
 * after a restart, different for each generation. */
uint64_t sweep_pbt_state(uint64_t seed, int generation);

/* How many members the quantile moves: ceil(quantile * n), at most n / 2. */
size_t sweep_pbt_count(size_t n, double quantile);

/* Plan one boundary for the n members' metrics (NAN: none): donor[i] is
 * the member i exploits, or -1 when it continues. Returns how many
 * exploit, or -1 when out of memory. */
int sweep_pbt_plan(const double *metric, size_t n, double quantile, bool maximize,
                   uint64_t *state, int *donor);

#endif
