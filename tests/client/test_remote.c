/* test_remote.c — the job states as punch reads them from the API: every
 * name lib/jobstate has is known, the final ones end a wait, and each final
 * state has its documented exit code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
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

/* punch names the job a short id matched, and only then. */
static void test_id_matched(void **state)
{
    (void)state;
    json_t *job = json_pack("{s:s}", "id", "a25a5f0c91d2");
    char full[32] = "";
    assert_true(remote_id_matched("a25a5f", job, full, sizeof full));
    assert_string_equal(full, "a25a5f0c91d2");
    assert_false(remote_id_matched("a25a5f0c91d2", job, full, sizeof full));
    assert_false(remote_id_matched("b25a5f", job, full, sizeof full));
    assert_false(remote_id_matched("", job, full, sizeof full));
    json_decref(job);
    job = json_pack("{s:s}", "state", "running");
    assert_false(remote_id_matched("a25a5f", job, full, sizeof full));
    json_decref(job);
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

static void test_loopback_urls(void **state)
{
    (void)state;
    assert_true(remote_url_is_loopback("http://127.0.0.1:8080"));
    assert_true(remote_url_is_loopback("http://127.3.2.1"));
    assert_true(remote_url_is_loopback("http://localhost:8080/x"));
    assert_true(remote_url_is_loopback("http://LOCALHOST"));
    assert_true(remote_url_is_loopback("http://[::1]:8080"));
    assert_false(remote_url_is_loopback("http://10.0.0.5:8080"));
    assert_false(remote_url_is_loopback("http://128.0.0.1"));
    assert_false(remote_url_is_loopback("http://localhost.example.org:8080"));
    assert_false(remote_url_is_loopback("http://127.0.0.1.example.org"));
    assert_false(remote_url_is_loopback("http://[::2]:8080"));
    assert_false(remote_url_is_loopback("http://127.0.0.1@evil.example:80"));
    assert_false(remote_url_is_loopback("not a url"));
}

static void test_clear_text_secret_refused(void **state)
{
    (void)state;
    cli_error err = {0};
    cli_ctx ctx = {.url = "http://10.0.0.5:8080", .secret = "s3cret"};
    assert_null(remote_open(&ctx, &err));
    assert_int_equal(err.code, PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--insecure"));
    ctx.insecure = true;
    httpc_client *c = remote_open(&ctx, &err);
    assert_non_null(c);
    httpc_client_free(c);
    ctx.insecure = false;
    ctx.url = "https://10.0.0.5:8080";
    c = remote_open(&ctx, &err);
    assert_non_null(c);
    httpc_client_free(c);
    ctx.url = "http://127.0.0.1:8080";
    c = remote_open(&ctx, &err);
    assert_non_null(c);
    httpc_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_state_is_known),
        cmocka_unit_test(test_id_matched),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_loopback_urls),
        cmocka_unit_test(test_clear_text_secret_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
