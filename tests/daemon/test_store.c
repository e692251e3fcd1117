/* test_store.c — the SQLite store: submit and read back, per-owner queue
 * limit, run order with priority and fair share, every transition and its
 * conflicts, events, counts, delete, and reopening (durability, migrations). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "scratch.h"
#include "store/store.h"
#include "store_schema.h"

#define N_MIGRATIONS ((int)(sizeof store_migrations / sizeof store_migrations[0]))

typedef struct fixture {
    char dir[SCRATCH_DIR_LEN];
    char path[128];
    store *st;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !scratch_create(f->dir, "store"))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/q.db", f->dir);
    char err[256];
    f->st = store_open(f->path, 2, err, sizeof err);
    if (!f->st)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_close(f->st);
    bool removed = scratch_remove(f->dir);
    free(f);
    return removed ? 0 : -1;
}

static store_status submit(store *st, const char *owner, int priority, int ranks, int max_queued,
                           char id[STORE_ID_LEN + 1])
{
    store_new_job nj = {.owner = owner, .name = "j", .trainer = "single",
                        .spec = "{\"model\": \"mlp\"}", .priority = priority, .ranks = ranks,
                        .workers = ranks, .threads = 1, .time_limit_s = 0};
    return store_job_submit(st, &nj, max_queued, 1000.0, id);
}

static void test_submit_and_get(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 3, 2, 0, id), STORE_OK);
    assert_int_equal(strlen(id), STORE_ID_LEN);
    assert_int_equal(strspn(id, "0123456789abcdef"), STORE_ID_LEN);
    store_job j;
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_string_equal(j.owner, "alice");
    assert_int_equal(j.state, JOB_QUEUED);
    assert_int_equal(j.priority, 3);
    assert_int_equal(j.ranks, 2);
    assert_true(j.submitted_at == 1000.0);
    assert_true(isnan(j.started_at));
    assert_false(j.has_exit_code);
    assert_int_equal(store_queue_position(f->st, &j), 1);
    store_job_clear(&j);
    char *spec = NULL;
    assert_int_equal(store_job_spec(f->st, id, &spec), STORE_OK);
    assert_string_equal(spec, "{\"model\": \"mlp\"}");
    free(spec);
    assert_int_equal(store_job_get(f->st, "000000000000", &j), STORE_NOT_FOUND);
    assert_int_equal(store_job_latest(f->st, "alice", &j), STORE_OK);
    assert_string_equal(j.id, id);
    store_job_clear(&j);
    assert_int_equal(store_job_latest(f->st, "nobody", &j), STORE_NOT_FOUND);
}

/* A short id: the jobs whose ids start with it, in id order, the owner's
 * only unless the owner is NULL (an admin), at most max. */
static void test_ids_by_prefix(void **state)
{
    fixture *f = *state;
    enum { N = 48 };
    char ids[N][STORE_ID_LEN + 1];
    for (int i = 0; i < N; i++)
        assert_int_equal(submit(f->st, i % 2 ? "bob" : "alice", 0, 1, 0, ids[i]), STORE_OK);
    for (int digit = 0; digit < 16; digit++) {
        char prefix[2] = {"0123456789abcdef"[digit], 0};
        char want[N][STORE_ID_LEN + 1], got[N][STORE_ID_LEN + 1];
        int n_want = 0, n_all = 0, n = -1;
        for (int i = 0; i < N; i++) {
            if (ids[i][0] != prefix[0])
                continue;
            n_all++;
            if (i % 2 == 0)
                memcpy(want[n_want++], ids[i], STORE_ID_LEN + 1);
        }
        qsort(want, (size_t)n_want, sizeof want[0], (int (*)(const void *, const void *))strcmp);
        assert_int_equal(store_job_ids_by_prefix(f->st, "alice", prefix, got, N, &n), STORE_OK);
        assert_int_equal(n, n_want);
        for (int i = 0; i < n; i++)
            assert_string_equal(got[i], want[i]);
        assert_int_equal(store_job_ids_by_prefix(f->st, NULL, prefix, got, N, &n), STORE_OK);
        assert_int_equal(n, n_all);
        assert_int_equal(store_job_ids_by_prefix(f->st, NULL, prefix, got, 2, &n), STORE_OK);
        assert_int_equal(n, n_all < 2 ? n_all : 2);
    }
    int n = -1;
    char got[2][STORE_ID_LEN + 1];
    assert_int_equal(store_job_ids_by_prefix(f->st, NULL, ids[0], got, 2, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_string_equal(got[0], ids[0]);
    assert_int_equal(store_job_ids_by_prefix(f->st, "bob", ids[0], got, 2, &n), STORE_OK);
    assert_int_equal(n, 0);
}

static void test_queue_limit(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    for (int i = 0; i < 3; i++)
        assert_int_equal(submit(f->st, "alice", 0, 1, 3, id), STORE_OK);
    assert_int_equal(submit(f->st, "alice", 0, 1, 3, id), STORE_LIMIT);
    /* Other users are not affected; a cancelled job frees a place. */
    assert_int_equal(submit(f->st, "bob", 0, 1, 3, id), STORE_OK);
    store_job j;
    assert_int_equal(store_job_latest(f->st, "alice", &j), STORE_OK);
    assert_int_equal(store_job_cancel_queued(f->st, j.id, 1001.0), STORE_OK);
    store_job_clear(&j);
    assert_int_equal(submit(f->st, "alice", 0, 1, 3, id), STORE_OK);
    long counts[JOB_STATE_COUNT];
    assert_int_equal(store_counts(f->st, counts), STORE_OK);
    assert_int_equal(counts[JOB_QUEUED], 4);
    assert_int_equal(counts[JOB_CANCELLED], 1);
}

typedef struct order_ctx {
    char owners[16][64];
    int n;
} order_ctx;

static bool collect_owner(const store_job *job, void *arg)
{
    order_ctx *o = arg;
    snprintf(o->owners[o->n++], sizeof o->owners[0], "%s", job->owner);
    return o->n < 16;
}

static void test_queue_order(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], urgent[STORE_ID_LEN + 1];
    for (int i = 0; i < 4; i++)
        assert_int_equal(submit(f->st, "a", 0, 1, 0, id), STORE_OK);
    assert_int_equal(submit(f->st, "b", 0, 1, 0, id), STORE_OK);
    assert_int_equal(submit(f->st, "b", 0, 1, 0, id), STORE_OK);
    assert_int_equal(submit(f->st, "c", 5, 1, 0, urgent), STORE_OK);
    order_ctx o = {0};
    assert_int_equal(store_queue_scan(f->st, 100, collect_owner, &o), STORE_OK);
    const char *want[] = {"c", "a", "b", "a", "b", "a", "a"};
    assert_int_equal(o.n, 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(o.owners[i], want[i]);
    /* Positions agree with the scan. */
    store_job j;
    assert_int_equal(store_job_get(f->st, urgent, &j), STORE_OK);
    assert_int_equal(store_queue_position(f->st, &j), 1);
    store_job_clear(&j);
    assert_int_equal(store_job_latest(f->st, "b", &j), STORE_OK);
    assert_int_equal(store_queue_position(f->st, &j), 5);
    store_job_clear(&j);
    /* The limit stops the scan. */
    o.n = 0;
    assert_int_equal(store_queue_scan(f->st, 2, collect_owner, &o), STORE_OK);
    assert_int_equal(o.n, 2);
}

typedef struct ev_ctx {
    char to[8][16];
    char detail[8][64];
    double at[8];
    int n;
} ev_ctx;

static bool collect_event(double at, const char *from, const char *to, const char *detail,
                          void *arg)
{
    (void)from;
    ev_ctx *e = arg;
    e->at[e->n] = at;
    snprintf(e->detail[e->n], sizeof e->detail[0], "%s", detail ? detail : "");
    snprintf(e->to[e->n++], sizeof e->to[0], "%s", to);
    return e->n < 8;
}

static void test_transitions(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 2, 0, id), STORE_OK);
    /* Not yet started: these do not apply. */
    assert_int_equal(store_job_mark_running(f->st, id, 4242, 1001), STORE_CONFLICT);
    assert_int_equal(store_job_request_stop(f->st, id, "cancel", 1001), STORE_CONFLICT);
    assert_int_equal(store_job_mark_starting(f->st, id, NULL, NULL, 1002), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->st, id, NULL, NULL, 1002), STORE_CONFLICT);
    assert_int_equal(store_job_cancel_queued(f->st, id, 1002), STORE_CONFLICT);
    assert_int_equal(store_job_set_supervisor(f->st, id, 777, 123456), STORE_OK);
    assert_int_equal(store_job_mark_running(f->st, id, 778, 1003), STORE_OK);
    assert_int_equal(store_job_request_stop(f->st, id, "timeout", 1004), STORE_OK);
    /* The first reason wins. */
    assert_int_equal(store_job_request_stop(f->st, id, "cancel", 1005), STORE_OK);
    assert_int_equal(store_job_mark_killed(f->st, id), STORE_OK);
    store_job j;
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_int_equal(j.state, JOB_RUNNING);
    assert_int_equal(j.supervisor_pid, 777);
    assert_int_equal(j.supervisor_start, 123456);
    assert_int_equal(j.sid, 778);
    assert_string_equal(j.stop_reason, "timeout");
    assert_true(j.stop_requested_at == 1004);
    assert_true(j.killed);
    assert_true(j.started_at == 1002);
    store_job_clear(&j);
    int code = 143;
    assert_int_equal(store_job_finish(f->st, id, JOB_RUNNING, &code, NULL, NULL, NULL, 1006),
                     STORE_CONFLICT);
    assert_int_equal(store_job_finish(f->st, id, JOB_TIMEOUT, &code, "time limit", "{\"epoch\":1}",
                                      "{\"test_loss\":1}", 1006),
                     STORE_OK);
    /* Final is final. */
    assert_int_equal(store_job_finish(f->st, id, JOB_FAILED, NULL, NULL, NULL, NULL, 1007),
                     STORE_CONFLICT);
    assert_int_equal(store_job_request_stop(f->st, id, "cancel", 1007), STORE_CONFLICT);
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_int_equal(j.state, JOB_TIMEOUT);
    assert_true(j.has_exit_code);
    assert_int_equal(j.exit_code, 143);
    assert_string_equal(j.error, "time limit");
    assert_string_equal(j.progress, "{\"epoch\":1}");
    assert_string_equal(j.result, "{\"test_loss\":1}");
    assert_true(j.finished_at == 1006);
    store_job_clear(&j);
    ev_ctx e = {0};
    assert_int_equal(store_job_events(f->st, id, collect_event, &e), STORE_OK);
    const char *want[] = {"queued", "starting", "running", "timeout"};
    const double at[] = {1000, 1002, 1003, 1006};
    assert_int_equal(e.n, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(e.to[i], want[i]);
        assert_true(e.at[i] == at[i]);
    }
    assert_int_equal(store_job_delete(f->st, id), STORE_OK);
    assert_int_equal(store_job_get(f->st, id, &j), STORE_NOT_FOUND);
    e.n = 0;
    assert_int_equal(store_job_events(f->st, id, collect_event, &e), STORE_OK);
    assert_int_equal(e.n, 0);
    assert_int_equal(store_job_delete(f->st, id), STORE_NOT_FOUND);
}

typedef struct count_ctx {
    int n;
    int64_t last_seq;
    bool desc;
} count_ctx;

static bool count_job(const store_job *job, void *arg)
{
    count_ctx *c = arg;
    if (c->n > 0 && job->seq >= c->last_seq)
        c->desc = false;
    c->last_seq = job->seq;
    c->n++;
    return true;
}

/* Count a page of owner's jobs (NULL: everyone's) in state (< 0: all)
 * into c, as count_job does. */
static void count_page(store *st, const char *owner, int state, count_ctx *c)
{
    store_page page;
    store_page_query q = {.owner = owner, .state = state, .since = NAN, .limit = 100};
    assert_int_equal(store_job_page(st, &q, &page), STORE_OK);
    assert_false(page.more);
    for (size_t i = 0; i < page.n; i++)
        count_job(&page.jobs[i], c);
    store_page_clear(&page);
}

static void test_list_and_active(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], first[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 1, 0, first), STORE_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(submit(f->st, "alice", 0, 1, 0, id), STORE_OK);
    assert_int_equal(submit(f->st, "bob", 0, 1, 0, id), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->st, first, NULL, NULL, 1001), STORE_OK);
    count_ctx c = {0, 0, true};
    count_page(f->st, "alice", -1, &c);
    assert_int_equal(c.n, 4);
    assert_true(c.desc); /* newest first */
    c = (count_ctx){0, 0, true};
    count_page(f->st, "alice", JOB_QUEUED, &c);
    assert_int_equal(c.n, 3);
    c = (count_ctx){0, 0, true};
    count_page(f->st, NULL, -1, &c);
    assert_int_equal(c.n, 5);
    c = (count_ctx){0, 0, true};
    assert_int_equal(store_active_jobs(f->st, count_job, &c), STORE_OK);
    assert_int_equal(c.n, 1);
}

static void test_reopen_keeps_everything(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 1, 0, id), STORE_OK);
    assert_int_equal(store_schema_version(f->st), N_MIGRATIONS);
    store_close(f->st);
    char err[256];
    f->st = store_open(f->path, 1, err, sizeof err);
    assert_non_null(f->st);
    assert_int_equal(store_schema_version(f->st), N_MIGRATIONS);
    store_job j;
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_int_equal(j.state, JOB_QUEUED);
    store_job_clear(&j);
}

static void test_refuses_newer_schema(void **state)
{
    fixture *f = *state;
    store_close(f->st);
    f->st = NULL;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    char err[256] = "";
    f->st = store_open(f->path, 1, err, sizeof err);
    assert_null(f->st);
    assert_non_null(strstr(err, "newer"));
    f->st = NULL;
    /* teardown needs a store to close: open a fresh one elsewhere. */
    char other[160];
    snprintf(other, sizeof other, "%s/other.db", f->dir);
    f->st = store_open(other, 1, err, sizeof err);
    assert_non_null(f->st);
}

/* Far from the front, positions come from one walk of the queue, reused
 * until the queue changes: they must agree with the scan order everywhere,
 * and follow cancels, starts and deletes. */
static bool collect_seq(const store_job *job, void *arg)
{
    int64_t *seqs = arg;
    seqs[seqs[0]++ + 1] = job->seq;
    return true;
}

static void test_positions_long_queue(void **state)
{
    fixture *f = *state;
    enum { N = 700 };
    char ids[N][STORE_ID_LEN + 1];
    const char *owners[] = {"a", "b", "c"};
    for (int i = 0; i < N; i++)
        assert_int_equal(submit(f->st, owners[i % 3], i % 7 == 0 ? 1 : 0, 1 + i % 2, 0, ids[i]),
                         STORE_OK);
    /* Take some out of the queue in every way. */
    for (int i = 0; i < N; i += 50) {
        assert_int_equal(store_job_cancel_queued(f->st, ids[i], 1001), STORE_OK);
        assert_int_equal(store_job_mark_starting(f->st, ids[i + 1], NULL, NULL, 1001), STORE_OK);
        assert_int_equal(store_job_delete(f->st, ids[i + 2]), STORE_OK);
    }
    static int64_t seqs[N + 1];
    seqs[0] = 0;
    assert_int_equal(store_queue_scan(f->st, N, collect_seq, seqs), STORE_OK);
    assert_int_equal(seqs[0], N - 3 * (N / 50));
    for (int i = 0; i < N; i += 7) {
        store_job j;
        if (store_job_get(f->st, ids[i], &j) != STORE_OK)
            continue;
        int want = 0;
        for (int k = 1; k <= seqs[0]; k++)
            if (seqs[k] == j.seq)
                want = k;
        assert_int_equal(store_queue_position(f->st, &j), want);
        store_job_clear(&j);
    }
}

/* A version-1 database with queued jobs is migrated, counter included. */
static void test_migration_from_v1(void **state)
{
    fixture *f = *state;
    store_close(f->st);
    char path[160];
    snprintf(path, sizeof path, "%s/v1.db", f->dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, store_migrations[0], NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
        "PRAGMA user_version = 1;"
        "INSERT INTO jobs (id, owner, name, state, ranks, trainer, workers, spec, submitted_at) VALUES"
        " ('aaaaaaaaaaaa', 'a', 'j', 'queued', 1, 'single', 1, '{}', 1),"
        " ('bbbbbbbbbbbb', 'a', 'j', 'queued', 1, 'single', 1, '{}', 2),"
        " ('cccccccccccc', 'a', 'j', 'failed', 1, 'single', 1, '{}', 3),"
        " ('dddddddddddd', 'a', 'j', 'queued', 3, 'downpour', 2,"
        "  '{\"resources\": {\"gpus\": 2}}', 4);",
        NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    char err[256];
    f->st = store_open(path, 1, err, sizeof err);
    assert_non_null(f->st);
    assert_int_equal(store_schema_version(f->st), N_MIGRATIONS);
    store_job j;
    assert_int_equal(store_job_get(f->st, "bbbbbbbbbbbb", &j), STORE_OK);
    assert_int_equal(store_queue_position(f->st, &j), 2);
    assert_int_equal(j.gpus, 0);
    assert_string_equal(j.hparams, ""); /* migration 0016: none kept before */
    store_job_clear(&j);
    /* Migration 3 derives GPUs from the stored spec: 2 per worker x 2. */
    assert_int_equal(store_job_get(f->st, "dddddddddddd", &j), STORE_OK);
    assert_int_equal(j.gpus, 4);
    store_job_clear(&j);
    char id[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "z", 0, 1, 0, id), STORE_OK);
    long counts[JOB_STATE_COUNT];
    assert_int_equal(store_counts(f->st, counts), STORE_OK);
    assert_int_equal(counts[JOB_QUEUED], 4);
}

/* A job's GPUs are stored at submit; the devices it is given at start are
 * kept with it (a restarted daemon reads them back) and cleared for none. */
/* store_active_jobs callback: a copy of the (only) active job's hosts. */
static bool keep_hosts(const store_job *job, void *arg)
{
    char **out = arg;
    assert_null(*out);
    *out = job->hosts ? strdup(job->hosts) : NULL;
    return true;
}

static void test_gpus_and_devices(void **state)
{
    fixture *f = *state;
    store_new_job nj = {.owner = "alice", .name = "g", .trainer = "allreduce",
                        .spec = "{\"model\": \"mlp\"}", .ranks = 2, .workers = 2,
                        .threads = 1, .gpus = 4};
    char gpu_id[STORE_ID_LEN + 1], cpu_id[STORE_ID_LEN + 1];
    assert_int_equal(store_job_submit(f->st, &nj, 0, 1000.0, gpu_id), STORE_OK);
    assert_int_equal(submit(f->st, "bob", 0, 1, 0, cpu_id), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->st, gpu_id, "0,1,2,5", NULL, 1001), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->st, cpu_id, "", NULL, 1001), STORE_OK);
    store_job j;
    assert_int_equal(store_job_get(f->st, cpu_id, &j), STORE_OK);
    assert_null(j.hosts); /* no allocation given: none stored */
    store_job_clear(&j);
    store_close(f->st);
    char err[256];
    f->st = store_open(f->path, 1, err, sizeof err);
    assert_non_null(f->st);
    assert_int_equal(store_job_get(f->st, gpu_id, &j), STORE_OK);
    assert_int_equal(j.gpus, 4);
    assert_string_equal(j.gpu_devices, "0,1,2,5");
    store_job_clear(&j);
    assert_int_equal(store_job_get(f->st, cpu_id, &j), STORE_OK);
    assert_int_equal(j.gpus, 0);
    assert_string_equal(j.gpu_devices, "");
    store_job_clear(&j);
}

/* A started job's allocation is stored with it: a restarted daemon reads
 * back which hosts and slots its re-adopted jobs hold, from the list of
 * active jobs as the monitor reads it. Queued jobs have none. */
static void test_hosts_survive_restart(void **state)
{
    fixture *f = *state;
    char multi[STORE_ID_LEN + 1], queued[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 3, 0, multi), STORE_OK);
    assert_int_equal(submit(f->st, "bob", 0, 1, 0, queued), STORE_OK);
    const char *alloc = "[{\"host\":\"h2\",\"ranks\":2},{\"host\":\"h3\",\"ranks\":1}]";
    assert_int_equal(store_job_mark_starting(f->st, multi, NULL, alloc, 1001), STORE_OK);
    store_close(f->st);
    char err[256];
    f->st = store_open(f->path, 1, err, sizeof err);
    assert_non_null(f->st);
    store_job j;
    assert_int_equal(store_job_get(f->st, queued, &j), STORE_OK);
    assert_null(j.hosts);
    store_job_clear(&j);
    char *seen = NULL;
    assert_int_equal(store_active_jobs(f->st, keep_hosts, &seen), STORE_OK);
    assert_non_null(seen);
    assert_string_equal(seen, alloc);
    free(seen);
}

/* A Slurm job id and reason (migration 0005): recorded while queued, with
 * a "Slurm job N" event only when asked, updated later, kept across a
 * reopen, refused once the job has ended. */
static void test_slurm_id(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 2, 0, id), STORE_OK);
    store_job j;
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_int_equal(j.slurm_id, 0);
    assert_string_equal(j.slurm_reason, "");
    store_job_clear(&j);
    assert_int_equal(store_job_set_slurm(f->st, id, 4321, NULL, "Slurm job 4321", 1001),
                     STORE_OK);
    assert_int_equal(store_job_set_slurm(f->st, id, 4321, "Resources", NULL, 1002), STORE_OK);
    store_close(f->st);
    char err[256];
    f->st = store_open(f->path, 1, err, sizeof err);
    assert_non_null(f->st);
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_int_equal(j.state, JOB_QUEUED);
    assert_int_equal(j.slurm_id, 4321);
    assert_string_equal(j.slurm_reason, "Resources");
    store_job_clear(&j);
    ev_ctx ev = {0};
    assert_int_equal(store_job_events(f->st, id, collect_event, &ev), STORE_OK);
    int slurm_events = 0;
    for (int i = 0; i < ev.n; i++)
        slurm_events += strcmp(ev.detail[i], "Slurm job 4321") == 0;
    assert_int_equal(slurm_events, 1);
    assert_int_equal(store_job_cancel_queued(f->st, id, 1003), STORE_OK);
    assert_int_equal(store_job_set_slurm(f->st, id, 4321, NULL, NULL, 1004), STORE_CONFLICT);
}

/* A running job Slurm requeued is queued again, counted as queued (the
 * positions use that count), with a running -> queued event; not once a
 * stop was asked. */
static void test_requeued(void **state)
{
    fixture *f = *state;
    char a[STORE_ID_LEN + 1], b[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 1, 0, a), STORE_OK);
    assert_int_equal(submit(f->st, "bob", 0, 1, 0, b), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->st, a, "", NULL, 1001), STORE_OK);
    assert_int_equal(store_job_mark_running(f->st, a, 0, 1002), STORE_OK);
    long counts[JOB_STATE_COUNT];
    assert_int_equal(store_counts(f->st, counts), STORE_OK);
    assert_int_equal(counts[JOB_QUEUED], 1);
    assert_int_equal(store_job_requeued(f->st, a, "BeginTime", "requeued by Slurm (job 7, x)",
                                        1003),
                     STORE_OK);
    assert_int_equal(store_counts(f->st, counts), STORE_OK);
    assert_int_equal(counts[JOB_QUEUED], 2);
    store_job j;
    assert_int_equal(store_job_get(f->st, a, &j), STORE_OK);
    assert_int_equal(j.state, JOB_QUEUED);
    assert_string_equal(j.slurm_reason, "BeginTime");
    int pos = store_queue_position(f->st, &j);
    store_job_clear(&j);
    assert_int_equal(store_job_get(f->st, b, &j), STORE_OK);
    assert_true(pos >= 1 && pos <= 2 && store_queue_position(f->st, &j) == 3 - pos);
    store_job_clear(&j);
    ev_ctx ev = {0};
    assert_int_equal(store_job_events(f->st, a, collect_event, &ev), STORE_OK);
    assert_string_equal(ev.detail[ev.n - 1], "requeued by Slurm (job 7, x)");
    assert_int_equal(store_job_requeued(f->st, a, "", "again", 1004), STORE_CONFLICT);
    assert_int_equal(store_job_mark_starting(f->st, a, "", NULL, 1005), STORE_OK);
    assert_int_equal(store_job_request_stop(f->st, a, "cancel", 1006), STORE_OK);
    assert_int_equal(store_job_requeued(f->st, a, "", "again", 1007), STORE_CONFLICT);
}

/* Fail the statements whose SQL contains arg (every one for ""). */
static bool fail_matching(void *arg, const char *sql)
{
    return strstr(sql, (const char *)arg) != NULL;
}

static bool ignore_job(const store_job *job, void *arg)
{
    (void)job, (void)arg;
    return true;
}

/* Every public function meets a failing statement with STORE_ERROR (or -1),
 * at the first statement it runs and deeper inside its transaction, and
 * leaves nothing half-done: the job is as it was. */
static void test_faults_end_in_error(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], other[STORE_ID_LEN + 1];
    assert_int_equal(submit(f->st, "alice", 0, 1, 0, id), STORE_OK);
    store_job j;
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    long counts[JOB_STATE_COUNT];
    char *spec = NULL;
    int code = 1;
    store_fault_sim(fail_matching, "");
    assert_int_equal(submit(f->st, "alice", 0, 1, 0, other), STORE_ERROR);
    assert_int_equal(store_job_get(f->st, id, &j), STORE_ERROR);
    assert_int_equal(store_job_latest(f->st, "alice", &j), STORE_ERROR);
    assert_int_equal(store_job_spec(f->st, id, &spec), STORE_ERROR);
    assert_int_equal(store_queue_position(f->st, &j), -1);
    assert_int_equal(store_owner_active(f->st, "alice"), -1);
    store_page page;
    store_page_query q = {.state = -1, .since = NAN, .limit = 10};
    assert_int_equal(store_job_page(f->st, &q, &page), STORE_ERROR);
    assert_int_equal(store_queue_scan(f->st, 10, ignore_job, NULL), STORE_ERROR);
    assert_int_equal(store_active_jobs(f->st, ignore_job, NULL), STORE_ERROR);
    assert_int_equal(store_counts(f->st, counts), STORE_ERROR);
    assert_int_equal(store_job_events(f->st, id, collect_event, &(ev_ctx){0}), STORE_ERROR);
    assert_int_equal(store_job_cancel_queued(f->st, id, 1001), STORE_ERROR);
    assert_int_equal(store_job_mark_starting(f->st, id, NULL, NULL, 1001), STORE_ERROR);
    assert_int_equal(store_job_set_supervisor(f->st, id, 2, 3), STORE_ERROR);
    assert_int_equal(store_job_mark_running(f->st, id, 4, 1001), STORE_ERROR);
    assert_int_equal(store_job_request_stop(f->st, id, "cancel", 1001), STORE_ERROR);
    assert_int_equal(store_job_mark_killed(f->st, id), STORE_ERROR);
    assert_int_equal(store_job_finish(f->st, id, JOB_FAILED, &code, "x", "{}", NULL, 1001),
                     STORE_ERROR);
    assert_int_equal(store_job_delete(f->st, id), STORE_ERROR);
    /* Deeper: after the transaction's first statements succeeded. */
    store_fault_sim(fail_matching, "INSERT INTO owners");
    assert_int_equal(submit(f->st, "alice", 0, 1, 0, other), STORE_ERROR);
    store_fault_sim(fail_matching, "SELECT state FROM jobs");
    assert_int_equal(store_job_cancel_queued(f->st, id, 1001), STORE_ERROR);
    store_fault_sim(fail_matching, "UPDATE meta SET value = max(");
    assert_int_equal(store_job_mark_starting(f->st, id, NULL, NULL, 1001), STORE_ERROR);
    store_fault_sim(fail_matching, "INSERT INTO events");
    assert_int_equal(store_job_finish(f->st, id, JOB_FAILED, &code, "x", "{}", NULL, 1001),
                     STORE_ERROR);
    store_fault_sim(fail_matching, "COMMIT");
    assert_int_equal(store_job_cancel_queued(f->st, id, 1001), STORE_ERROR);
    store_fault_sim(fail_matching, "DELETE FROM events");
    assert_int_equal(store_job_delete(f->st, id), STORE_ERROR);
    store_fault_sim(NULL, NULL);
    /* Nothing changed: one queued job, its one event, vclock untouched. */
    assert_int_equal(store_counts(f->st, counts), STORE_OK);
    assert_int_equal(counts[JOB_QUEUED], 1);
    assert_int_equal(counts[JOB_STARTING] + counts[JOB_FAILED] + counts[JOB_CANCELLED], 0);
    ev_ctx ev = {0};
    assert_int_equal(store_job_events(f->st, id, collect_event, &ev), STORE_OK);
    assert_int_equal(ev.n, 1);
    store_job_clear(&j);
    assert_int_equal(store_job_get(f->st, id, &j), STORE_OK);
    assert_int_equal(store_queue_position(f->st, &j), 1);
    store_job_clear(&j);
}

static void test_unwritable_path(void **state)
{
    (void)state;
    char err[256] = "";
    store *st = store_open("/nonexistent-dir/x/q.db", 1, err, sizeof err);
    assert_null(st);
    assert_non_null(strstr(err, "/nonexistent-dir/x/q.db"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_submit_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids_by_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_and_active, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_positions_long_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_from_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_and_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hosts_survive_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_faults_end_in_error, setup, teardown),
        cmocka_unit_test(test_unwritable_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
