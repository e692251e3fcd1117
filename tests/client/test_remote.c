/* test_remote.c — the job states as punch reads them from the API: every
 * name lib/jobstate has is known, the final ones end a wait, and each final
 * state has its documented exit code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "jobstate/jobstate.h"
#include "remote.h"

static void test_every_state_is_known(void **state)
{
    (void)state;
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        const char *name = job_state_name((job_state)s);
        assert_true(remote_state_is_known(name));
        assert_int_equal(remote_state_is_final(name), job_state_is_final((job_state)s));
    }
    assert_false(remote_state_is_known("sleeping"));
    assert_false(remote_state_is_known(""));
    assert_false(remote_state_is_final("sleeping"));
    assert_false(remote_state_is_final("running"));
    assert_true(remote_state_is_final("timeout"));
}

static void test_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(remote_state_exit_code("succeeded"), PUNCH_EXIT_OK);
    assert_int_equal(remote_state_exit_code("failed"), PUNCH_EXIT_JOB_FAILED);
    assert_int_equal(remote_state_exit_code("cancelled"), PUNCH_EXIT_CANCELLED);
    assert_int_equal(remote_state_exit_code("timeout"), PUNCH_EXIT_TIMEOUT);
    /* A name this punch does not know (a newer server) is not success. */
    assert_int_equal(remote_state_exit_code("evicted"), PUNCH_EXIT_JOB_FAILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_state_is_known),
        cmocka_unit_test(test_exit_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
