/* test_sha256.c — SHA-256 against the FIPS 180-4 / NIST example vectors,
 * one-shot and fed in odd-sized pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

static void test_million_a_incremental(void **state)
{
    (void)state;
    /* Fed in 997-byte pieces so block boundaries fall everywhere. */
    char piece[997];
    memset(piece, 'a', sizeof piece);
    sha256_ctx ctx;
    sha256_init(&ctx);
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < sizeof piece ? left : sizeof piece;
        sha256_update(&ctx, piece, n);
        left -= n;
    }
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[65];
    sha256_final(&ctx, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_padding_boundaries(void **state)
{
    (void)state;
    /* Lengths around the 55/56/64-byte padding edges: incremental byte-by-byte
     * must equal one-shot. */
    uint8_t msg[130];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    for (size_t len = 50; len <= sizeof msg; len++) {
        uint8_t a[32], b[32];
        sha256(msg, len, a);
        sha256_ctx ctx;
        sha256_init(&ctx);
        for (size_t i = 0; i < len; i++)
            sha256_update(&ctx, &msg[i], 1);
        sha256_final(&ctx, b);
        assert_memory_equal(a, b, 32);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_abc),
        cmocka_unit_test(test_two_blocks),
        cmocka_unit_test(test_896_bits),
        cmocka_unit_test(test_million_a_incremental),
        cmocka_unit_test(test_padding_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
