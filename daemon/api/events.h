/* events.h — GET /api/v1/events: server-sent events (text/event-stream) of
 * job state changes and training progress, each stream filtered to the jobs
 * its caller may see (admins: all).
 *
 * One producer thread reads the store's event feed every EVENTS_PERIOD_MS
 * (one query) and, while anyone listens, the progress of the running jobs,
 * and appends the messages to each subscriber's buffer. A stream with nothing
 * to send is suspended in libmicrohttpd (MHD_suspend_connection) and resumed
 * when the producer has something for it, so an idle stream costs a socket
 * and a few KiB but no thread and no CPU; the HTTP threads stay free for
 * other requests whatever the number of streams. */
#ifndef PUNCH_EVENTS_H
#define PUNCH_EVENTS_H

#include <stdbool.h>

#include "api/api.h"

/* How often the producer looks for news. */
#define EVENTS_PERIOD_MS 250
/* A comment line this often keeps proxies from closing an idle stream and
 * finds clients that went away. */
#define EVENTS_KEEPALIVE_S 15
/* A subscriber that lets this much unsent text pile up is cut off (it
 * reconnects with Last-Event-ID and is replayed from the store). */
#define EVENTS_BUFFER_MAX (1u << 20)
/* At most this many past events are replayed after Last-Event-ID; older
 * gaps get a "reset" event instead (the client reloads its view). */
#define EVENTS_REPLAY_MAX 1000

/* Start the producer thread for d (one per process). false with *err. */
bool events_start(daemon_ctx *d, char *err, size_t errlen);

/* End every open stream (each is resumed to send what it has and its end
 * of stream; http_stop closes any it has not reached), then the producer.
 * Call before http_stop: libmicrohttpd aborts when stopped with suspended
 * connections. Safe when events_start never ran. */
void events_stop(void);

/* GET /api/v1/events for r->caller: 200 text/event-stream. The first
 * message is "hello" with the id the stream starts after; then "state"
 * messages (id: the store's event id; data: {id, job, owner, at, from, to,
 * detail}) and "progress" messages (no id; data: {job, owner, state,
 * progress}). A Last-Event-ID header (or ?last_event_id=) replays the
 * caller's state changes after it. 503 when the producer is not running. */
enum MHD_Result events_stream(api_request *r);

#endif
