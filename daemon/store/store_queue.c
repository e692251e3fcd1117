/* store_queue.c — the queue's run order and pages of job lists: every queued
 * job's place per queue generation, one job's position counted from the
 * nearer end, the scheduler's scans, the active jobs and the counts per state. */
#include "store/store_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "grow/grow.h"
#include "log.h"

/* ---- pages ------------------------------------------------------------------ */

static int store_place_cmp(const void *a, const void *b)
{
    int64_t x = ((const store_place *)a)->seq, y = ((const store_place *)b)->seq;
    return (x > y) - (x < y);
}

/* Every queued job's place, from one walk of the run-order index, into *out
 * (inside c's read transaction); false (logged) on a store error or when
 * memory runs out. */
static bool store_places_walk(store_conn *c, store_places *out)
{
    sqlite3_stmt *s = store_stmt(c, ST_QUEUE_WALK);
    if (!s)
        return false;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!grow_reserve((void **)&out->v, &cap, out->n + 1, sizeof *out->v)) {
            log_error("store: out of memory walking a queue of %zu jobs", out->n);
            rc = SQLITE_NOMEM;
            break;
        }
        out->v[out->n] = (store_place){sqlite3_column_int64(s, 0), (int)out->n + 1};
        out->n++;
    }
    store_done(s);
    if (rc != SQLITE_DONE) {
        if (rc != SQLITE_NOMEM)
            store_log_rc(c, rc, "walking the queue");
        free(out->v);
        *out = (store_places){0};
        return false;
    }
    qsort(out->v, out->n, sizeof *out->v, store_place_cmp);
    return true;
}

/* Bring st->places to generation gen, walking the queue in c's read
 * transaction when it moved; places_lock held. The lock is held across the
 * walk, so concurrent readers wait for one walk instead of each doing
 * their own. */
static bool store_places_current(store *st, store_conn *c, int64_t gen)
{
    if (st->places.gen == gen)
        return true;
    store_places fresh = {0};
    if (!store_places_walk(c, &fresh))
        return false;
    free(st->places.v);
    st->places = fresh;
    st->places.gen = gen;
    return true;
}

/* The place of the queued job `seq`; 0 when it is not in the queue. */
static int store_places_find(const store_places *p, int64_t seq)
{
    store_place key = {seq, 0};
    const store_place *hit = bsearch(&key, p->v, p->n, sizeof key, store_place_cmp);
    return hit ? hit->place : 0;
}

/* Fill the places of the page's queued jobs from st->places (read in c's
 * transaction, walked again if the queue's generation moved). */
static bool store_page_places(store *st, store_conn *c, store_page *page)
{
    double gen = -1;
    if (!store_query_double(c, ST_QUEUE_GEN, NULL, &gen))
        return false;
    pthread_mutex_lock(&st->places_lock);
    bool ok = store_places_current(st, c, (int64_t)gen);
    for (size_t i = 0; ok && i < page->n; i++)
        if (page->jobs[i].state == JOB_QUEUED)
            page->queue_position[i] = store_places_find(&st->places, page->jobs[i].seq);
    pthread_mutex_unlock(&st->places_lock);
    return ok;
}

/* Count with a (priority, vstart, seq) key bound as ?1..?3. */
static long store_count_rel(store_conn *c, stmt_id id, const store_job *job, long limit)
{
    sqlite3_stmt *s = store_stmt(c, id);
    long n = -1;
    if (!s)
        return -1;
    sqlite3_bind_int(s, 1, job->priority);
    sqlite3_bind_double(s, 2, job->vstart);
    sqlite3_bind_int64(s, 3, job->seq);
    if (limit > 0)
        sqlite3_bind_int64(s, 4, limit);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        n = (long)sqlite3_column_int64(s, 0);
    else
        store_log_rc(c, rc, "counting the queue");
    store_done(s);
    return n;
}

/* A queued job's place while st->places is stale (c in a read transaction
 * at queue generation gen): counted from the nearer end, each count bounded
 * (COUNT walks every row it counts), as a new job is usually near the back
 * and a starting one near the front; in the middle of a long queue, one
 * walk of it, which later reads share until the queue changes. -1 on a
 * store error. */
static long store_position_counted(store *st, store_conn *c, const store_job *job, int64_t gen)
{
    enum { NEAR_END = 256 };
    long ahead = store_count_rel(c, ST_QUEUE_AHEAD, job, NEAR_END);
    if (ahead < 0)
        return -1;
    if (ahead < NEAR_END)
        return ahead + 1;
    long behind = store_count_rel(c, ST_QUEUE_BEHIND, job, NEAR_END);
    if (behind < 0)
        return -1;
    if (behind < NEAR_END) {
        double total = 0;
        if (!store_query_double(c, ST_QUEUED_TOTAL, NULL, &total))
            return -1;
        return (long)total - behind > 0 ? (long)total - behind : 0;
    }
    pthread_mutex_lock(&st->places_lock);
    long pos = store_places_current(st, c, gen) ? store_places_find(&st->places, job->seq) : -1;
    pthread_mutex_unlock(&st->places_lock);
    return pos;
}

int store_queue_position(store *st, const store_job *job)
{
    if (job->state != JOB_QUEUED)
        return 0;
    /* One read transaction keeps the figures consistent. */
    store_conn *c = store_acquire(st);
    long pos = -1;
    double gen = -1;
    if (store_exec_sql(c, "BEGIN")) {
        if (store_query_double(c, ST_QUEUE_GEN, NULL, &gen)) {
            pthread_mutex_lock(&st->places_lock);
            bool current = st->places.gen == (int64_t)gen;
            if (current)
                pos = store_places_find(&st->places, job->seq);
            pthread_mutex_unlock(&st->places_lock);
            if (!current)
                pos = store_position_counted(st, c, job, (int64_t)gen);
        }
        if (!store_exec_sql(c, "COMMIT"))
            store_rollback(c);
    }
    store_release(st, c);
    return (int)pos;
}

static bool store_page_active(store_conn *c, store_page *page)
{
    sqlite3_stmt *s = store_stmt(c, ST_ACTIVE_BY_OWNER);
    if (!s)
        return false;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!grow_reserve((void **)&page->active, &cap, page->n_active + 1,
                          sizeof *page->active)) {
            log_error("store: out of memory counting active jobs");
            rc = SQLITE_NOMEM;
            break;
        }
        store_owner_count *oc = &page->active[page->n_active++];
        store_col_copy(s, 0, oc->owner, sizeof oc->owner);
        oc->count = sqlite3_column_int(s, 1);
    }
    store_done(s);
    if (rc == SQLITE_NOMEM)
        return false;
    return store_log_rc(c, rc, "counting active jobs per owner");
}

/* The page's rows, inside c's read transaction. */
static bool store_page_rows(store_conn *c, const store_page_query *q, store_page *page)
{
    int64_t first = 0;
    if (!isnan(q->since)) {
        sqlite3_stmt *s = store_stmt(c, ST_SEQ_SINCE);
        if (!s)
            return false;
        sqlite3_bind_double(s, 1, q->since);
        int rc = sqlite3_step(s);
        first = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : INT64_MAX;
        store_done(s);
        if (!store_log_rc(c, rc, "finding the first job since a time"))
            return false;
    }
    bool several = q->state < 0 && q->states != 0;
    stmt_id id = several ? (q->owner ? ST_PAGE_OWNER_STATES : ST_PAGE_STATES)
                 : q->owner ? (q->state >= 0 ? ST_PAGE_OWNER_STATE : ST_PAGE_OWNER)
                            : (q->state >= 0 ? ST_PAGE_STATE : ST_PAGE_ALL);
    sqlite3_stmt *s = store_stmt(c, id);
    if (!s)
        return false;
    if (q->owner)
        store_bind_text(s, 1, q->owner);
    if (q->state >= 0)
        store_bind_text(s, 2, job_state_name((job_state)q->state));
    if (q->name_glob)
        store_bind_text(s, 7, q->name_glob);
    /* One arm per state kept; the others stay NULL and read nothing. */
    for (int js = 0, arm = 8; several && js < JOB_STATE_COUNT; js++)
        if (q->states & (1u << (unsigned)js))
            store_bind_text(s, arm++, job_state_name((job_state)js));
    sqlite3_bind_int64(s, 3, q->before > 0 ? q->before : INT64_MAX);
    sqlite3_bind_int64(s, 4, first);
    sqlite3_bind_double(s, 5, isnan(q->since) ? -INFINITY : q->since);
    sqlite3_bind_int(s, 6, q->limit + 1); /* one more says whether more follow */
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (page->n == (size_t)q->limit) {
            page->more = true;
            rc = SQLITE_DONE;
            break;
        }
        store_row_to_job(s, &page->jobs[page->n++]);
    }
    store_done(s);
    return store_log_rc(c, rc, "listing jobs");
}

store_status store_job_page(store *st, const store_page_query *q, store_page *page)
{
    memset(page, 0, sizeof *page);
    if (q->limit < 1)
        return STORE_ERROR;
    page->jobs = calloc((size_t)q->limit, sizeof *page->jobs);
    page->queue_position = calloc((size_t)q->limit, sizeof *page->queue_position);
    if (!page->jobs || !page->queue_position) {
        log_error("store: out of memory for a page of %d jobs", q->limit);
        store_page_clear(page);
        return STORE_ERROR;
    }
    store_conn *c = store_acquire(st);
    bool ok = store_exec_sql(c, "BEGIN") && store_page_rows(c, q, page);
    bool queued = false;
    for (size_t i = 0; ok && i < page->n; i++)
        queued = queued || page->jobs[i].state == JOB_QUEUED;
    if (ok && queued)
        ok = store_page_places(st, c, page) && (!q->owner_active || store_page_active(c, page));
    if (!(ok && store_exec_sql(c, "COMMIT"))) {
        store_rollback(c);
        ok = false;
    }
    store_release(st, c);
    if (!ok) {
        store_page_clear(page);
        return STORE_ERROR;
    }
    return STORE_OK;
}

void store_page_clear(store_page *page)
{
    for (size_t i = 0; page->jobs && i < page->n; i++)
        store_job_clear(&page->jobs[i]);
    free(page->jobs);
    free(page->queue_position);
    free(page->active);
    memset(page, 0, sizeof *page);
}

int store_page_owner_active(const store_page *page, const char *owner)
{
    for (size_t i = 0; i < page->n_active; i++)
        if (strcmp(page->active[i].owner, owner) == 0)
            return page->active[i].count;
    return 0;
}

store_status store_queue_scan(store *st, int limit, store_job_cb cb, void *arg)
{
    const store_arg a[] = {STORE_INT(limit)};
    return store_stmt_jobs(st, ST_QUEUE_SCAN, a, 1, cb, arg);
}

store_status store_queue_scan_startable(store *st, int limit, int max_running,
                                       store_job_cb cb, void *arg)
{
    if (max_running <= 0)
        return store_queue_scan(st, limit, cb, arg);
    const store_arg a[] = {STORE_INT(limit), STORE_INT(max_running)};
    return store_stmt_jobs(st, ST_QUEUE_SCAN_STARTABLE, a, 2, cb, arg);
}

store_status store_active_jobs(store *st, store_job_cb cb, void *arg)
{
    return store_stmt_jobs(st, ST_ACTIVE, NULL, 0, cb, arg);
}

store_status store_counts(store *st, long counts[JOB_STATE_COUNT])
{
    memset(counts, 0, sizeof(long) * JOB_STATE_COUNT);
    store_conn *c = store_acquire(st);
    store_status rs = STORE_ERROR;
    sqlite3_stmt *s = store_stmt(c, ST_COUNTS);
    if (s) {
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            job_state js;
            const unsigned char *name = sqlite3_column_text(s, 0);
            if (name && job_state_parse((const char *)name, &js))
                counts[js] = (long)sqlite3_column_int64(s, 1);
        }
        rs = store_log_rc(c, rc, "counting jobs") ? STORE_OK : STORE_ERROR;
        store_done(s);
    }
    store_release(st, c);
    return rs;
}
