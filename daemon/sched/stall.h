/* stall.h — when a running job has stopped making progress: a pure rule,
 * unit-tested (tests/daemon/test_stall.c).
 *
 * A job's progress is what its ranks report (rank 0's progress.jsonl grows
 * with every step, epoch, evaluation and checkpoint). The longest gap
 * between two reports seen so far is its slowest step; a job is stalled
 * once nothing has come for longer than max(grace, factor x that gap).
 * The factor lets a job whose steps are slow by nature (or whose
 * evaluations and checkpoint writes are long) wait longer; the grace keeps
 * a job that has reported little so far from being judged on its first
 * quick steps. A grace of 0 turns the rule off. */
#ifndef PUNCH_STALL_H
#define PUNCH_STALL_H

#include <stdbool.h>

/* What is known of one running job's reports. */
typedef struct stall_watch {
    double last_report;   /* when its progress last changed */
    double slowest_gap;   /* the longest time between two reports so far */
} stall_watch;

/* A job first seen at `now`: counted from then. */
void stall_watch_start(stall_watch *w, double now);

/* Its progress changed at `now`. */
void stall_watch_report(stall_watch *w, double now);

/* Seconds without a report after which it is stalled (0: never). */
double stall_limit(const stall_watch *w, int grace_s, int factor);

/* Is it stalled at `now`? */
bool stall_is_stalled(const stall_watch *w, double now, int grace_s, int factor);

#endif
