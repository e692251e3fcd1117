/* test_quota.c — a user's disk use (quota_user_bytes): a running job's run
 * directory is walked on every call; a finished job's is measured once and
 * then read from the store, so files added to it afterwards do not count
 * (nothing but retention changes it), until it ends again after a resume;
 * a job whose files retention removed counts nothing. */
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

#include "run/quota.h"
#include "run/retention.h"
#include "run/rundir.h"
#include "scratch_daemon.h"

#define NOW 2000000000.0
#define KIB 1024.0

typedef struct fixture {
    char dir[SCRATCH_DIR_LEN];
    daemon_ctx d;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    char db[256];
    if (!f || !scratch_daemon_open(&f->d, f->dir, "quota", db, sizeof db))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    bool removed = scratch_daemon_close(&f->d, f->dir);
    free(f);
    return removed ? 0 : -1;
}

/* Add a file of `kib` KiB of data (allocated, not sparse) to job id's run
 * directory. */
static void grow(fixture *f, const char *id, const char *name, int kib)
{
    char dir[512], err[256];
    assert_true(rundir_path(dir, sizeof dir, f->dir, id, NULL));
    char *data = malloc((size_t)kib * 1024);
    assert_non_null(data);
    memset(data, 'x', (size_t)kib * 1024);
    assert_true(rundir_write_atomic(dir, name, data, (size_t)kib * 1024, err, sizeof err));
    free(data);
}

/* A running job of alice's with a run directory holding `kib` KiB. */
static void running(fixture *f, int kib, char id[STORE_ID_LEN + 1])
{
    store_new_job nj = {.owner = "alice", .name = "j", .trainer = "single", .spec = "{}",
                        .ranks = 1, .workers = 1, .threads = 1};
    assert_int_equal(store_job_submit(f->d.st, &nj, 0, NOW, id), STORE_OK);
    char dir[512];
    assert_true(rundir_path(dir, sizeof dir, f->dir, id, NULL));
    assert_int_equal(mkdir(dir, 0700), 0);
    grow(f, id, "a.bin", kib);
    assert_int_equal(store_job_mark_starting(f->d.st, id, NULL, NULL, NOW + 1), STORE_OK);
    assert_int_equal(store_job_mark_running(f->d.st, id, 0, NOW + 2), STORE_OK);
}

static void finish(fixture *f, const char *id, double at)
{
    assert_int_equal(store_job_finish(f->d.st, id, JOB_FAILED, NULL, NULL, NULL, NULL, at),
                     STORE_OK);
}

static void test_finished_jobs_measured_once(void **state)
{
    fixture *f = *state;
    char a[STORE_ID_LEN + 1], b[STORE_ID_LEN + 1];
    running(f, 64, a);
    running(f, 32, b);
    double both = quota_user_bytes(&f->d, "alice");
    assert_true(both >= 96 * KIB && both < 200 * KIB);

    /* A running job's growth counts at once. */
    grow(f, a, "b.bin", 256);
    double grown = quota_user_bytes(&f->d, "alice");
    assert_true(grown >= both + 256 * KIB);

    /* Once b has ended, its size is read from the store: a file put there
     * behind the daemon's back is not seen. */
    finish(f, b, NOW + 10);
    assert_true(quota_user_bytes(&f->d, "alice") == grown);
    store_job j;
    assert_int_equal(store_job_get(f->d.st, b, &j), STORE_OK);
    assert_true(j.final_bytes >= 32 * KIB && j.final_bytes < 100 * KIB);
    store_job_clear(&j);
    grow(f, b, "late.bin", 512);
    assert_true(quota_user_bytes(&f->d, "alice") == grown);

    /* Resumed and ended again, it is measured again. */
    assert_int_equal(store_job_resume(f->d.st, b, 0, "resumed", NOW + 20), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->d.st, b, NULL, NULL, NOW + 21), STORE_OK);
    assert_int_equal(store_job_mark_running(f->d.st, b, 0, NOW + 22), STORE_OK);
    finish(f, b, NOW + 30);
    assert_true(quota_user_bytes(&f->d, "alice") >= grown + 512 * KIB);
}

static void test_removed_files_count_nothing(void **state)
{
    fixture *f = *state;
    char a[STORE_ID_LEN + 1];
    running(f, 64, a);
    finish(f, a, NOW + 10);
    assert_true(quota_user_bytes(&f->d, "alice") >= 64 * KIB);
    f->d.cfg.retention_days = 1;
    f->d.cfg.retention_keep_records = true;
    assert_int_equal(retention_run(&f->d, NOW + 2 * 86400.0, 10), 1);
    assert_true(quota_user_bytes(&f->d, "alice") == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_finished_jobs_measured_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_files_count_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
