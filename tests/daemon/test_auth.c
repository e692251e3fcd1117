/* test_auth.c — secrets file parsing (plain, hashed, roles, every error
 * class), lookup and the constant-time comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/auth.h"

/* 64 valid hex digits. */
#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static auth_table *parse(const char *text, char *err, size_t errlen)
{
    return auth_table_parse(text, strlen(text), err, errlen);
}

static void bob_hash(char hex[65])
{
    uint8_t d[32];
    sha256("bob-secret", 10, d);
    sha256_hex(d, hex);
}

static void test_plain_and_hashed(void **state)
{
    (void)state;
    char hex[65], doc[512], err[256] = "";
    bob_hash(hex);
    snprintf(doc, sizeof doc,
             "[{\"secret\": \"alice-secret\", \"identity\": \"alice\"},"
             " {\"secret_sha256\": \"%s\", \"identity\": \"bob\"},"
             " {\"secret\": \"root-pw\", \"identity\": \"root\", \"role\": \"admin\"}]",
             hex);
    auth_table *t = parse(doc, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(t->n, 3);
    const auth_entry *e = auth_table_find(t, "alice-secret", 12);
    assert_non_null(e);
    assert_string_equal(e->identity, "alice");
    assert_int_equal(e->role, AUTH_ROLE_USER);
    e = auth_table_find(t, "bob-secret", 10);
    assert_non_null(e);
    assert_string_equal(e->identity, "bob");
    e = auth_table_find(t, "root-pw", 7);
    assert_non_null(e);
    assert_int_equal(e->role, AUTH_ROLE_ADMIN);
    /* Near misses: prefix, extension, case, empty. */
    assert_null(auth_table_find(t, "alice-secre", 11));
    assert_null(auth_table_find(t, "alice-secretx", 13));
    assert_null(auth_table_find(t, "ALICE-SECRET", 12));
    assert_null(auth_table_find(t, "", 0));
    /* The hash itself is not a password. */
    assert_null(auth_table_find(t, hex, 64));
    auth_table_free(t);
}

static void test_uppercase_hex_accepted(void **state)
{
    (void)state;
    char hex[65], doc[256], err[256];
    bob_hash(hex);
    for (char *p = hex; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    snprintf(doc, sizeof doc, "[{\"secret_sha256\": \"%s\", \"identity\": \"bob\"}]", hex);
    auth_table *t = parse(doc, err, sizeof err);
    assert_non_null(t);
    assert_non_null(auth_table_find(t, "bob-secret", 10));
    auth_table_free(t);
}

/* Each bad document fails with a message containing `want`, and never
 * echoes the secret "s3cr3t-value". */
static void expect_error(const char *doc, const char *want)
{
    char err[400] = "";
    auth_table *t = parse(doc, err, sizeof err);
    if (t) {
        auth_table_free(t);
        fail_msg("accepted: %s", doc);
    }
    if (!strstr(err, want))
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
    assert_null(strstr(err, "s3cr3t-value"));
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("", "line");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"identity\": \"a\"", "line");
    expect_error("{\"secret\": \"s3cr3t-value\"}", "array");
    expect_error("[]", "no entries");
    expect_error("[42]", "entry 1: must be an object");
    expect_error("[{\"secret\": \"s3cr3t-value\"}]", "identity");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"identity\": \"a b\"}]", "identity");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"identity\": \"../x\"}]", "identity");
    expect_error("[{\"identity\": \"a\"}]", "exactly one of");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"secret_sha256\": \"00\", \"identity\": \"a\"}]",
                 "exactly one of");
    expect_error("[{\"secret\": \"\", \"identity\": \"a\"}]", "non-empty");
    expect_error("[{\"secret\": 7, \"identity\": \"a\"}]", "non-empty string");
    expect_error("[{\"secret_sha256\": \"abc\", \"identity\": \"a\"}]", "64 hex");
    expect_error("[{\"secret_sha256\": \"" HEX64 "zz\", \"identity\": \"a\"}]", "64 hex");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"identity\": \"a\", \"role\": \"root\"}]",
                 "role");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"identity\": \"a\", \"extra\": 1}]",
                 "unknown key");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"identity\": \"a\"},"
                 " {\"secret\": \"s3cr3t-value\", \"identity\": \"b\"}]",
                 "same secret as entry 1");
    expect_error("[{\"secret\": \"s3cr3t-value\", \"secret\": \"x\", \"identity\": \"a\"}]",
                 "duplicate");
}

static void test_ct_equal(void **state)
{
    (void)state;
    uint8_t a[32], b[32];
    memset(a, 0x5a, sizeof a);
    memcpy(b, a, sizeof b);
    assert_true(auth_ct_equal(a, b, 32));
    for (size_t i = 0; i < 32; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            assert_false(auth_ct_equal(a, b, 32));
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    assert_true(auth_ct_equal(a, b, 0));
}

static void test_file_and_reload(void **state)
{
    (void)state;
    char path[] = "/tmp/punch-auth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *v1 = "[{\"secret\": \"one\", \"identity\": \"alice\"}]";
    assert_int_equal(write(fd, v1, strlen(v1)), (ssize_t)strlen(v1));
    close(fd);
    char err[400];
    auth *a = auth_open(path, err, sizeof err);
    assert_non_null(a);
    auth_caller c;
    assert_true(auth_identify(a, "one", 3, &c));
    assert_string_equal(c.identity, "alice");
    /* A broken file on reload keeps the old table. */
    FILE *f = fopen(path, "w");
    fputs("[{\"secret\": ", f);
    fclose(f);
    assert_false(auth_reload(a, err, sizeof err));
    assert_true(auth_identify(a, "one", 3, &c));
    /* A good one replaces it: the old secret stops working. */
    f = fopen(path, "w");
    fputs("[{\"secret\": \"two\", \"identity\": \"bob\", \"role\": \"admin\"}]", f);
    fclose(f);
    assert_true(auth_reload(a, err, sizeof err));
    assert_false(auth_identify(a, "one", 3, &c));
    assert_true(auth_identify(a, "two", 3, &c));
    assert_string_equal(c.identity, "bob");
    assert_int_equal(c.role, AUTH_ROLE_ADMIN);
    auth_close(a);
    unlink(path);
    assert_null(auth_open(path, err, sizeof err));
    assert_non_null(strstr(err, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_hashed),
        cmocka_unit_test(test_uppercase_hex_accepted),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_ct_equal),
        cmocka_unit_test(test_file_and_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
