/* busy.h — waiting out a busy engine pool. punchcardd answers a predict or
 * generate it cannot take now with 503 (the pool's queue is full) or 429
 * (the caller's own cap) and a Retry-After; punch sleeps that long (capped)
 * and asks again, within a total budget, instead of giving up at once. A
 * refusal without Retry-After is final. */
#ifndef PUNCH_CLIENT_BUSY_H
#define PUNCH_CLIENT_BUSY_H

#include <stdbool.h>

#include "httpc.h"

/* One wait is at most this long, whatever the server asks. */
#define BUSY_MAX_WAIT_S 60L
/* All the waits of one request together stop here. */
#define BUSY_TOTAL_WAIT_S 600L

typedef struct busy_budget {
    long waited_s; /* seconds slept so far for this request */
} busy_budget;

/* When r is a 503 or 429 with Retry-After and the budget allows, print
 * "server busy (...): retrying in N s" to stderr, sleep N seconds and
 * return true: send the request again. False otherwise, and when the
 * sleep was interrupted by a signal. */
bool busy_wait(const httpc_response *r, busy_budget *b);

#endif
