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

/* Reads the records of pick into out, with ctx the test's own. */
typedef int (*pick_loader)(const void *ctx, const data_pick *pick, dataset *out);

/* For every list of make_list against whole's records, as floats and (byte
 * data) as bytes: load picks exactly those records of whole. */
static void check_lists(const dataset *whole, bool byte_data, pick_loader load, const void *ctx)
{
    long n = whole->n;
    int64_t *rows = malloc((size_t)n * sizeof *rows + 1);
    uint8_t *bytes = malloc((size_t)n * (size_t)whole->features + 1);
    assert_non_null(rows);
    assert_non_null(bytes);
    for (int k = 0; k < N_LISTS; k++) {
        long m = make_list(n, k, rows);
        for (int b = 0; b < (byte_data ? 2 : 1); b++) {
            data_pick pick = {.rows = rows, .m = m, .bytes = b ? bytes : NULL};
            dataset part;
            assert_int_equal(load(ctx, &pick, &part), 0);
            assert_picked(whole, &part, pick.bytes, rows, m);
            dataset_free(&part);
        }
    }
    free(rows);
    free(bytes);
}

typedef struct idx_files {
    char img[512], lab[512];
} idx_files;

static int load_idx_pick(const void *ctx, const data_pick *pick, dataset *out)
{
    const idx_files *f = ctx;
    return data_idx_load_pick(f->img, f->lab, 10, pick, out, err, sizeof err);
}

/* 1,000 28x28 images: several inflate and skip buffers between records. */
static void test_idx_rows(void **state)
{
    (void)state;
    int64_t rows[2];
    for (int gz = 0; gz < 2; gz++) {
        idx_files f;
        tu_write_idx(tu_dir, gz ? "wz" : "wp", gz, 1000, 28, 28, f.img, f.lab);
        dataset whole, part;
        assert_int_equal(data_idx_load(f.img, f.lab, 10, &whole, err, sizeof err), 0);
        check_lists(&whole, true, load_idx_pick, &f);
        /* Past the end; not ascending. */
        rows[0] = 3;
        rows[1] = 1000;
        data_pick pick = {.rows = rows, .m = 2};
        assert_int_equal(load_idx_pick(&f, &pick, &part), -1);
        assert_non_null(strstr(err, "record 1000 asked of 1,000 images"));
        rows[1] = 3;
        assert_int_equal(load_idx_pick(&f, &pick, &part), -1);
        assert_non_null(strstr(err, "not ascending at entry 1"));
        dataset_free(&whole);
    }
    /* A truncated gzipped images file fails a list of early records with
     * the whole load's message, naming the file and the record count. */
    size_t li;
    unsigned char *bi = tu_idx_images(300, 300, 28, 28, &li);
    char img[512], lab[512];
    tu_write_idx(tu_dir, "wt", 1, 300, 28, 28, img, lab);
    tu_write_gz(tu_dir, "wt-images-idx3-ubyte.gz", bi, li - 784 * 10);
    dataset whole, part;
    assert_int_equal(data_idx_load(img, lab, 10, &whole, err, sizeof err), -1);
    rows[0] = 2;
    rows[1] = 7;
    uint8_t bytes[2 * 784];
    data_pick pick = {.rows = rows, .m = 2, .bytes = bytes};
    assert_int_equal(data_idx_load_pick(img, lab, 10, &pick, &part, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    assert_non_null(strstr(err, "wt-images-idx3-ubyte.gz: truncated after 290 of 300 images"));
    free(bi);
}

static int load_cifar_pick(const void *ctx, const data_pick *pick, dataset *out)
{
    const tu_cifar_pair *c = ctx;
    return data_cifar10_load_pick(c->paths, 2, 10, pick, out, err, sizeof err);
}

static void test_cifar_rows(void **state)
{
    (void)state;
    tu_cifar_pair c;
    tu_write_cifar_pair(tu_dir, &c);
    dataset whole, part;
    assert_int_equal(data_cifar10_load(c.paths, 2, 10, &whole, err, sizeof err), 0);
    check_lists(&whole, true, load_cifar_pick, &c);
    int64_t rows[1] = {9};
    data_pick pick = {.rows = rows, .m = 1};
    assert_int_equal(load_cifar_pick(&c, &pick, &part), -1);
    assert_string_equal(err, "CIFAR-10: record 9 asked of 9");
    /* A bad label in the second file fails a list of the first file's. */
    c.second[3073] = 11;
    tu_write_gz(tu_dir, "data_batch_2.bin.gz", c.second, c.second_len);
    dataset_free(&whole);
    assert_int_equal(data_cifar10_load(c.paths, 2, 10, &whole, err, sizeof err), -1);
    rows[0] = 1;
    assert_int_equal(data_cifar10_load_pick(c.paths, 2, 10, &pick, &part, err2, sizeof err2),
                     -1);
    assert_string_equal(err, err2);
    tu_cifar_pair_free(&c);
}

static int load_csv_pick(const void *ctx, const data_pick *pick, dataset *out)
{
    return data_csv_load_pick(ctx, 0, true, 0, false, 0, pick, out, err, sizeof err);
}

static void test_csv_rows(void **state)
{
    (void)state;
    char p[512];
    strcpy(p, tu_write(tu_dir, "r.csv", tu_csv_messy, strlen(tu_csv_messy)));
    dataset whole, part;
    assert_int_equal(data_csv_load(p, 0, true, 0, 0, &whole, err, sizeof err), 0);
    check_lists(&whole, false, load_csv_pick, p);
    int64_t rows[1] = {0};
    uint8_t bytes[8];
    data_pick pick = {.rows = rows, .m = 1, .bytes = bytes};
    assert_int_equal(load_csv_pick(p, &pick, &part), -1);
    assert_string_equal(err, "r.csv: CSV values are not bytes");
    dataset_free(&whole);
    /* A bad field on line 7 fails a list of the first rows. */
    strcpy(p, tu_write(tu_dir, "bad.csv", tu_csv_bad_line7, strlen(tu_csv_bad_line7)));
    rows[0] = 1;
    pick.bytes = NULL;
    assert_int_equal(data_csv_load_pick(p, 0, true, 3, false, 2, &pick, &part, err2, sizeof err2), -1);
    assert_string_equal(err2, "bad.csv:7: column 1 \"x\" is not a number");
}

static int load_synthetic_pick(const void *ctx, const data_pick *pick, dataset *out)
{
    return data_synthetic_pick(ctx, 40, 7, 99, pick, out, err, sizeof err);
}

static void test_synthetic_rows(void **state)
{
    (void)state;
    spec_shape sh = {3, {1, 3, 5}}; /* 15 features: draws straddle samples */
    dataset whole;
    assert_int_equal(dataset_synthetic(&sh, 40, 7, 99, &whole, err, sizeof err), 0);
    check_lists(&whole, true, load_synthetic_pick, &sh);
    dataset_free(&whole);
}

static const char *dirs[1];
static dataset_roots roots = {dirs, 1};

typedef struct rows_ctx {
    const spec_data *d;
    const spec_shape *in;
    const dataset_layout *lay;
} rows_ctx;

static int load_rows(const void *ctx, const data_pick *pick, dataset *out)
{
    const rows_ctx *c = ctx;
    return dataset_load_rows(c->d, c->in, &roots, 7, c->lay, pick->rows, pick->m, pick->bytes,
                             out, err, sizeof err);
}

/* dataset_load_rows on the train part (after train_samples and the
 * validation split) equals dataset_load_part's train part at the rows. */
static void test_load_rows_part(void **state)
{
    (void)state;
    dirs[0] = tu_dir;
    assert_int_equal(mkdir(tu_path(tu_dir, "lr"), 0755), 0);
    tu_write_idx(tu_dir, "lr/train", 1, 211, 28, 28, NULL, NULL);
    spec_shape in = {3, {1, 28, 28}};
    spec_data d = {.format = DATA_IDX, .train = "lr/train", .num_classes = 10,
                   .train_samples = 180, .validation_split = 0.15};
    dataset_layout lay;
    assert_int_equal(dataset_layout_of(&d, &in, &roots, &lay, err, sizeof err), 0);
    dataset whole, part;
    assert_int_equal(dataset_load_part(&d, &in, &roots, 7, &lay, DATASET_PART_TRAIN, 0,
                                       lay.n_train, &whole, err, sizeof err), 0);
    rows_ctx c = {&d, &in, &lay};
    check_lists(&whole, true, load_rows, &c);
    /* The validation records are not train samples. */
    int64_t rows[1] = {lay.n_train};
    data_pick pick = {.rows = rows, .m = 1};
    assert_int_equal(load_rows(&c, &pick, &part), -1);
    assert_non_null(strstr(err, "asked of a set of 153"));
    assert_true(dataset_byte_valued(&d));
    d.format = DATA_CSV;
    assert_false(dataset_byte_valued(&d));
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
