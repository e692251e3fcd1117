/* sweep_asha.h — asynchronous successive halving (Li et al. 2020, ASHA):
 * the rungs' epoch budgets and the promotion rule, as pure functions. A
 * trial that completed rung k is promoted to rung k+1 when it is among the
 * top floor(n / eta) of the n trials that have completed rung k so far and
 * has not been promoted yet; the decision is taken whenever a slot frees,
 * never waiting for a rung to fill. */
#ifndef PUNCH_SWEEP_ASHA_H
#define PUNCH_SWEEP_ASHA_H

#include <stdbool.h>
#include <stddef.h>

/* The most rungs a sweep has (min_epochs * eta^k up to max_epochs). */
#define SWEEP_ASHA_MAX_RUNGS 16

/* The epoch budgets of the rungs: min_epochs, min_epochs * eta, ... while
 * below max_epochs, then max_epochs. Returns their number (at most cap),
 * 0 when the arguments make no rungs (min < 1, max < min, eta < 2). */
int sweep_asha_rungs(int min_epochs, int max_epochs, int eta, int *rungs, int cap);

/* One trial that completed a rung: its metric there (NAN: none, ranks
 * last) and whether it was promoted from it already. */
typedef struct sweep_asha_entry {
    double metric;
    bool promoted;
} sweep_asha_entry;

/* Which of the n entries to promote now: the best-ranked entry among the
 * top floor(n / eta) that is not promoted yet, or -1. maximize: larger
 * metrics rank first. Ties rank by position (the earlier trial first). */
int sweep_asha_pick(const sweep_asha_entry *e, size_t n, int eta, bool maximize);

#endif
