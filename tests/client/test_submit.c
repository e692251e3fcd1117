/* test_submit.c — `punch submit --dry-run` reads the job file through
 * lib/io and validates it with the spec library, with no server: a valid
 * spec passes; a missing file or a directory is a local-file error (exit 9)
 * naming the path; a file too large to be a spec is an invalid spec (exit 2)
 * whether the spec library or the read refuses it; a pipe (/dev/stdin,
 * a shell's <(...)) is read to its end. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"

static char tmpdir[] = "/tmp/punch-test-submit-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(tmpdir);
}

/* punch submit --dry-run PATH; returns the exit code, *err its message. */
static int dry_run(const char *path, cli_error *err)
{
    char *argv[] = {"submit", "--dry-run", (char *)path, NULL};
    cli_ctx ctx = {.url = "http://127.0.0.1:1"};
    *err = (cli_error){0};
    return cmd_submit(&ctx, 3, argv, err);
}

/* punch submit --dry-run PATH refuses it with exit code `code` and a
 * message that holds `names` (unless NULL) and `why`. */
static void assert_dry_run_refused(const char *path, int code, const char *names,
                                   const char *why)
{
    cli_error err;
    assert_int_equal(dry_run(path, &err), code);
    if (names)
        assert_non_null(strstr(err.msg, names));
    assert_non_null(strstr(err.msg, why));
}

/* A sparse file of size bytes (all zeros) in tmpdir; returns its path. */
static const char *sparse_file(const char *name, off_t size)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, size), 0);
    close(fd);
    return path;
}

/* The path of the test job mlp-small.json into path; skips the test when
 * PUNCH_SOURCE_ROOT does not say where the sources are. */
static void job_path(char *path, size_t cap)
{
    const char *root = getenv("PUNCH_SOURCE_ROOT");
    if (root == NULL)
        skip();
    snprintf(path, cap, "%s/tests/client/jobs/mlp-small.json", root);
}

static void test_valid_spec_passes(void **state)
{
    (void)state;
    char path[4096];
    job_path(path, sizeof path);
    cli_error err;
    assert_int_equal(dry_run(path, &err), PUNCH_EXIT_OK);
}

static void test_missing_file_names_it(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/missing.json", tmpdir);
    assert_dry_run_refused(path, PUNCH_EXIT_LOCAL, path, "No such file");
}

static void test_directory_is_refused(void **state)
{
    (void)state;
    assert_dry_run_refused(tmpdir, PUNCH_EXIT_LOCAL, tmpdir, "not a regular file");
}

static void test_too_large_is_an_invalid_spec(void **state)
{
    (void)state;
    /* Over the spec library's limit (16 MiB): read, then refused by it. */
    const char *big = sparse_file("big.json", (off_t)17 << 20);
    assert_dry_run_refused(big, PUNCH_EXIT_USAGE, NULL, "the limit is");
    unlink(big);
    /* Far over: refused before it is read, with the same exit code. */
    const char *huge = sparse_file("huge.json", ((off_t)64 << 20) + 1);
    assert_dry_run_refused(huge, PUNCH_EXIT_USAGE, "huge.json", "too large");
    unlink(huge);
}

/* The spec written into a pipe (it fits the pipe's buffer), read back
 * through /dev/fd/N as `punch submit <(cat job.json)` would. */
static void test_pipe_is_read(void **state)
{
    (void)state;
    char path[4096];
    job_path(path, sizeof path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char spec[4096];
    size_t n = fread(spec, 1, sizeof spec, f);
    fclose(f);
    assert_true(n > 0 && n < sizeof spec);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], spec, n), (ssize_t)n);
    close(fds[1]);
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/dev/fd/%d", fds[0]);
    cli_error err;
    assert_int_equal(dry_run(fdpath, &err), PUNCH_EXIT_OK);
    close(fds[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_spec_passes),
        cmocka_unit_test(test_missing_file_names_it),
        cmocka_unit_test(test_directory_is_refused),
        cmocka_unit_test(test_too_large_is_an_invalid_spec),
        cmocka_unit_test(test_pipe_is_read),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
