/* test_userconfig.c — where punch gets its URL and secret: flags beat the
 * environment, which beats the config file; bad values are refused with
 * the source named; the secret is never echoed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userconfig.h"

static char tmpdir[] = "/tmp/punch-test-config-XXXXXX";

/* Write text to a config file in tmpdir; returns its path (static). */
static const char *write_config(const char *text, mode_t mode)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/config", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/config", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    return 0;
}

static void test_flags_beat_env_beat_file(void **state)
{
    (void)state;
    const char *file = write_config("url = http://file:1\nsecret = file-secret\n", 0600);
    userconfig_sources src = {
        .flag_url = "http://flag:3", .flag_secret = "flag-secret",
        .env_url = "http://env:2", .env_secret = "env-secret",
        .file_path = file,
    };
    cli_ctx ctx;
    cli_error err = {0};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    assert_string_equal(ctx.url, "http://flag:3");
    assert_string_equal(ctx.secret, "flag-secret");
    userconfig_free(&ctx);

    src.flag_url = NULL;
    src.flag_secret = NULL;
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    assert_string_equal(ctx.url, "http://env:2");
    assert_string_equal(ctx.secret, "env-secret");
    userconfig_free(&ctx);

    src.env_url = "";   /* an empty variable counts as unset */
    src.env_secret = NULL;
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    assert_string_equal(ctx.url, "http://file:1");
    assert_string_equal(ctx.secret, "file-secret");
    userconfig_free(&ctx);
}

static void test_each_setting_resolves_separately(void **state)
{
    (void)state;
    const char *file = write_config("# comment\n\n  secret = \"quoted secret/\"  \n", 0600);
    userconfig_sources src = {.env_url = "http://env:2/", .file_path = file};
    cli_ctx ctx;
    cli_error err = {0};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    /* The URL loses its trailing slash; the secret keeps every byte. */
    assert_string_equal(ctx.url, "http://env:2");
    assert_string_equal(ctx.secret, "quoted secret/");
    userconfig_free(&ctx);
}

static void test_defaults_without_any_source(void **state)
{
    (void)state;
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no-such-config", tmpdir);
    userconfig_sources src = {.file_path = missing};
    cli_ctx ctx;
    cli_error err = {0};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    assert_string_equal(ctx.url, USERCONFIG_DEFAULT_URL);
    assert_null(ctx.secret);
    userconfig_free(&ctx);
}

static void test_bad_url_names_its_source(void **state)
{
    (void)state;
    cli_ctx ctx;
    cli_error err = {0};
    userconfig_sources src = {.env_url = "localhost:8080"};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "PUNCH_URL"));
    assert_non_null(strstr(err.msg, "http://HOST:PORT"));

    const char *file = write_config("url = http://ok:1\nurl = ftp://x\n", 0600);
    userconfig_sources from_file = {.file_path = file};
    assert_int_equal(userconfig_resolve(&from_file, &ctx, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "config:2"));

    userconfig_sources flag = {.flag_url = "http://"};
    assert_int_equal(userconfig_resolve(&flag, &ctx, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "--url"));
}

static void test_bad_file_lines(void **state)
{
    (void)state;
    cli_ctx ctx;
    cli_error err = {0};
    userconfig_sources src = {.file_path = write_config("url = http://a:1\nnonsense\n", 0600)};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "config:2"));

    src.file_path = write_config("colour = blue\n", 0600);
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "unknown key \"colour\""));
}

static void test_secret_with_control_bytes_is_refused_unechoed(void **state)
{
    (void)state;
    cli_ctx ctx;
    cli_error err = {0};
    userconfig_sources src = {.env_secret = "s3cr3t\r\nX-Evil: 1"};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), PUNCH_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "PUNCH_SECRET"));
    assert_null(strstr(err.msg, "s3cr3t"));
}

static void test_world_readable_secret_file_warns(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *warn = open_memstream(&text, &len);
    assert_non_null(warn);
    userconfig_sources src = {.file_path = write_config("secret = hush\n", 0644), .warn = warn};
    cli_ctx ctx;
    cli_error err = {0};
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    userconfig_free(&ctx);
    fclose(warn);
    assert_non_null(strstr(text, "chmod 600"));
    assert_null(strstr(text, "hush"));
    free(text);

    warn = open_memstream(&text, &len);
    src.file_path = write_config("secret = hush\n", 0600);
    src.warn = warn;
    assert_int_equal(userconfig_resolve(&src, &ctx, &err), 0);
    userconfig_free(&ctx);
    fclose(warn);
    assert_int_equal(len, 0);
    free(text);
}

static void test_default_path(void **state)
{
    (void)state;
    setenv("PUNCH_CONFIG", "/etc/custom", 1);
    char *p = userconfig_default_path();
    assert_string_equal(p, "/etc/custom");
    free(p);
    unsetenv("PUNCH_CONFIG");
    setenv("XDG_CONFIG_HOME", "/x", 1);
    p = userconfig_default_path();
    assert_string_equal(p, "/x/punch/config");
    free(p);
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/u", 1);
    p = userconfig_default_path();
    assert_string_equal(p, "/home/u/.config/punch/config");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags_beat_env_beat_file),
        cmocka_unit_test(test_each_setting_resolves_separately),
        cmocka_unit_test(test_defaults_without_any_source),
        cmocka_unit_test(test_bad_url_names_its_source),
        cmocka_unit_test(test_bad_file_lines),
        cmocka_unit_test(test_secret_with_control_bytes_is_refused_unechoed),
        cmocka_unit_test(test_world_readable_secret_file_warns),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
