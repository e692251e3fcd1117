/* test_rows.c — the record-list loaders an asynchronous worker uses to
 * read its slice of each epoch's permutation: for IDX (plain and gzipped),
 * CIFAR-10 (across batch files), CSV and synthetic data, the records of a
 * sorted list equal those records of the whole load, as floats and (byte
 * data) as bytes; a malformed list, a record past the end and a broken file
 * fail with the whole load's message; and dataset_load_rows equals the
 * train part of dataset_load_part picked at the same records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "data/data_internal.h"
#include "data/dataset.h"
#include "data_test_util.h"

static char err[1024], err2[1024];

/* Lists against n records: empty, the first, the last, every third, a
 * run, and a permutation slice (sorted), as a worker asks. */
static long make_list(long n, int k, int64_t *rows)
{
    long m = 0;
    switch (k) {
    case 0:
        break;
    case 1:
        rows[m++] = 0;
        break;
    case 2:
        rows[m++] = n - 1;
        break;
    case 3:
        for (long i = 1; i < n; i += 3)
            rows[m++] = i;
        break;
    case 4:
        for (long i = n / 3; i < n / 2; i++)
            rows[m++] = i;
        break;
    default: {
        int64_t *perm = malloc((size_t)n * sizeof *perm);
        assert_non_null(perm);
        dataset_epoch_permutation(n, 5, 2, perm);
        char *take = calloc((size_t)n, 1);
        assert_non_null(take);
        for (long p = n / 3; p < 2 * n / 3; p++)
            take[perm[p]] = 1;
        for (long i = 0; i < n; i++)
            if (take[i])
                rows[m++] = i;
        free(take);
        free(perm);
    }
    }
    return m;
}
#define N_LISTS 6

/* part (floats, or bytes when given) holds records rows[0..m) of whole. */
static void assert_picked(const dataset *whole, const dataset *part, const uint8_t *bytes,
                          const int64_t *rows, long m)
{
    long f = whole->features;
    assert_int_equal(part->n, m);
    assert_int_equal(part->features, f);
    assert_int_equal(part->num_classes, whole->num_classes);
    assert_memory_equal(&part->shape, &whole->shape, sizeof whole->shape);
    if (bytes)
        assert_null(part->x);
    for (long i = 0; i < m; i++) {
        const float *w = whole->x + (size_t)rows[i] * f;
        assert_int_equal(part->y[i], whole->y[rows[i]]);
        if (bytes) {
            for (long j = 0; j < f; j++)
                assert_true((float)bytes[(size_t)i * f + j] == w[j]);
        } else {
            assert_memory_equal(part->x + (size_t)i * f, w, (size_t)f * sizeof(float));
        }
    }
}

static void write_idx(const char *prefix, int gz, uint32_t n, char img[512], char lab[512])
{
    size_t li, ll;
    unsigned char *bi = tu_idx_images(n, n, 28, 28, &li);
    unsigned char *bl = tu_idx_labels(n, n, 10, &ll);
    char ni[128], nl[128];
    snprintf(ni, sizeof ni, "%s-images-idx3-ubyte%s", prefix, gz ? ".gz" : "");
    snprintf(nl, sizeof nl, "%s-labels-idx1-ubyte%s", prefix, gz ? ".gz" : "");
    strcpy(img, gz ? tu_write_gz(tu_dir, ni, bi, li) : tu_write(tu_dir, ni, bi, li));
    strcpy(lab, gz ? tu_write_gz(tu_dir, nl, bl, ll) : tu_write(tu_dir, nl, bl, ll));
    free(bi);
    free(bl);
}

/* 1,000 28x28 images: several inflate and skip buffers between records. */
static void test_idx_rows(void **state)
{
    (void)state;
    const long n = 1000;
    int64_t *rows = malloc((size_t)n * sizeof *rows);
    uint8_t *bytes = malloc((size_t)n * 784);
    assert_non_null(rows);
    assert_non_null(bytes);
    for (int gz = 0; gz < 2; gz++) {
        char img[512], lab[512];
        write_idx(gz ? "wz" : "wp", gz, (uint32_t)n, img, lab);
        dataset whole, part;
        assert_int_equal(data_idx_load(img, lab, 10, &whole, err, sizeof err), 0);
        for (int k = 0; k < N_LISTS; k++) {
            long m = make_list(n, k, rows);
            for (int b = 0; b < 2; b++) {
                data_pick pick = {.rows = rows, .m = m, .bytes = b ? bytes : NULL};
                assert_int_equal(data_idx_load_pick(img, lab, 10, &pick, &part, err,
                                                    sizeof err), 0);
                assert_picked(&whole, &part, pick.bytes, rows, m);
                dataset_free(&part);
            }
        }
        /* Past the end; not ascending. */
        rows[0] = 3;
        rows[1] = n;
        data_pick pick = {.rows = rows, .m = 2};
        assert_int_equal(data_idx_load_pick(img, lab, 10, &pick, &part, err, sizeof err), -1);
        assert_non_null(strstr(err, "record 1000 asked of 1,000 images"));
        rows[1] = 3;
        assert_int_equal(data_idx_load_pick(img, lab, 10, &pick, &part, err, sizeof err), -1);
        assert_non_null(strstr(err, "not ascending at entry 1"));
        dataset_free(&whole);
    }
    /* A truncated gzipped images file fails a list of early records with
     * the whole load's message, naming the file and the record count. */
    size_t li;
    unsigned char *bi = tu_idx_images(300, 300, 28, 28, &li);
    char img[512], lab[512];
    write_idx("wt", 1, 300, img, lab);
    tu_write_gz(tu_dir, "wt-images-idx3-ubyte.gz", bi, li - 784 * 10);
    dataset whole, part;
    assert_int_equal(data_idx_load(img, lab, 10, &whole, err, sizeof err), -1);
    rows[0] = 2;
    rows[1] = 7;
    data_pick pick = {.rows = rows, .m = 2, .bytes = bytes};
    assert_int_equal(data_idx_load_pick(img, lab, 10, &pick, &part, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    assert_non_null(strstr(err, "wt-images-idx3-ubyte.gz: truncated after 290 of 300 images"));
    free(bi);
    free(rows);
    free(bytes);
}

static void test_cifar_rows(void **state)
{
    (void)state;
    size_t l1, l2;
    unsigned char *b1 = tu_cifar_records(5, 0, &l1), *b2 = tu_cifar_records(4, 5, &l2);
    const char *paths[2] = {strdup(tu_write(tu_dir, "data_batch_1.bin", b1, l1)),
                            strdup(tu_write_gz(tu_dir, "data_batch_2.bin.gz", b2, l2))};
    dataset whole, part;
    assert_int_equal(data_cifar10_load(paths, 2, 10, &whole, err, sizeof err), 0);
    int64_t rows[9];
    uint8_t bytes[9 * 3072];
    for (int k = 0; k < N_LISTS; k++) {
        long m = make_list(9, k, rows);
        for (int b = 0; b < 2; b++) {
            data_pick pick = {.rows = rows, .m = m, .bytes = b ? bytes : NULL};
            assert_int_equal(data_cifar10_load_pick(paths, 2, 10, &pick, &part, err,
                                                    sizeof err), 0);
            assert_picked(&whole, &part, pick.bytes, rows, m);
            dataset_free(&part);
        }
    }
    rows[0] = 9;
    data_pick pick = {.rows = rows, .m = 1};
    assert_int_equal(data_cifar10_load_pick(paths, 2, 10, &pick, &part, err, sizeof err), -1);
    assert_string_equal(err, "CIFAR-10: record 9 asked of 9");
    /* A bad label in the second file fails a list of the first file's. */
    b2[3073] = 11;
    tu_write_gz(tu_dir, "data_batch_2.bin.gz", b2, l2);
    dataset_free(&whole);
    assert_int_equal(data_cifar10_load(paths, 2, 10, &whole, err, sizeof err), -1);
    rows[0] = 1;
    assert_int_equal(data_cifar10_load_pick(paths, 2, 10, &pick, &part, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    free((void *)paths[0]);
    free((void *)paths[1]);
    free(b1);
    free(b2);
}

static void test_csv_rows(void **state)
{
    (void)state;
    const char csv[] = "label,a,b\n1,0.5,2\n\n0,3,-4\r\n2,1,1\n  \n1,7,8\n0,9,9";
    char p[512];
    strcpy(p, tu_write(tu_dir, "r.csv", csv, sizeof csv - 1));
    dataset whole, part;
    assert_int_equal(data_csv_load(p, 0, true, 0, 0, &whole, err, sizeof err), 0);
    int64_t rows[5];
    for (int k = 0; k < N_LISTS; k++) {
        long m = make_list(5, k, rows);
        data_pick pick = {.rows = rows, .m = m};
        assert_int_equal(data_csv_load_pick(p, 0, true, 0, 0, &pick, &part, err, sizeof err),
                         0);
        assert_picked(&whole, &part, NULL, rows, m);
        dataset_free(&part);
    }
    uint8_t bytes[8];
    data_pick pick = {.rows = rows, .m = 1, .bytes = bytes};
    assert_int_equal(data_csv_load_pick(p, 0, true, 0, 0, &pick, &part, err, sizeof err), -1);
    assert_string_equal(err, "r.csv: CSV values are not bytes");
    dataset_free(&whole);
    /* A bad field on line 7 fails a list of the first rows. */
    const char bad[] = "label,a,b\n1,0.5,2\n0,3,-4\n2,1,1\n1,7,8\n0,9,9\n1,x,2\n";
    strcpy(p, tu_write(tu_dir, "bad.csv", bad, sizeof bad - 1));
    rows[0] = 1;
    pick.bytes = NULL;
    assert_int_equal(data_csv_load_pick(p, 0, true, 3, 2, &pick, &part, err2, sizeof err2), -1);
    assert_string_equal(err2, "bad.csv:7: field 2 \"x\" is not a number");
}

static void test_synthetic_rows(void **state)
{
    (void)state;
    spec_shape sh = {3, {1, 3, 5}}; /* 15 features: draws straddle samples */
    dataset whole, part;
    assert_int_equal(dataset_synthetic(&sh, 40, 7, 99, &whole, err, sizeof err), 0);
    int64_t rows[40];
    uint8_t bytes[40 * 15];
    for (int k = 0; k < N_LISTS; k++) {
        long m = make_list(40, k, rows);
        for (int b = 0; b < 2; b++) {
            data_pick pick = {.rows = rows, .m = m, .bytes = b ? bytes : NULL};
            assert_int_equal(data_synthetic_pick(&sh, 40, 7, 99, &pick, &part, err,
                                                 sizeof err), 0);
            assert_picked(&whole, &part, pick.bytes, rows, m);
            dataset_free(&part);
        }
    }
    dataset_free(&whole);
}

static const char *dirs[1];
static dataset_roots roots = {dirs, 1};

/* dataset_load_rows on the train part (after train_samples and the
 * validation split) equals dataset_load_part's train part at the rows. */
static void test_load_rows_part(void **state)
{
    (void)state;
    dirs[0] = tu_dir;
    char img[512], lab[512];
    assert_int_equal(mkdir(tu_path(tu_dir, "lr"), 0755), 0);
    write_idx("lr/train", 1, 211, img, lab);
    spec_shape in = {3, {1, 28, 28}};
    spec_data d;
    memset(&d, 0, sizeof d);
    d.format = DATA_IDX;
    d.train = "lr/train";
    d.num_classes = 10;
    d.train_samples = 180;
    d.validation_split = 0.15;
    dataset_layout lay;
    assert_int_equal(dataset_layout_of(&d, &in, &roots, &lay, err, sizeof err), 0);
    dataset whole, part;
    assert_int_equal(dataset_load_part(&d, &in, &roots, 7, &lay, DATASET_PART_TRAIN, 0,
                                       lay.n_train, &whole, err, sizeof err), 0);
    int64_t rows[211];
    uint8_t *bytes = malloc(211 * 784);
    assert_non_null(bytes);
    for (int k = 0; k < N_LISTS; k++) {
        long m = make_list(lay.n_train, k, rows);
        for (int b = 0; b < 2; b++) {
            uint8_t *to = b ? bytes : NULL;
            assert_int_equal(dataset_load_rows(&d, &in, &roots, 7, &lay, rows, m, to, &part,
                                               err, sizeof err), 0);
            assert_picked(&whole, &part, to, rows, m);
            dataset_free(&part);
        }
    }
    /* The validation records are not train samples. */
    rows[0] = lay.n_train;
    assert_int_equal(dataset_load_rows(&d, &in, &roots, 7, &lay, rows, 1, NULL, &part, err,
                                       sizeof err), -1);
    assert_non_null(strstr(err, "asked of a set of 153"));
    assert_true(dataset_byte_valued(&d));
    d.format = DATA_CSV;
    assert_false(dataset_byte_valued(&d));
    free(bytes);
    dataset_free(&whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_rows),
        cmocka_unit_test(test_cifar_rows),
        cmocka_unit_test(test_csv_rows),
        cmocka_unit_test(test_synthetic_rows),
        cmocka_unit_test(test_load_rows_part),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
