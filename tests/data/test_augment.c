/* test_augment.c — data.augment's transforms on tiny images: a flip
 * mirrors every row exactly, a crop keeps one size x size window in place
 * and zeroes the rest, the draws repeat under (seed, epoch, sample) and
 * change across epochs, and the probabilities hold. (Shapes that cannot be
 * transformed are refused by the spec library: tests/spec.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "data/dataset.h"

enum { C = 2, H = 4, W = 5, F = C * H * W };
static const spec_shape shape = {3, {C, H, W}};

static void fill(float *x)
{
    for (int i = 0; i < F; i++)
        x[i] = (float)(i + 1);
}

static void test_flip_mirrors_rows(void **state)
{
    (void)state;
    spec_augment a = {.flip_prob = 1.0};
    float x[F];
    fill(x);
    dataset_augment_sample(&a, &shape, 7, 0, 3, x);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                assert_float_equal(x[(c * H + i) * W + j],
                                   (float)((c * H + i) * W + (W - 1 - j) + 1), 0);
}

/* Where the kept window of x lies: its top-left corner, checked to be a
 * size x size square of the original values with zeros around it in every
 * channel at the same place. */
static void crop_window(const float *x, int size, int *top, int *left)
{
    *top = -1;
    *left = -1;
    for (int i = 0; i < H && *top < 0; i++)
        for (int j = 0; j < W; j++)
            if (x[i * W + j] != 0) {
                *top = i;
                *left = j;
                break;
            }
    assert_true(*top >= 0 && *top + size <= H && *left + size <= W);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++) {
                int k = (c * H + i) * W + j;
                bool in = i >= *top && i < *top + size && j >= *left && j < *left + size;
                assert_float_equal(x[k], in ? (float)(k + 1) : 0.0f, 0);
            }
}

static void test_crop_keeps_window_zeroes_rest(void **state)
{
    (void)state;
    spec_augment a = {.crop_size = 2, .crop_prob = 1.0};
    bool corner_seen[H][W] = {{false}};
    for (int64_t s = 0; s < 200; s++) {
        float x[F];
        fill(x);
        dataset_augment_sample(&a, &shape, 7, 0, s, x);
        int top, left;
        crop_window(x, 2, &top, &left);
        corner_seen[top][left] = true;
    }
    /* Every position of the window is drawn: 3 x 4 corners. */
    for (int i = 0; i <= H - 2; i++)
        for (int j = 0; j <= W - 2; j++)
            assert_true(corner_seen[i][j]);
    /* A crop the size of the image changes nothing. */
    spec_augment whole = {.crop_size = H, .crop_prob = 1.0};
    spec_shape sq = {3, {1, H, H}};
    float x[H * H], y[H * H];
    for (int i = 0; i < H * H; i++)
        x[i] = y[i] = (float)(i + 1);
    dataset_augment_sample(&whole, &sq, 7, 0, 0, x);
    assert_memory_equal(x, y, sizeof x);
}

static void test_reproducible_per_epoch(void **state)
{
    (void)state;
    spec_augment a = {.flip_prob = 0.5, .crop_size = 3, .crop_prob = 0.5};
    int differ_epoch = 0, differ_seed = 0;
    for (int64_t s = 0; s < 64; s++) {
        float x[F], y[F], z[F], u[F];
        fill(x);
        fill(y);
        fill(z);
        fill(u);
        dataset_augment_sample(&a, &shape, 42, 2, s, x);
        dataset_augment_sample(&a, &shape, 42, 2, s, y);
        assert_memory_equal(x, y, sizeof x);
        dataset_augment_sample(&a, &shape, 42, 3, s, z);
        dataset_augment_sample(&a, &shape, 43, 2, s, u);
        differ_epoch += memcmp(x, z, sizeof x) != 0;
        differ_seed += memcmp(x, u, sizeof x) != 0;
    }
    assert_true(differ_epoch > 16);
    assert_true(differ_seed > 16);
}

static void test_probabilities(void **state)
{
    (void)state;
    spec_augment a = {.flip_prob = 0.25};
    int flipped = 0, n = 4000;
    for (int64_t s = 0; s < n; s++) {
        float x[F];
        fill(x);
        dataset_augment_sample(&a, &shape, 1, 0, s, x);
        flipped += x[0] != 1.0f;
    }
    /* 4,000 draws at p = 0.25: mean 1,000, sd 27; allow 5 sd. */
    assert_in_range(flipped, 865, 1135);
    spec_augment none = {0};
    assert_false(dataset_augment_on(&none));
    assert_true(dataset_augment_on(&a));
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flip_mirrors_rows),
        cmocka_unit_test(test_crop_keeps_window_zeroes_rest),
        cmocka_unit_test(test_reproducible_per_epoch),
        cmocka_unit_test(test_probabilities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
