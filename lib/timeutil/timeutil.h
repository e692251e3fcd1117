/* timeutil.h — the two clocks every program reads: wall time for what is
 * stored or shown (UNIX seconds, as the store, progress.jsonl and the API
 * use them) and monotonic time for durations and deadlines, which must not
 * jump when an administrator or NTP sets the clock. */
#ifndef PUNCH_TIMEUTIL_H
#define PUNCH_TIMEUTIL_H

/* Seconds since the UNIX epoch (CLOCK_REALTIME), with nanosecond fraction. */
double timeutil_wall_s(void);

/* Seconds on CLOCK_MONOTONIC: only differences mean anything. */
double timeutil_mono_s(void);

#endif
