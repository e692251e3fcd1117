/* test_args.c — command lines: --url/--secret anywhere, options before or
 * after operands, and usage errors that name the command and the problem. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "jobstate/jobstate.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static void test_connection_flags_anywhere(void **state)
{
    (void)state;
    char *argv[] = {"punch", "--url", "http://h:1", "list", "--secret=s3", "--json", NULL};
    int argc = ARGC(argv);
    cli_flags flags = {0};
    cli_error err = {0};
    assert_int_equal(cli_take_connection_flags(&argc, argv, &flags, &err), 0);
    assert_string_equal(flags.url, "http://h:1");
    assert_string_equal(flags.secret, "s3");
    assert_int_equal(argc, 3);
    assert_string_equal(argv[1], "list");
    assert_string_equal(argv[2], "--json");
    assert_null(argv[3]);
}

static void test_connection_flags_stop_at_double_dash(void **state)
{
    (void)state;
    char *argv[] = {"punch", "submit", "--", "--url", NULL};
    int argc = ARGC(argv);
    cli_flags flags = {0};
    cli_error err = {0};
    assert_int_equal(cli_take_connection_flags(&argc, argv, &flags, &err), 0);
    assert_null(flags.url);
    assert_int_equal(argc, 4);

    char *missing[] = {"punch", "list", "--secret", NULL};
    argc = ARGC(missing);
    assert_int_equal(cli_take_connection_flags(&argc, missing, &flags, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--secret needs a value"));

    /* --urlx is not --url. */
    char *other[] = {"punch", "--urlx", NULL};
    argc = ARGC(other);
    assert_int_equal(cli_take_connection_flags(&argc, other, &flags, &err), 0);
    assert_int_equal(argc, 2);
}

static void test_tls_flags(void **state)
{
    (void)state;
    char *argv[] = {"punch", "--insecure", "list", "--cacert=/x/ca.pem", NULL};
    int argc = ARGC(argv);
    cli_flags flags = {0};
    cli_error err = {0};
    assert_int_equal(cli_take_connection_flags(&argc, argv, &flags, &err), 0);
    assert_true(flags.insecure);
    assert_string_equal(flags.cacert, "/x/ca.pem");
    assert_int_equal(argc, 2);
    assert_string_equal(argv[1], "list");

    char *bad[] = {"punch", "--insecure=yes", "list", NULL};
    argc = ARGC(bad);
    assert_int_equal(cli_take_connection_flags(&argc, bad, &flags, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--insecure takes no value"));
}

static void test_submit(void **state)
{
    (void)state;
    submit_args a;
    cli_error err = {0};
    char *ok[] = {"submit", "job.json", "--wait", "-q", "--interval", "0.5", NULL};
    assert_int_equal(submit_parse_args(ARGC(ok), ok, &a, &err), 0);
    assert_string_equal(a.file, "job.json");
    assert_true(a.wait);
    assert_true(a.quiet);
    assert_false(a.dry_run);
    assert_true(a.interval_s == 0.5);

    char *none[] = {"submit", "--wait", NULL};
    assert_int_equal(submit_parse_args(ARGC(none), none, &a, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "submit: missing the job file"));

    char *two[] = {"submit", "a.json", "b.json", NULL};
    assert_int_equal(submit_parse_args(ARGC(two), two, &a, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "unexpected argument \"b.json\""));

    char *unknown[] = {"submit", "--wiat", "a.json", NULL};
    assert_int_equal(submit_parse_args(ARGC(unknown), unknown, &a, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "submit: unknown option --wiat"));
    assert_non_null(strstr(err.msg, "punch submit --help"));

    char *bad_interval[] = {"submit", "--interval", "soon", "a.json", NULL};
    assert_int_equal(submit_parse_args(ARGC(bad_interval), bad_interval, &a, &err),
                     PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--interval"));

    char *no_value[] = {"submit", "a.json", "--interval", NULL};
    assert_int_equal(submit_parse_args(ARGC(no_value), no_value, &a, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "needs a value"));
}

static void test_wait_logs_cancel_state(void **state)
{
    (void)state;
    cli_error err = {0};
    wait_args w;
    char *wait_argv[] = {"wait", "abc123", "--interval", "2", NULL};
    assert_int_equal(wait_parse_args(ARGC(wait_argv), wait_argv, &w, &err), 0);
    assert_string_equal(w.id, "abc123");
    assert_true(w.interval_s == 2.0);
    assert_false(w.quiet);
    char *wait_none[] = {"wait", NULL};
    assert_int_equal(wait_parse_args(ARGC(wait_none), wait_none, &w, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "wait: missing the job id"));

    logs_args l;
    char *logs_argv[] = {"logs", "-f", "abc", NULL};
    assert_int_equal(logs_parse_args(ARGC(logs_argv), logs_argv, &l, &err), 0);
    assert_true(l.follow);
    assert_string_equal(l.id, "abc");
    char *logs_plain[] = {"logs", "abc", NULL};
    assert_int_equal(logs_parse_args(ARGC(logs_plain), logs_plain, &l, &err), 0);
    assert_false(l.follow);

    cancel_args c;
    char *cancel_argv[] = {"cancel", "abc", NULL};
    assert_int_equal(cancel_parse_args(ARGC(cancel_argv), cancel_argv, &c, &err), 0);
    assert_string_equal(c.id, "abc");
    char *cancel_opt[] = {"cancel", "-x", "abc", NULL};
    assert_int_equal(cancel_parse_args(ARGC(cancel_opt), cancel_opt, &c, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "cancel: unknown option -x"));

    state_args s;
    char *state_none[] = {"state", NULL};
    assert_int_equal(state_parse_args(ARGC(state_none), state_none, &s, &err), 0);
    assert_null(s.id);
    assert_false(s.json);
    char *state_id[] = {"state", "--json", "abc", NULL};
    assert_int_equal(state_parse_args(ARGC(state_id), state_id, &s, &err), 0);
    assert_string_equal(s.id, "abc");
    assert_true(s.json);
}

static void test_list(void **state)
{
    (void)state;
    cli_error err = {0};
    list_args l;
    char *ok[] = {"list", "--state", "running", "--json", NULL};
    assert_int_equal(list_parse_args(ARGC(ok), ok, &l, &err), 0);
    assert_int_equal(l.states, 1u << JOB_RUNNING);
    assert_true(l.json);
    char *bad[] = {"list", "-s", "runing", NULL};
    assert_int_equal(list_parse_args(ARGC(bad), bad, &l, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "unknown state \"runing\""));
    char *extra[] = {"list", "abc", NULL};
    assert_int_equal(list_parse_args(ARGC(extra), extra, &l, &err), PUNCH_EXIT_USAGE);
    /* Pages: --limit N or --all, not both. */
    char *limit[] = {"list", "-n", "2500", NULL};
    assert_int_equal(list_parse_args(ARGC(limit), limit, &l, &err), 0);
    assert_int_equal(l.limit, 2500);
    assert_false(l.all);
    char *all[] = {"list", "--all", NULL};
    assert_int_equal(list_parse_args(ARGC(all), all, &l, &err), 0);
    assert_true(l.all);
    assert_int_equal(l.limit, 0);
    char *zero[] = {"list", "--limit", "0", NULL};
    assert_int_equal(list_parse_args(ARGC(zero), zero, &l, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--limit"));
    char *both[] = {"list", "--all", "--limit", "5", NULL};
    assert_int_equal(list_parse_args(ARGC(both), both, &l, &err), PUNCH_EXIT_USAGE);
}

/* Several states (a comma list, or --state again) add up to one mask that
 * goes to the server as a comma list; --name keeps its pattern. The same
 * filter in punch (list_job_matches) re-checks the rows of an older server
 * that ignores name=. */
static void test_list_filters(void **state)
{
    (void)state;
    cli_error err = {0};
    list_args l;
    char *many[] = {"list", "-s", "failed,cancelled", "--state", "timeout", "--name", "lr-*", NULL};
    assert_int_equal(list_parse_args(ARGC(many), many, &l, &err), 0);
    assert_int_equal(l.states, (1u << JOB_FAILED) | (1u << JOB_CANCELLED) | (1u << JOB_TIMEOUT));
    assert_string_equal(l.name, "lr-*");
    json_t *lr_failed = json_pack("{s:s, s:s}", "name", "lr-a", "state", "failed");
    json_t *lr_ok = json_pack("{s:s, s:s}", "name", "lr-b", "state", "succeeded");
    json_t *other = json_pack("{s:s, s:s}", "name", "xlr-c", "state", "failed");
    assert_true(list_job_matches(&l, lr_failed));
    assert_false(list_job_matches(&l, lr_ok));
    assert_false(list_job_matches(&l, other)); /* a glob matches the whole name */
    l.name = "lr-"; /* without * ? [: a substring */
    assert_true(list_job_matches(&l, other));
    json_decref(lr_failed);
    json_decref(lr_ok);
    json_decref(other);
    char *bad[] = {"list", "--state", "failed,,sleeping", NULL};
    assert_int_equal(list_parse_args(ARGC(bad), bad, &l, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "unknown state \"sleeping\""));
    char *empty[] = {"list", "--state", ",", NULL};
    assert_int_equal(list_parse_args(ARGC(empty), empty, &l, &err), PUNCH_EXIT_USAGE);
}

static void test_compare(void **state)
{
    (void)state;
    cli_error err = {0};
    compare_args c;
    char *two[] = {"compare", "a25a", "j-2", NULL};
    assert_int_equal(compare_parse_args(ARGC(two), two, &c, &err), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.ids[1], "j-2");
    char *one[] = {"compare", "a25a", NULL};
    assert_int_equal(compare_parse_args(ARGC(one), one, &c, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "expected 2 to 8 job ids, got 1"));
    char *nine[] = {"compare", "1", "2", "3", "4", "5", "6", "7", "8", "9", NULL};
    assert_int_equal(compare_parse_args(ARGC(nine), nine, &c, &err), PUNCH_EXIT_USAGE);
    char *opt[] = {"compare", "--wide", "1", "2", NULL};
    assert_int_equal(compare_parse_args(ARGC(opt), opt, &c, &err), PUNCH_EXIT_USAGE);
}

/* The states list accepts, documents and suggests are lib/jobstate's. */
static void test_list_knows_every_state(void **state)
{
    (void)state;
    cli_error err = {0};
    list_args l;
    char *bad[] = {"list", "--state", "sleeping", NULL};
    assert_int_equal(list_parse_args(ARGC(bad), bad, &l, &err), PUNCH_EXIT_USAGE);
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        const char *name = job_state_name((job_state)s);
        char *argv[] = {"list", "-s", (char *)name, NULL};
        cli_error ok = {0};
        assert_int_equal(list_parse_args(ARGC(argv), argv, &l, &ok), 0);
        assert_int_equal(l.states, 1u << (unsigned)s);
        assert_non_null(strstr(cmd_list_usage, name));
        assert_non_null(strstr(err.msg, name));
    }
    assert_non_null(strstr(err.msg, "cancelled or timeout"));
}

/* Values are checked as they come, so the first bad thing on the line is
 * the one reported; long options may be abbreviated. */
static void test_first_problem_is_reported(void **state)
{
    (void)state;
    cli_error err = {0};
    list_args l;
    char *state_first[] = {"list", "-s", "runing", "--bogus", NULL};
    assert_int_equal(list_parse_args(ARGC(state_first), state_first, &l, &err),
                     PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "unknown state \"runing\""));
    char *option_first[] = {"list", "--bogus", "-s", "runing", NULL};
    assert_int_equal(list_parse_args(ARGC(option_first), option_first, &l, &err),
                     PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "list: unknown option --bogus"));

    state_args s;
    char *json_value[] = {"state", "--json=yes", NULL};
    assert_int_equal(state_parse_args(ARGC(json_value), json_value, &s, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "state: unknown option --json=yes"));

    wait_args w;
    char *abbreviated[] = {"wait", "--int", "2", "--qu", "abc", NULL};
    assert_int_equal(wait_parse_args(ARGC(abbreviated), abbreviated, &w, &err), 0);
    assert_true(w.interval_s == 2.0);
    assert_true(w.quiet);
    assert_string_equal(w.id, "abc");
    char *short_interval[] = {"wait", "-i", "2", "abc", NULL};
    assert_int_equal(wait_parse_args(ARGC(short_interval), short_interval, &w, &err),
                     PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "wait: unknown option -i"));

    fetch_args f;
    char *empty_dir[] = {"fetch", "-o", "", "abc", NULL};
    assert_int_equal(fetch_parse_args(ARGC(empty_dir), empty_dir, &f, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "fetch: -o wants a directory"));
}

static void test_fetch(void **state)
{
    (void)state;
    cli_error err = {0};
    fetch_args f;
    char *defaults[] = {"fetch", "abc", NULL};
    assert_int_equal(fetch_parse_args(ARGC(defaults), defaults, &f, &err), 0);
    assert_int_equal(f.format, FETCH_BOTH);
    assert_null(f.dir);
    char *npz[] = {"fetch", "-o", "out/dir", "--format", "npz", "abc", NULL};
    assert_int_equal(fetch_parse_args(ARGC(npz), npz, &f, &err), 0);
    assert_int_equal(f.format, FETCH_NPZ);
    assert_string_equal(f.dir, "out/dir");
    assert_string_equal(f.id, "abc");
    char *bad[] = {"fetch", "--format=onnx", "abc", NULL};
    assert_int_equal(fetch_parse_args(ARGC(bad), bad, &f, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "unknown format \"onnx\""));
}

/* profile: one id, --json before or after it; and the table of a
 * profile.json, refused (nothing printed) when it is not one. */
static void test_profile(void **state)
{
    (void)state;
    cli_error err = {0};
    profile_args a;
    char *plain[] = {"profile", "abc", NULL};
    assert_int_equal(profile_parse_args(ARGC(plain), plain, &a, &err), 0);
    assert_string_equal(a.id, "abc");
    assert_false(a.json);
    char *json[] = {"profile", "abc", "--json", NULL};
    assert_int_equal(profile_parse_args(ARGC(json), json, &a, &err), 0);
    assert_true(a.json);
    char *none[] = {"profile", NULL};
    assert_int_equal(profile_parse_args(ARGC(none), none, &a, &err), PUNCH_EXIT_USAGE);

    json_t *p = json_loads("{\"steps\": 4, \"layers\": [{\"index\": 0, \"type\": \"dense\", "
                           "\"forward_ms\": {\"mean\": 1.5, \"max\": 2, \"total\": 6}, "
                           "\"backward_ms\": {\"mean\": 0.25}}], "
                           "\"step_ms\": {\"load\": {\"mean\": 0.125, \"max\": 0.5, "
                           "\"total\": 0.5}}}", 0, NULL);
    assert_non_null(p);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(profile_print_table("j1", p, out), 0);
    assert_int_equal(fclose(out), 0);
    assert_non_null(strstr(text, "job j1: 4 training steps profiled; times in ms\n"));
    assert_non_null(strstr(text, "    0  dense           1.500      2.000      6.000      0.250"
                                 "          -          -\n"));
    assert_non_null(strstr(text, "load                   0.125      0.500      0.500\n"));
    free(text);
    json_decref(p);

    p = json_loads("{\"steps\": 4}", 0, NULL);
    out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(profile_print_table("j1", p, out), -1);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(len, 0);
    free(text);
    json_decref(p);
}

static void test_keygen(void **state)
{
    (void)state;
    cli_error err = {0};
    keygen_args k;
    char *ok[] = {"keygen", "--identity", "alice.b@lab-1", "--admin", NULL};
    assert_int_equal(keygen_parse_args(ARGC(ok), ok, &k, &err), 0);
    assert_string_equal(k.identity, "alice.b@lab-1");
    assert_true(k.admin);
    char *missing[] = {"keygen", NULL};
    assert_int_equal(keygen_parse_args(ARGC(missing), missing, &k, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--identity"));
    char *bad[] = {"keygen", "-i", "al ice", NULL};
    assert_int_equal(keygen_parse_args(ARGC(bad), bad, &k, &err), PUNCH_EXIT_USAGE);
    char *positional[] = {"keygen", "alice", NULL};
    assert_int_equal(keygen_parse_args(ARGC(positional), positional, &k, &err),
                     PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "did you mean --identity alice"));
}

static void test_wants_help(void **state)
{
    (void)state;
    char *yes[] = {"wait", "abc", "--help", NULL};
    char *short_yes[] = {"wait", "-h", NULL};
    char *no[] = {"wait", "--", "--help", NULL};
    assert_true(cli_wants_help(ARGC(yes), yes));
    assert_true(cli_wants_help(ARGC(short_yes), short_yes));
    assert_false(cli_wants_help(ARGC(no), no));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connection_flags_anywhere),
        cmocka_unit_test(test_connection_flags_stop_at_double_dash),
        cmocka_unit_test(test_tls_flags),
        cmocka_unit_test(test_submit),
        cmocka_unit_test(test_wait_logs_cancel_state),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_list_knows_every_state),
        cmocka_unit_test(test_list_filters),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_first_problem_is_reported),
        cmocka_unit_test(test_fetch),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_keygen),
        cmocka_unit_test(test_wants_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
