/* test_finalstate.c — finalstate_decide, every branch: a stop request wins
 * (cancel, timeout with its limit), success needs exit 0, no signal and an
 * end line that is not "failed", and a failure's error comes from the
 * engine's end error, else the missing exit record, the signal or the exit
 * code, with train.log's telling line appended when there is one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "run/finalstate.h"

static const rundir_exit EXIT_OK = {0, 0, 1.0};
static const rundir_exit EXIT_3 = {3, 0, 1.0};
static const rundir_exit KILLED_9 = {137, 9, 1.0};
static const rundir_exit OK_BUT_TERM = {0, 15, 1.0};

/* Facts of a job that ran and was not stopped, with no end line or log. */
static finalstate_facts ran(const rundir_exit *ex)
{
    return (finalstate_facts){"", 60, ex, "", NULL, ""};
}

static void test_stop_requests_win(void **state)
{
    (void)state;
    char error[128];
    finalstate_facts f = ran(&EXIT_3);
    f.stop_reason = "cancel";
    f.end_error = "engine error";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_CANCELLED);
    assert_string_equal(error, "");
    f.exit = NULL;
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_CANCELLED);
    f.stop_reason = "timeout";
    f.exit = &EXIT_OK;
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_TIMEOUT);
    assert_string_equal(error, "time limit of 60 s exceeded");
}

static void test_succeeded(void **state)
{
    (void)state;
    char error[128] = "stale";
    finalstate_facts f = ran(&EXIT_OK);
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_SUCCEEDED);
    assert_string_equal(error, "");
    f.end_status = "succeeded";
    f.log_line = "a line that is not an error";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_SUCCEEDED);
    assert_string_equal(error, "");
}

static void test_engine_says_failed(void **state)
{
    (void)state;
    char error[128];
    /* Exit 0 but the end line says failed: the engine's error wins. */
    finalstate_facts f = ran(&EXIT_OK);
    f.end_status = "failed";
    f.end_error = "training.epochs: diverged";
    f.log_line = "punch-train: something else";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "training.epochs: diverged");
    /* Without its error, the exit code and the log line speak. */
    f.end_error = NULL;
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "mpirun exited with code 0: punch-train: something else");
    /* An end error counts even without an exit record. */
    f = ran(NULL);
    f.end_error = "out of memory";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "out of memory");
}

static void test_no_exit_record(void **state)
{
    (void)state;
    char error[128];
    finalstate_facts f = ran(NULL);
    f.log_line = "ignored: the supervisor never saw mpirun end";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "supervisor ended without recording an exit status");
}

static void test_signal_and_exit_code(void **state)
{
    (void)state;
    char error[128];
    finalstate_facts f = ran(&KILLED_9);
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "mpirun killed by signal 9");
    f.log_line = "punch-train: no CUDA device";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "mpirun killed by signal 9: punch-train: no CUDA device");
    /* A signal fails the job even with exit code 0. */
    f = ran(&OK_BUT_TERM);
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "mpirun killed by signal 15");
    f = ran(&EXIT_3);
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "mpirun exited with code 3");
    f.log_line = "bad rank";
    assert_int_equal(finalstate_decide(&f, error, sizeof error), JOB_FAILED);
    assert_string_equal(error, "mpirun exited with code 3: bad rank");
    /* The error is cut to its capacity. */
    char small[12];
    assert_int_equal(finalstate_decide(&f, small, sizeof small), JOB_FAILED);
    assert_string_equal(small, "mpirun exit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_requests_win),
        cmocka_unit_test(test_succeeded),
        cmocka_unit_test(test_engine_says_failed),
        cmocka_unit_test(test_no_exit_record),
        cmocka_unit_test(test_signal_and_exit_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
