/* dist_watchdog.h — the watchdog thread that ends a job whose rank stopped making
 * progress. */
#ifndef PUNCH_DIST_WATCHDOG_H
#define PUNCH_DIST_WATCHDOG_H

/* A thread that aborts the job when this rank has not called
 * dist_watchdog_tick for `limit_s` seconds (a peer hung or died inside a
 * collective, or this rank is stuck), naming the rank and what it was
 * doing. */
int dist_watchdog_start(double limit_s);
void dist_watchdog_tick(const char *doing);
/* The same with twice the limit: for waiting on a rank that runs a
 * watchdog of its own (a worker waiting on the server), so the rank that
 * sees the actual culprit reports first. `doing` must outlive the tick. */
void dist_watchdog_tick_patient(const char *doing);
/* The same with an explicit limit for this activity. */
void dist_watchdog_tick_for(const char *doing, double seconds);
void dist_watchdog_stop(void);

#endif
