/* test_load_all.c — dataset_load_all as the engine calls it: train, test
 * and validation sets from a spec, subsetting, the validation split,
 * unit and standard scaling from train statistics, shape checks against
 * model.input, label checks against num_classes, every format. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "data/dataset.h"
#include "data_test_util.h"

static const char *dirs[1];
static dataset_roots roots = {dirs, 1};
static char err[2048];
static dataset tr, va, te;

static int setup(void **state)
{
    tu_dir_setup(state);
    dirs[0] = tu_dir;
    assert_int_equal(mkdir(tu_path(tu_dir, "fm"), 0755), 0);
    tu_write_idx(tu_dir, "fm/train", 1, 100, 2, 2, NULL, NULL);
    tu_write_idx(tu_dir, "fm/t10k", 1, 30, 2, 2, NULL, NULL);
    assert_int_equal(mkdir(tu_path(tu_dir, "cifar"), 0755), 0);
    /* Batches 1, 2 and 10: numeric order, not string order. */
    const int numbers[3] = {10, 1, 2};
    for (int b = 0; b < 3; b++) {
        unsigned char rec[2 * 3073];
        memset(rec, numbers[b], sizeof rec);
        rec[0] = rec[3073] = (unsigned char)(numbers[b] % 10);
        char name[64];
        snprintf(name, sizeof name, "cifar/data_batch_%d.bin", numbers[b]);
        tu_write(tu_dir, name, rec, sizeof rec);
    }
    tu_write(tu_dir, "cifar/readme.txt", "not a batch", 11);
    const char csv[] = "y,a,b,c,d\n1,1,2,3,-8\n2,4,5,6,4\n0,0,0,0,0\n1,2,2,2,2\n";
    tu_write(tu_dir, "t.csv", csv, sizeof csv - 1);
    return 0;
}

static void free_all(void)
{
    dataset_free(&tr);
    dataset_free(&va);
    dataset_free(&te);
}

static spec_data idx_spec(void)
{
    return (spec_data){.format = DATA_IDX, .train = "fm/train", .test = "fm/t10k",
                       .scaling = SCALE_UNIT, .num_classes = 10};
}

static const spec_shape in4 = {3, {1, 2, 2}};

static int load(const spec_data *d, const spec_shape *in)
{
    return dataset_load_all(d, in, &roots, 7, &tr, &va, &te, err, sizeof err);
}

/* Raw pixel k of record i as tu_idx_images writes it. */
static float raw(long i, long k)
{
    return (float)((i * 7 + k) % 256);
}

static void test_split_and_unit_scaling(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    d.validation_split = 0.1;
    assert_int_equal(load(&d, &in4), 0);
    assert_int_equal(tr.n, 90);
    assert_int_equal(va.n, 10);
    assert_int_equal(te.n, 30);
    assert_int_equal(tr.shape.rank, 3);
    assert_int_equal(va.shape.dim[2], 2);
    assert_int_equal(tr.num_classes, 10);
    /* Validation is the tail of train, in file order. */
    for (long i = 0; i < 10; i++) {
        assert_int_equal(va.y[i], (90 + i) % 10);
        for (long k = 0; k < 4; k++)
            assert_true(va.x[i * 4 + k] == raw(90 + i, k) / 255.0f);
    }
    for (long k = 0; k < 4; k++) {
        assert_true(tr.x[89 * 4 + k] == raw(89, k) / 255.0f);
        assert_true(te.x[29 * 4 + k] == raw(29, k) / 255.0f);
    }
    free_all();
}

static void test_subsets(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    d.train_samples = 50;
    d.test_samples = 7;
    d.validation_split = 0.2;
    d.scaling = SCALE_NONE;
    assert_int_equal(load(&d, &in4), 0);
    assert_int_equal(tr.n, 40);
    assert_int_equal(va.n, 10);
    assert_int_equal(te.n, 7);
    assert_true(va.x[0] == raw(40, 0));
    assert_int_equal(va.y[9], 49 % 10);
    free_all();

    d.train_samples = 200;
    assert_int_equal(load(&d, &in4), -1);
    assert_string_equal(err, "data.train_samples: 200 requested but \"fm/train\" has 100 samples");
    assert_null(tr.x);
    d.train_samples = 0;
    d.validation_split = 0.995;
    assert_int_equal(load(&d, &in4), -1);
    assert_string_equal(err, "data.validation_split: 0.995 of 100 train samples leaves an "
                             "empty training set");
    /* Keras's split point, int(n * (1 - split)): any split > 0 holds out
     * at least one sample. */
    d.validation_split = 0.001;
    assert_int_equal(load(&d, &in4), 0);
    assert_int_equal(va.n, 1);
    free_all();
    assert_null(tr.x);
    assert_null(te.x);
}

static void test_standard_scaling(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    d.scaling = SCALE_STANDARD;
    d.validation_split = 0.5;
    assert_int_equal(load(&d, &in4), 0);
    assert_int_equal(tr.n, 50);
    double mean[4] = {0}, var[4] = {0};
    for (long k = 0; k < 4; k++) {
        double rm = 0, rv = 0;
        for (long i = 0; i < 50; i++)
            rm += raw(i, k);
        rm /= 50;
        for (long i = 0; i < 50; i++)
            rv += (raw(i, k) - rm) * (raw(i, k) - rm);
        double sd = sqrt(rv / 50);
        for (long i = 0; i < 50; i++) {
            mean[k] += tr.x[i * 4 + k];
            var[k] += (double)tr.x[i * 4 + k] * tr.x[i * 4 + k];
        }
        assert_true(fabs(mean[k] / 50) < 1e-5);
        assert_true(fabs(var[k] / 50 - 1) < 1e-4);
        /* Validation and test use the train statistics, not their own. */
        assert_true(fabs(va.x[0 * 4 + k] - (raw(50, k) - rm) / sd) < 1e-4);
        assert_true(fabs(te.x[3 * 4 + k] - (raw(3, k) - rm) / sd) < 1e-4);
    }
    free_all();
}

static void test_shape_checks(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    spec_shape big = {3, {1, 28, 28}};
    assert_int_equal(load(&d, &big), -1);
    assert_string_equal(err, "dataset \"fm/train\": samples have shape [1, 2, 2] (4 features) "
                             "but model.input is [1, 28, 28] (784 features)");
    spec_shape transposed = {3, {2, 2, 1}};
    assert_int_equal(load(&d, &transposed), -1);
    assert_non_null(strstr(err, "but model.input is [2, 2, 1] (4 features)"));
    /* A flat input of the same size takes the samples as they are. */
    spec_shape flat = {1, {4}};
    assert_int_equal(load(&d, &flat), 0);
    assert_int_equal(tr.shape.rank, 1);
    assert_int_equal(te.shape.dim[0], 4);
    free_all();
}

static void test_labels_and_names(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    d.num_classes = 5;
    assert_int_equal(load(&d, &in4), -1);
    assert_string_equal(err, "train-labels-idx1-ubyte.gz: record 6 of 100: label 5 out of "
                             "range [0, 5)");
    d = idx_spec();
    d.test = "fm/nope";
    assert_int_equal(load(&d, &in4), -1);
    assert_non_null(strstr(err, "data.test: dataset \"fm/nope\" (idx) not found: looked for "));
    assert_null(tr.x);
    d = idx_spec();
    d.train = "../etc/passwd";
    assert_int_equal(load(&d, &in4), -1);
    assert_non_null(strstr(err, "data.train: dataset name \"../etc/passwd\" contains \"..\""));
    /* An explicit validation set instead of a split. */
    d = idx_spec();
    d.validation = "fm/t10k";
    d.validation_split = 0.5;
    assert_int_equal(load(&d, &in4), 0);
    assert_int_equal(tr.n, 100);
    assert_int_equal(va.n, 30);
    free_all();
    d.train = NULL;
    assert_int_equal(load(&d, &in4), -1);
    assert_string_equal(err, "data.train: no training set named");
}

static void test_cifar_dir(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    d.format = DATA_CIFAR10;
    d.train = "cifar/train";
    d.test = NULL;
    spec_shape in = {3, {3, 32, 32}};
    assert_int_equal(load(&d, &in), 0);
    assert_int_equal(tr.n, 6);
    const int order[3] = {1, 2, 10};
    for (int b = 0; b < 3; b++) {
        assert_int_equal(tr.y[2 * b], order[b] % 10);
        assert_true(tr.x[(size_t)(2 * b) * 3072 + 5] == order[b] / 255.0f);
    }
    assert_int_equal(te.n, 0);
    assert_null(te.x);
    free_all();
}

static void test_csv(void **state)
{
    (void)state;
    spec_data d = idx_spec();
    d.format = DATA_CSV;
    d.train = "t";
    d.test = NULL;
    d.header = true;
    assert_int_equal(load(&d, &in4), 0);
    assert_int_equal(tr.n, 4);
    assert_int_equal(tr.shape.rank, 3);
    /* Unit scaling of non-byte data: by the largest absolute value, 8. */
    assert_true(tr.x[3] == -1.0f);
    assert_true(tr.x[4] == 0.5f);
    free_all();
    spec_shape five = {1, {5}};
    assert_int_equal(load(&d, &five), -1);
    assert_string_equal(err, "t.csv:2: 4 features, expected 5");
}

static void test_synthetic(void **state)
{
    (void)state;
    spec_data d = {.format = DATA_SYNTHETIC, .synthetic_train = 64, .synthetic_test = 16,
                   .num_classes = 3, .scaling = SCALE_UNIT, .validation_split = 0.25};
    spec_shape in = {3, {2, 4, 4}};
    assert_int_equal(load(&d, &in), 0);
    assert_int_equal(tr.n, 48);
    assert_int_equal(va.n, 16);
    assert_int_equal(te.n, 16);
    float first = tr.x[0], test_first[32];
    memcpy(test_first, te.x, sizeof test_first);
    for (long i = 0; i < tr.n * 32; i++)
        assert_true(tr.x[i] >= 0 && tr.x[i] <= 1);
    assert_memory_not_equal(tr.x, te.x, sizeof test_first);
    free_all();
    assert_int_equal(load(&d, &in), 0);
    assert_true(tr.x[0] == first);
    assert_memory_equal(te.x, test_first, sizeof test_first);
    free_all();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_and_unit_scaling),
        cmocka_unit_test(test_subsets),
        cmocka_unit_test(test_standard_scaling),
        cmocka_unit_test(test_shape_checks),
        cmocka_unit_test(test_labels_and_names),
        cmocka_unit_test(test_cifar_dir),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_synthetic),
    };
    return cmocka_run_group_tests(tests, setup, tu_dir_teardown);
}
