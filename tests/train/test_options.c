/* test_options.c — the environment knobs (train/options.h): defaults for
 * an empty environment, every knob read with its meaning, the launcher's
 * rank and size, and a clear error naming the variable for each bad
 * value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "train/options.h"

static const char *const *test_env;

static const char *test_lookup(const char *name)
{
    for (const char *const *p = test_env; p && *p; p += 2)
        if (strcmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static int read_with(const char *const *env, engine_options *o, char *err, size_t errlen)
{
    test_env = env;
    err[0] = '\0';
    return engine_options_read(o, test_lookup, err, errlen);
}

static void test_defaults(void **state)
{
    (void)state;
    const char *const none[] = {NULL};
    engine_options o;
    char err[256];
    assert_int_equal(read_with(none, &o, err, sizeof err), 0);
    assert_int_equal(o.local_rank, 0);
    assert_int_equal(o.world_size, 1);
    assert_null(o.datasets);
    assert_true(o.watchdog_s == 60.0);
    assert_true(o.exchange_mb == 8.0);
    assert_int_equal(o.overlap, ENGINE_OVERLAP_DEFAULT);
    assert_false(o.check_sync);
    assert_false(o.replicate);
    assert_false(o.whole_data);
    assert_false(o.gpu_sync);
}

static void test_every_knob(void **state)
{
    (void)state;
    const char *const env[] = {
        "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4",
        "PUNCH_DATASETS", "/a:/b", "PUNCH_WATCHDOG_S", "2.5",
        "PUNCH_DIST_EXCHANGE_MB", "0.1", "PUNCH_DIST_OVERLAP", "0",
        "PUNCH_DIST_CHECK_SYNC", "1", "PUNCH_DIST_SHARDING", "replicate",
        "PUNCH_DIST_WHOLE_DATA", "1", "PUNCH_GPU_SYNC", "1", NULL,
    };
    engine_options o;
    char err[256];
    assert_int_equal(read_with(env, &o, err, sizeof err), 0);
    assert_int_equal(o.local_rank, 2);
    assert_int_equal(o.world_size, 4);
    assert_string_equal(o.datasets, "/a:/b");
    assert_true(o.watchdog_s == 2.5);
    assert_true(o.exchange_mb == 0.1);
    assert_int_equal(o.overlap, ENGINE_OVERLAP_OFF);
    assert_true(o.check_sync && o.replicate && o.whole_data && o.gpu_sync);

    const char *const on[] = {"PUNCH_DIST_OVERLAP", "1", "PUNCH_DIST_SHARDING", "shard", NULL};
    assert_int_equal(read_with(on, &o, err, sizeof err), 0);
    assert_int_equal(o.overlap, ENGINE_OVERLAP_ON);
    assert_false(o.replicate);

    /* An empty value is unset. */
    const char *const empty[] = {"PUNCH_DIST_OVERLAP", "", "PUNCH_WATCHDOG_S", "", NULL};
    assert_int_equal(read_with(empty, &o, err, sizeof err), 0);
    assert_int_equal(o.overlap, ENGINE_OVERLAP_DEFAULT);
    assert_true(o.watchdog_s == 60.0);
}

static void expect_error(const char *name, const char *value, const char *needle)
{
    const char *const env[] = {name, value, NULL};
    engine_options o;
    char err[256];
    assert_int_equal(read_with(env, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, name));
    assert_non_null(strstr(err, needle));
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_error("PUNCH_WATCHDOG_S", "0", "positive number of seconds");
    expect_error("PUNCH_WATCHDOG_S", "10s", "got \"10s\"");
    expect_error("PUNCH_WATCHDOG_S", "inf", "positive");
    expect_error("PUNCH_DIST_EXCHANGE_MB", "-1", "positive number of MiB");
    expect_error("PUNCH_DIST_OVERLAP", "yes", "must be 0 or 1");
    expect_error("PUNCH_DIST_CHECK_SYNC", "2", "must be 0 or 1");
    expect_error("PUNCH_DIST_WHOLE_DATA", "true", "must be 0 or 1");
    expect_error("PUNCH_GPU_SYNC", "yes", "must be 0 or 1");
    expect_error("PUNCH_DIST_SHARDING", "replica", "must be shard or replicate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_knob),
        cmocka_unit_test(test_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
