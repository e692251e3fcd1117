/* test_gpualloc.c — the device sets of a single host: taking the lowest free
 * devices, counting, and the "0,2,3" text the store keeps and
 * CUDA_VISIBLE_DEVICES receives (round trip, refusals). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <cmocka.h>

#include "sched/gpualloc.h"

static void test_gpualloc_sets(void **state)
{
    (void)state;
    uint64_t set = 0;
    assert_true(gpualloc_take(0, 4, 2, &set));
    assert_true(set == 0x3);
    assert_true(gpualloc_take(0x5, 4, 2, &set)); /* 0 and 2 taken: 1 and 3 */
    assert_true(set == 0xa);
    set = 0x77;
    assert_false(gpualloc_take(0xe, 4, 2, &set)); /* only device 0 free */
    assert_true(set == 0x77);
    assert_true(gpualloc_take(0xf, 4, 0, &set));
    assert_true(set == 0);
    assert_int_equal(gpualloc_count(0xa5), 4);

    char text[256];
    assert_true(gpualloc_format(0xa, text, sizeof text));
    assert_string_equal(text, "1,3");
    assert_true(gpualloc_format(0, text, sizeof text));
    assert_string_equal(text, "");
    assert_false(gpualloc_format(0xa, text, 3));
    uint64_t all = ~UINT64_C(0), back = 0;
    assert_true(gpualloc_format(all, text, sizeof text));
    assert_true(gpualloc_parse(text, &back));
    assert_true(back == all);
    assert_true(gpualloc_parse("", &back));
    assert_true(back == 0);
    assert_true(gpualloc_parse("2,0", &back));
    assert_true(back == 0x5);
    const char *bad[] = {"a", "1,", ",1", "1,,2", "64", "-1", "1 2", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(gpualloc_parse(bad[i], &back));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpualloc_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
