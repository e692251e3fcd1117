/* test_retention.c — retention_days: finished jobs that ended longer ago
 * are forgotten (row, events, run directory), oldest first and at most a
 * batch at a time; recent ones, and queued or running jobs of any age, stay
 * with their files; 0 keeps everything; with retention_keep_records only
 * the run directory goes (row and events stay, marked files_removed, and
 * are not picked again); the query that finds them reads an index (EXPLAIN
 * QUERY PLAN), not every job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "run/retention.h"
#include "run/rundir.h"
#include "scratch_daemon.h"

#define DAY 86400.0
#define NOW 2000000000.0

typedef struct fixture {
    char dir[SCRATCH_DIR_LEN];
    char db[128];
    daemon_ctx d;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !scratch_daemon_open(&f->d, f->dir, "retention", f->db, sizeof f->db))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_fault_sim(NULL, NULL);
    bool removed = scratch_daemon_close(&f->d, f->dir);
    free(f);
    return removed ? 0 : -1;
}

/* A job submitted at `at`, with a run directory holding one file; started
 * and then ended (in state `final`) at `ended` unless final is queued or
 * running. */
static void job(fixture *f, double at, job_state final, double ended, char id[STORE_ID_LEN + 1])
{
    store_new_job nj = {.owner = "alice", .name = "j", .trainer = "single", .spec = "{}",
                        .ranks = 1, .workers = 1, .threads = 1};
    assert_int_equal(store_job_submit(f->d.st, &nj, 0, at, id), STORE_OK);
    char dir[512], err[256];
    assert_true(rundir_path(dir, sizeof dir, f->dir, id, NULL));
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_true(rundir_write_atomic(dir, "train.log", "epoch 1\n", 8, err, sizeof err));
    if (final == JOB_QUEUED)
        return;
    if (final == JOB_CANCELLED) {
        assert_int_equal(store_job_cancel_queued(f->d.st, id, ended), STORE_OK);
        return;
    }
    assert_int_equal(store_job_mark_starting(f->d.st, id, NULL, NULL, at + 1), STORE_OK);
    assert_int_equal(store_job_mark_running(f->d.st, id, 0, at + 2), STORE_OK);
    if (final != JOB_RUNNING)
        assert_int_equal(store_job_finish(f->d.st, id, final, NULL, NULL, NULL, NULL, ended),
                         STORE_OK);
}

static bool event_seen(double at, const char *from, const char *to, const char *detail,
                       void *arg)
{
    (void)at, (void)from, (void)to, (void)detail;
    ++*(int *)arg;
    return true;
}

/* Whether job id is still there, and its events and run directory with it. */
static bool kept(fixture *f, const char *id)
{
    store_job j;
    store_status rs = store_job_get(f->d.st, id, &j);
    int events = 0;
    assert_int_equal(store_job_events(f->d.st, id, event_seen, &events), STORE_OK);
    char dir[512];
    assert_true(rundir_path(dir, sizeof dir, f->dir, id, NULL));
    bool has_dir = access(dir, F_OK) == 0;
    if (rs == STORE_OK) {
        store_job_clear(&j);
        assert_true(events > 0 && has_dir);
        return true;
    }
    assert_int_equal(rs, STORE_NOT_FOUND);
    assert_true(events == 0 && !has_dir);
    return false;
}

static void test_old_finished_jobs_go(void **state)
{
    fixture *f = *state;
    char oldest[STORE_ID_LEN + 1], old[STORE_ID_LEN + 1], cancelled[STORE_ID_LEN + 1],
        recent[STORE_ID_LEN + 1], queued[STORE_ID_LEN + 1], running[STORE_ID_LEN + 1];
    job(f, NOW - 100 * DAY, JOB_QUEUED, 0, queued);
    job(f, NOW - 100 * DAY, JOB_RUNNING, 0, running);
    job(f, NOW - 30 * DAY, JOB_SUCCEEDED, NOW - 20 * DAY, oldest);
    job(f, NOW - 30 * DAY, JOB_FAILED, NOW - 10 * DAY, old);
    job(f, NOW - 30 * DAY, JOB_CANCELLED, NOW - 9 * DAY, cancelled);
    job(f, NOW - 30 * DAY, JOB_TIMEOUT, NOW - 1 * DAY, recent);

    /* Off by default: nothing goes. */
    assert_int_equal(f->d.cfg.retention_days, 0);
    assert_int_equal(retention_run(&f->d, NOW, 100), 0);
    assert_true(kept(f, oldest));

    /* A batch of one takes the oldest first. */
    f->d.cfg.retention_days = 7;
    assert_int_equal(retention_run(&f->d, NOW, 1), 1);
    assert_false(kept(f, oldest));
    assert_true(kept(f, old));
    assert_int_equal(retention_run(&f->d, NOW, 100), 2);
    assert_false(kept(f, old));
    assert_false(kept(f, cancelled));
    assert_true(kept(f, recent));
    assert_true(kept(f, queued));
    assert_true(kept(f, running));
    assert_int_equal(retention_run(&f->d, NOW, 100), 0);

    /* A queued or running job is never forgotten, however old. */
    f->d.cfg.retention_days = 1;
    assert_int_equal(retention_run(&f->d, NOW + 365 * DAY, 100), 1);
    assert_false(kept(f, recent));
    assert_true(kept(f, queued));
    assert_true(kept(f, running));
}

/* The run directory of job id is gone, its row (marked files_removed) and
 * events are not. */
static void files_removed_only(fixture *f, const char *id)
{
    store_job j;
    assert_int_equal(store_job_get(f->d.st, id, &j), STORE_OK);
    assert_true(j.files_removed);
    store_job_clear(&j);
    int events = 0;
    assert_int_equal(store_job_events(f->d.st, id, event_seen, &events), STORE_OK);
    assert_true(events > 0);
    char dir[512];
    assert_true(rundir_path(dir, sizeof dir, f->dir, id, NULL));
    assert_int_equal(access(dir, F_OK), -1);
}

static void test_keep_records_removes_files_only(void **state)
{
    fixture *f = *state;
    char oldest[STORE_ID_LEN + 1], old[STORE_ID_LEN + 1], recent[STORE_ID_LEN + 1],
        running[STORE_ID_LEN + 1];
    job(f, NOW - 100 * DAY, JOB_RUNNING, 0, running);
    job(f, NOW - 30 * DAY, JOB_SUCCEEDED, NOW - 20 * DAY, oldest);
    job(f, NOW - 30 * DAY, JOB_FAILED, NOW - 10 * DAY, old);
    job(f, NOW - 30 * DAY, JOB_TIMEOUT, NOW - 1 * DAY, recent);
    f->d.cfg.retention_days = 7;
    f->d.cfg.retention_keep_records = true;
    store_job j;
    assert_int_equal(store_job_get(f->d.st, oldest, &j), STORE_OK);
    assert_false(j.files_removed);
    store_job_clear(&j);

    assert_int_equal(retention_run(&f->d, NOW, 1), 1);
    files_removed_only(f, oldest);
    assert_true(kept(f, old));
    assert_int_equal(retention_run(&f->d, NOW, 100), 1);
    files_removed_only(f, old);
    assert_true(kept(f, recent));
    assert_true(kept(f, running));
    /* Done once: the marked jobs are not picked again. */
    assert_int_equal(retention_run(&f->d, NOW, 100), 0);
    assert_int_equal(retention_run(&f->d, NOW + 365 * DAY, 100), 1);
    files_removed_only(f, recent);
    assert_true(kept(f, running));

    /* Switched back to forgetting, the marked records go too. */
    f->d.cfg.retention_keep_records = false;
    assert_int_equal(retention_run(&f->d, NOW + 365 * DAY, 100), 3);
    assert_false(kept(f, oldest));
    assert_true(kept(f, running));
}

/* A store failure forgets nothing: the job and its files stay. */
static bool fail_all(void *arg, const char *sql)
{
    (void)arg, (void)sql;
    return true;
}

static void test_store_failure_keeps_everything(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    job(f, NOW - 30 * DAY, JOB_SUCCEEDED, NOW - 20 * DAY, id);
    f->d.cfg.retention_days = 7;
    store_fault_sim(fail_all, NULL);
    assert_int_equal(retention_run(&f->d, NOW, 100), -1);
    store_fault_sim(NULL, NULL);
    assert_true(kept(f, id));
    assert_int_equal(retention_run(&f->d, NOW, 100), 1);
}

/* The statements retention runs, recorded through the fault hook (which
 * never fails one here). */
typedef struct sql_seen {
    char *text[8];
    int n;
} sql_seen;

static bool record_sql(void *arg, const char *sql)
{
    sql_seen *seen = arg;
    if (seen->n < 8 && strstr(sql, "SELECT"))
        seen->text[seen->n++] = strdup(sql);
    return false;
}

/* Retention's one SELECT reads an index in order, not every job. */
static void finds_jobs_by_index(fixture *f, bool keep_records)
{
    char id[STORE_ID_LEN + 1];
    job(f, NOW - 30 * DAY, JOB_SUCCEEDED, NOW - 20 * DAY, id);
    f->d.cfg.retention_days = 7;
    f->d.cfg.retention_keep_records = keep_records;
    sql_seen seen = {0};
    store_fault_sim(record_sql, &seen);
    assert_int_equal(retention_run(&f->d, NOW, 100), 1);
    store_fault_sim(NULL, NULL);
    assert_int_equal(seen.n, 1);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *eqp = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", seen.text[0]);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, eqp, -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *detail = (const char *)sqlite3_column_text(s, 3);
        if (strncmp(detail, "SCAN jobs", 9) == 0 || strstr(detail, "TEMP B-TREE"))
            fail_msg("%s\n  %s", seen.text[0], detail);
    }
    sqlite3_finalize(s);
    sqlite3_free(eqp);
    sqlite3_close(db);
    free(seen.text[0]);
}

static void test_finds_jobs_by_index(void **state) { finds_jobs_by_index(*state, false); }

static void test_keep_records_finds_jobs_by_index(void **state)
{
    finds_jobs_by_index(*state, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_finished_jobs_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_failure_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finds_jobs_by_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_records_removes_files_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_records_finds_jobs_by_index, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
