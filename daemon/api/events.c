/* events.c — the server-sent event hub: the subscribers, the producer
 * thread, and each stream's content reader (events.h says why it is built
 * this way). One hub per process; its lock guards the subscriber list and
 * every subscriber's buffer and is never held across a store call by the
 * producer. */
#include "api/events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "grow/grow.h"
#include "log.h"
#include "run/rundir.h"
#include "timeutil/timeutil.h"

/* One open stream. */
typedef struct events_sub {
    struct MHD_Connection *conn;
    char identity[AUTH_IDENTITY_MAX];
    bool admin;
    int64_t after;      /* state events up to this id were replayed or predate it */
    char *buf;          /* unsent text: buf[off..len) */
    size_t off, len, cap;
    bool suspended;     /* parked in libmicrohttpd; true until the reader runs
                           again, so every push until then repeats the resume */
    bool cut;           /* over EVENTS_BUFFER_MAX or out of memory: ends with an error */
    bool linked;
    struct events_sub *prev, *next;
} events_sub;

/* The last progress text sent for an active job, and the size of its
 * progress.jsonl then (the producer's own). */
typedef struct events_seen {
    char id[STORE_ID_LEN + 1];
    char *text;
    off_t size;
} events_seen;

/* A message built outside the lock, fanned out under it. */
typedef struct events_msg {
    int64_t id;               /* state events: the store's id; progress: 0 */
    char owner[AUTH_IDENTITY_MAX];
    char *text;
    size_t len;
} events_msg;

typedef struct events_batch {
    events_msg *v;
    size_t n, cap;
    bool short_of_memory;
} events_batch;

/* An active job, copied out of the store's iteration. */
typedef struct events_active {
    char id[STORE_ID_LEN + 1];
    char owner[AUTH_IDENTITY_MAX];
    job_state state;
} events_active;

typedef struct events_active_list {
    events_active *v;
    size_t n, cap;
    bool short_of_memory;
} events_active_list;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* signalled by events_stop */
    pthread_t thread;
    bool running, stopping;
    daemon_ctx *d;
    events_sub *subs;
    size_t n_subs;
    int64_t last_id;          /* producer: the newest event it has fanned out */
    double last_keepalive;
    events_seen *seen;        /* producer: progress last sent, per active job */
    size_t n_seen;
} hub = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- subscribers (hub.lock held) --------------------------------------------- */

static bool events_visible(const events_sub *s, const char *owner)
{
    return s->admin || strcmp(s->identity, owner) == 0;
}

static void events_resume(events_sub *s)
{
    if (s->suspended)
        MHD_resume_connection(s->conn);
}

/* Queue text for s and resume its connection. */
static void events_push(events_sub *s, const char *text, size_t n)
{
    if (s->cut)
        return;
    if (s->off == s->len)
        s->off = s->len = 0;
    if (s->len - s->off + n > EVENTS_BUFFER_MAX) {
        log_warn("events: %s's stream has %zu bytes unsent; cut off (it may reconnect)",
                 s->identity, s->len - s->off);
        s->cut = true;
        events_resume(s);
        return;
    }
    if (s->len + n > s->cap && s->off > 0) {
        memmove(s->buf, s->buf + s->off, s->len - s->off);
        s->len -= s->off;
        s->off = 0;
    }
    if (!grow_reserve((void **)&s->buf, &s->cap, s->len + n, 1)) {
        log_error("events: out of memory for %s's stream; cut off", s->identity);
        s->cut = true;
        events_resume(s);
        return;
    }
    memcpy(s->buf + s->len, text, n);
    s->len += n;
    events_resume(s);
}

static void events_unlink(events_sub *s)
{
    if (!s->linked)
        return;
    if (s->prev)
        s->prev->next = s->next;
    else
        hub.subs = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->linked = false;
    hub.n_subs--;
}

/* ---- the stream's callbacks (libmicrohttpd's threads) ------------------------ */

/* Hand over queued text; with none, park the connection until events_push
 * resumes it (returning 0 without suspending would spin). */
static ssize_t events_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    events_sub *s = cls;
    ssize_t n;
    pthread_mutex_lock(&hub.lock);
    s->suspended = false;
    if (s->cut) {
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (s->len > s->off) {
        size_t k = s->len - s->off < max ? s->len - s->off : max;
        memcpy(buf, s->buf + s->off, k);
        s->off += k;
        n = (ssize_t)k;
    } else if (hub.stopping) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        s->suspended = true;
        MHD_suspend_connection(s->conn);
        n = 0;
    }
    pthread_mutex_unlock(&hub.lock);
    return n;
}

/* The response is gone with its connection. */
static void events_free(void *cls)
{
    events_sub *s = cls;
    pthread_mutex_lock(&hub.lock);
    events_unlink(s);
    pthread_mutex_unlock(&hub.lock);
    free(s->buf);
    free(s);
}

/* ---- messages ---------------------------------------------------------------- */

/* "id: N\nevent: NAME\ndata: JSON\n\n" (no id line when id is 0); body is
 * taken. NULL when out of memory. */
static char *events_format(int64_t id, const char *name, json_t *body, size_t *len)
{
    char *data = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(body);
    if (!data)
        return NULL;
    char idline[40] = "";
    if (id > 0)
        snprintf(idline, sizeof idline, "id: %" PRId64 "\n", id);
    size_t n = strlen(idline) + strlen(name) + strlen(data) + 32;
    char *text = malloc(n);
    if (text) {
        int k = snprintf(text, n, "%sevent: %s\ndata: %s\n\n", idline, name, data);
        *len = k > 0 ? (size_t)k : 0;
    }
    free(data);
    return text;
}

static json_t *events_state_json(const store_feed_event *e)
{
    return json_pack("{s:I, s:s, s:s, s:f, s:s?, s:s, s:s?}", "id", (json_int_t)e->id, "job",
                     e->job_id, "owner", e->owner, "at", e->at, "from", e->from, "to", e->to,
                     "detail", e->detail);
}

static bool events_batch_add(events_batch *b, int64_t id, const char *owner, char *text, size_t len)
{
    if (!text || !grow_reserve((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v)) {
        free(text);
        b->short_of_memory = true;
        return false;
    }
    events_msg *m = &b->v[b->n++];
    m->id = id;
    snprintf(m->owner, sizeof m->owner, "%s", owner ? owner : "");
    m->text = text;
    m->len = len;
    return true;
}

static void events_batch_clear(events_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i].text);
    free(b->v);
    *b = (events_batch){0};
}

static bool events_collect_state(const store_feed_event *e, void *arg)
{
    size_t len = 0;
    char *text = events_format(e->id, "state", events_state_json(e), &len);
    return events_batch_add(arg, e->id, e->owner, text, len);
}

/* Each message to every subscriber who may see it and has not had it (a
 * state event at or before s->after came with its hello or replay; progress
 * has no id and always goes). */
static void events_fan_out(const events_batch *b)
{
    pthread_mutex_lock(&hub.lock);
    for (events_sub *s = hub.subs; s; s = s->next)
        for (size_t i = 0; i < b->n; i++)
            if ((b->v[i].id == 0 || b->v[i].id > s->after) && events_visible(s, b->v[i].owner))
                events_push(s, b->v[i].text, b->v[i].len);
    pthread_mutex_unlock(&hub.lock);
}

/* ---- the producer ------------------------------------------------------------ */

/* State changes since the last tick, in order. */
static void events_tick_states(void)
{
    enum { LIMIT = 500 };
    for (;;) {
        events_batch b = {0};
        if (store_events_since(hub.d->st, hub.last_id, LIMIT, events_collect_state, &b) !=
            STORE_OK) {
            events_batch_clear(&b);
            return; /* logged by the store; the next tick reads them again */
        }
        if (b.short_of_memory) {
            log_error("events: out of memory reading the event feed; retrying next tick");
            events_batch_clear(&b);
            return;
        }
        events_fan_out(&b);
        size_t n = b.n;
        if (n)
            hub.last_id = b.v[n - 1].id;
        events_batch_clear(&b);
        if (n < LIMIT)
            return;
    }
}

static bool events_collect_active(const store_job *job, void *arg)
{
    events_active_list *l = arg;
    if (!grow_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        l->short_of_memory = true;
        return false;
    }
    events_active *a = &l->v[l->n++];
    snprintf(a->id, sizeof a->id, "%s", job->id);
    snprintf(a->owner, sizeof a->owner, "%s", job->owner);
    a->state = job->state;
    return true;
}

static bool events_anyone_sees(const char *owner)
{
    bool any = false;
    pthread_mutex_lock(&hub.lock);
    for (events_sub *s = hub.subs; s && !any; s = s->next)
        any = events_visible(s, owner);
    pthread_mutex_unlock(&hub.lock);
    return any;
}

static events_seen *events_seen_find(const char *id)
{
    for (size_t i = 0; i < hub.n_seen; i++)
        if (strcmp(hub.seen[i].id, id) == 0)
            return &hub.seen[i];
    return NULL;
}

static void events_seen_clear(events_seen *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].text);
    free(v);
}

/* The running jobs' progress, each when it changed and someone may see it. */
static void events_tick_progress(void)
{
    events_active_list act = {0};
    if (store_active_jobs(hub.d->st, events_collect_active, &act) != STORE_OK ||
        act.short_of_memory) {
        free(act.v);
        return;
    }
    events_seen *seen = act.n ? calloc(act.n, sizeof *seen) : NULL;
    if (act.n && !seen) {
        free(act.v);
        return;
    }
    size_t n_seen = 0;
    events_batch b = {0};
    for (size_t i = 0; i < act.n; i++) {
        const events_active *a = &act.v[i];
        if (a->state != JOB_RUNNING || !events_anyone_sees(a->owner))
            continue;
        char dir[4096], file[4160];
        if (!rundir_path(dir, sizeof dir, hub.d->cfg.data_dir, a->id, NULL))
            continue;
        /* progress.jsonl only grows: the same size is the same progress, and
         * a tick costs one stat per running job. */
        snprintf(file, sizeof file, "%s/progress.jsonl", dir);
        struct stat st;
        if (stat(file, &st) != 0)
            continue;
        events_seen *old = events_seen_find(a->id);
        if (old && old->size == st.st_size) {
            seen[n_seen] = *old;
            old->text = NULL; /* moved */
            n_seen++;
            continue;
        }
        rundir_progress p = {0};
        rundir_read_progress(dir, &p);
        /* Nothing written yet is no news. */
        char *text = json_object_size(p.progress)
                         ? json_dumps(p.progress, JSON_COMPACT | JSON_SORT_KEYS)
                         : NULL;
        const char *before = old ? old->text : NULL;
        if (text && (!before || strcmp(before, text) != 0)) {
            json_t *body = json_pack("{s:s, s:s, s:s, s:O}", "job", a->id, "owner", a->owner,
                                     "state", job_state_name(a->state), "progress", p.progress);
            size_t len = 0;
            char *msg = events_format(0, "progress", body, &len);
            events_batch_add(&b, 0, a->owner, msg, len);
        }
        rundir_progress_clear(&p);
        if (!text)
            continue;
        snprintf(seen[n_seen].id, sizeof seen[n_seen].id, "%s", a->id);
        seen[n_seen].size = st.st_size;
        seen[n_seen++].text = text;
    }
    free(act.v);
    events_fan_out(&b);
    events_batch_clear(&b);
    events_seen_clear(hub.seen, hub.n_seen);
    hub.seen = seen;
    hub.n_seen = n_seen;
}

static void events_tick(void)
{
    events_tick_states();
    pthread_mutex_lock(&hub.lock);
    size_t n_subs = hub.n_subs;
    pthread_mutex_unlock(&hub.lock);
    if (n_subs == 0) {
        events_seen_clear(hub.seen, hub.n_seen);
        hub.seen = NULL;
        hub.n_seen = 0;
        return;
    }
    events_tick_progress();
    double now = timeutil_mono_s();
    if (now - hub.last_keepalive >= EVENTS_KEEPALIVE_S) {
        static const char keepalive[] = ": keepalive\n\n";
        pthread_mutex_lock(&hub.lock);
        for (events_sub *s = hub.subs; s; s = s->next)
            events_push(s, keepalive, sizeof keepalive - 1);
        pthread_mutex_unlock(&hub.lock);
        hub.last_keepalive = now;
    }
}

static void *events_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hub.lock);
    while (!hub.stopping) {
        pthread_mutex_unlock(&hub.lock);
        events_tick();
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += EVENTS_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&hub.lock);
        while (!hub.stopping && pthread_cond_timedwait(&hub.wake, &hub.lock, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&hub.lock);
    return NULL;
}

bool events_start(daemon_ctx *d, char *err, size_t errlen)
{
    int64_t last = 0;
    if (store_events_last(d->st, &last) != STORE_OK) {
        snprintf(err, errlen, "events: cannot read the last event id from the store");
        return false;
    }
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc == 0) {
        rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (rc == 0)
            rc = pthread_cond_init(&hub.wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (rc != 0) {
        snprintf(err, errlen, "events: condition variable: %s", strerror(rc));
        return false;
    }
    hub.d = d;
    hub.last_id = last;
    hub.last_keepalive = timeutil_mono_s();
    hub.stopping = false;
    rc = pthread_create(&hub.thread, NULL, events_main, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&hub.wake);
        snprintf(err, errlen, "events: cannot start the producer thread: %s", strerror(rc));
        return false;
    }
    pthread_mutex_lock(&hub.lock);
    hub.running = true;
    pthread_mutex_unlock(&hub.lock);
    return true;
}

void events_stop(void)
{
    pthread_mutex_lock(&hub.lock);
    if (!hub.running) {
        pthread_mutex_unlock(&hub.lock);
        return;
    }
    hub.stopping = true;
    for (events_sub *s = hub.subs; s; s = s->next)
        events_resume(s);
    pthread_cond_signal(&hub.wake);
    pthread_mutex_unlock(&hub.lock);
    pthread_join(hub.thread, NULL);
    pthread_cond_destroy(&hub.wake);
    events_seen_clear(hub.seen, hub.n_seen);
    hub.seen = NULL;
    hub.n_seen = 0;
    pthread_mutex_lock(&hub.lock);
    hub.running = false;
    pthread_mutex_unlock(&hub.lock);
}

/* ---- GET /api/v1/events ------------------------------------------------------ */

typedef struct events_replay {
    events_sub *s;
    int rows;
    int64_t last;
} events_replay;

static bool events_replay_one(const store_feed_event *e, void *arg)
{
    events_replay *rp = arg;
    rp->rows++;
    rp->last = e->id;
    if (!events_visible(rp->s, e->owner))
        return true;
    size_t len = 0;
    char *text = events_format(e->id, "state", events_state_json(e), &len);
    if (!text) {
        rp->s->cut = true;
        return false;
    }
    events_push(rp->s, text, len);
    free(text);
    return true;
}

/* Under hub.lock: the hello and, after a Last-Event-ID, the replay; sets
 * s->after so the producer sends only what follows. */
static bool events_open(events_sub *s, int64_t last_event_id)
{
    int64_t head = 0;
    if (store_events_last(hub.d->st, &head) != STORE_OK)
        return false;
    size_t len = 0;
    char *hello;
    if (last_event_id < 0 || last_event_id >= head) {
        s->after = head;
        hello = events_format(head, "hello", json_pack("{s:I}", "after", (json_int_t)head), &len);
    } else {
        hello = events_format(0, "hello", json_pack("{s:I}", "after", (json_int_t)last_event_id),
                              &len);
    }
    if (!hello)
        return false;
    events_push(s, hello, len);
    free(hello);
    if (last_event_id < 0 || last_event_id >= head)
        return !s->cut;
    events_replay rp = {s, 0, last_event_id};
    if (store_events_since(hub.d->st, last_event_id, EVENTS_REPLAY_MAX, events_replay_one, &rp) !=
        STORE_OK)
        return false;
    if (rp.rows == EVENTS_REPLAY_MAX && rp.last < head) {
        /* Too far behind: drop the partial replay, tell it to reload. */
        s->off = s->len = 0;
        char *reset = events_format(head, "reset", json_pack("{s:I}", "after", (json_int_t)head),
                                    &len);
        if (!reset)
            return false;
        events_push(s, reset, len);
        free(reset);
    }
    s->after = rp.last > head ? rp.last : head;
    return !s->cut;
}

enum MHD_Result events_stream(api_request *r)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Last-Event-ID");
    if (!h)
        h = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "last_event_id");
    int64_t last_event_id = -1;
    if (h && h[0]) {
        char *end;
        errno = 0;
        long long v = strtoll(h, &end, 10);
        if (errno || *end || v < 0)
            return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "Last-Event-ID",
                                   "Last-Event-ID: expected an event id >= 0, got \"%.40s\"", h);
        last_event_id = v;
    }
    events_sub *s = calloc(1, sizeof *s);
    if (!s)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    s->conn = r->conn;
    snprintf(s->identity, sizeof s->identity, "%s", r->caller.identity);
    s->admin = r->caller.role == AUTH_ROLE_ADMIN;
    /* From here the response owns s (events_free). */
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, events_read, s, events_free);
    if (!resp) {
        free(s);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    pthread_mutex_lock(&hub.lock);
    bool up = hub.running && !hub.stopping;
    bool opened = up && events_open(s, last_event_id);
    if (opened) {
        s->next = hub.subs;
        if (hub.subs)
            hub.subs->prev = s;
        hub.subs = s;
        s->linked = true;
        hub.n_subs++;
    }
    pthread_mutex_unlock(&hub.lock);
    if (!opened) {
        MHD_destroy_response(resp);
        return up ? api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                    "cannot open the event stream (see the daemon's log)")
                  : api_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                                    "the event stream is not running (shutting down?)");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    /* The stream is idle by design; the keepalive finds dead clients. */
    MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    return api_reply_response(r, MHD_HTTP_OK, resp);
}
