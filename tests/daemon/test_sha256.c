/* test_sha256.c — lib/crypto's SHA-256 (GnuTLS underneath) and its hex
 * form against the FIPS 180-4 / NIST example vectors, whole and fed in
 * pieces; crypto_random fills
 * its buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/random.h"
#include "crypto/sha256.h"

static void check_hex(const void *msg, size_t len, const char *want)
{
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[65];
    sha256(msg, len, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, want);
}

static void test_empty(void **state)
{
    (void)state;
    check_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
    (void)state;
    check_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_two_blocks(void **state)
{
    (void)state;
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 448 bits */
    check_hex(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_896_bits(void **state)
{
    (void)state;
    const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                    "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check_hex(m, strlen(m), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_million_a(void **state)
{
    (void)state;
    char *m = malloc(1000000);
    assert_non_null(m);
    memset(m, 'a', 1000000);
    check_hex(m, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}

/* Fed in uneven pieces, the incremental digest is the one-shot one; a
 * discarded context frees cleanly (LeakSanitizer checks). */
static void test_incremental(void **state)
{
    (void)state;
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_ctx ctx;
    assert_true(sha256_init(&ctx));
    sha256_update(&ctx, m, 1);
    sha256_update(&ctx, m + 1, 0);
    sha256_update(&ctx, m + 1, 30);
    sha256_update(&ctx, m + 31, strlen(m) - 31);
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[65];
    sha256_final(&ctx, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    assert_true(sha256_init(&ctx));
    sha256_update(&ctx, "abc", 3);
    sha256_discard(&ctx);
    sha256_discard(&ctx);
}

static void test_random(void **state)
{
    (void)state;
    /* Two draws of 32 bytes: equal or all zero only if the generator is broken. */
    uint8_t a[32], b[32], zero[32] = {0};
    char err[128];
    assert_true(crypto_random(a, sizeof a, err, sizeof err));
    assert_true(crypto_random(b, sizeof b, err, sizeof err));
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_not_equal(a, zero, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_abc),
        cmocka_unit_test(test_two_blocks),
        cmocka_unit_test(test_896_bits),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
