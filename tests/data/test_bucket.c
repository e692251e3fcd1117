/* test_bucket.c — data.bucket_by_length's epoch order
 * (engine/data/bucket.c): on a length-skewed set it cuts the padded steps
 * by a measured factor, it is a function of (seed, epoch), every sample is
 * seen once an epoch, a slice keeps its records, and a short last batch
 * stays last. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/dataset.h"

#define N 3001
#define BATCH 16

/* A skewed set, as text is: most sequences short, a long tail up to 256. */
static void skewed_lengths(int32_t *len, long n)
{
    uint64_t s = 12345;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t u = (uint32_t)(s >> 33);
        int32_t l = (int32_t)(4 + u % 24);
        if (u % 10 == 0)
            l = (int32_t)(32 + (u >> 8) % 225);
        len[i] = l;
    }
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void bucketed(int32_t *len, long n, unsigned long seed, int epoch, int64_t *perm)
{
    dataset_epoch_permutation(n, seed, epoch, perm);
    assert_int_equal(dataset_bucket_order(perm, 0, n, len, BATCH, seed, epoch), 0);
}

static void test_padding_factor(void **state)
{
    (void)state;
    int32_t *len = malloc(N * sizeof *len);
    int64_t *plain = malloc(N * sizeof *plain), *perm = malloc(N * sizeof *perm);
    assert_non_null(len);
    assert_non_null(plain);
    assert_non_null(perm);
    skewed_lengths(len, N);
    long real = 0;
    for (long i = 0; i < N; i++)
        real += len[i];
    dataset_epoch_permutation(N, 7, 0, plain);
    bucketed(len, N, 7, 0, perm);
    long before = dataset_padded_steps(plain, N, len, BATCH);
    long after = dataset_padded_steps(perm, N, len, BATCH);
    print_message("real steps %ld; padded: shuffled %ld (%.2fx), bucketed %ld (%.2fx): %.2fx "
                  "fewer\n", real, before, (double)before / (double)real, after,
                  (double)after / (double)real, (double)before / (double)after);
    assert_true(after * 3 < before);
    assert_true(after < real + real / 5);
    free(len);
    free(plain);
    free(perm);
}

static void test_reproducible(void **state)
{
    (void)state;
    int32_t len[N];
    int64_t a[N], b[N];
    skewed_lengths(len, N);
    bucketed(len, N, 3, 2, a);
    bucketed(len, N, 3, 2, b);
    assert_memory_equal(a, b, sizeof a);
    bucketed(len, N, 3, 3, b);
    assert_memory_not_equal(a, b, sizeof a);
    bucketed(len, N, 4, 2, b);
    assert_memory_not_equal(a, b, sizeof a);
}

static void test_each_once(void **state)
{
    (void)state;
    int32_t len[N];
    int64_t perm[N], plain[N];
    char seen[N];
    skewed_lengths(len, N);
    for (int epoch = 0; epoch < 3; epoch++) {
        bucketed(len, N, 11, epoch, perm);
        memset(seen, 0, sizeof seen);
        for (long i = 0; i < N; i++) {
            assert_true(perm[i] >= 0 && perm[i] < N);
            assert_int_equal(seen[perm[i]], 0);
            seen[perm[i]] = 1;
        }
        /* The short last batch (N % BATCH) stays last: the longest of the
         * last sorted chunk (64 batches a chunk), where the plain order
         * had them. */
        dataset_epoch_permutation(N, 11, epoch, plain);
        long tail = N % BATCH, chunk = 64L * BATCH, c0 = (N - 1) / chunk * chunk;
        int32_t got[BATCH], want[N];
        for (long i = 0; i < tail; i++)
            got[i] = len[perm[N - tail + i]];
        for (long i = c0; i < N; i++)
            want[i - c0] = len[plain[i]];
        qsort(got, (size_t)tail, sizeof *got, cmp_i32);
        qsort(want, (size_t)(N - c0), sizeof *want, cmp_i32);
        assert_memory_equal(got, want + (N - c0 - tail), (size_t)tail * sizeof *got);
    }
}

/* A slice [lo, hi) is rearranged within itself, its batches from lo
 * sorted; nothing outside it moves. */
static void test_slice(void **state)
{
    (void)state;
    int32_t len[N];
    int64_t perm[N], plain[N];
    skewed_lengths(len, N);
    dataset_epoch_permutation(N, 5, 1, plain);
    memcpy(perm, plain, sizeof perm);
    long lo = 1000, hi = 2000;
    assert_int_equal(dataset_bucket_order(perm, lo, hi, len, BATCH, 5, 1), 0);
    assert_memory_equal(perm, plain, (size_t)lo * sizeof *perm);
    assert_memory_equal(perm + hi, plain + hi, (size_t)(N - hi) * sizeof *perm);
    char in[N];
    memset(in, 0, sizeof in);
    for (long i = lo; i < hi; i++)
        in[plain[i]] = 1;
    for (long i = lo; i < hi; i++)
        assert_int_equal(in[perm[i]], 1);
    assert_true(dataset_padded_steps(perm + lo, hi - lo, len, BATCH) * 2 <
                dataset_padded_steps(plain + lo, hi - lo, len, BATCH));
}

/* No lengths (every sample T long): the shuffled order as it is. */
static void test_no_lengths(void **state)
{
    (void)state;
    int64_t perm[N], plain[N];
    dataset_epoch_permutation(N, 9, 0, plain);
    memcpy(perm, plain, sizeof perm);
    assert_int_equal(dataset_bucket_order(perm, 0, N, NULL, BATCH, 9, 0), 0);
    assert_memory_equal(perm, plain, sizeof perm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_padding_factor),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_each_once),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_no_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
