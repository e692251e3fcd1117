/* test_range.c — the range loaders a distributed run uses: for IDX (plain
 * and gzipped, one or several gzip members, across read-buffer
 * boundaries), CIFAR-10 (across batch files), CSV and synthetic data,
 * records [lo, hi) equal that slice of the whole load, and a broken file
 * fails a range load with the whole load's message even when the damage
 * lies outside the range. Then the sets in parts (dataset_layout_of,
 * dataset_load_part, statistics combined over parts) equal
 * dataset_load_all. */
#include <math.h>
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

/* part equals records [lo, hi) of whole, bit for bit. */
static void assert_slice(const dataset *whole, const dataset *part, long lo, long hi)
{
    assert_int_equal(part->n, hi - lo);
    assert_int_equal(part->features, whole->features);
    assert_int_equal(part->num_classes, whole->num_classes);
    assert_memory_equal(&part->shape, &whole->shape, sizeof whole->shape);
    if (hi > lo) {
        assert_memory_equal(part->x, whole->x + lo * whole->features,
                            (size_t)(hi - lo) * whole->features * sizeof(float));
        assert_memory_equal(part->y, whole->y + lo, (size_t)(hi - lo) * sizeof(int32_t));
    }
}

static const long cuts[][2] = {{0, 0}, {0, 1}, {3, 4}, {0, -1}, {5, -1}, {-1, -1}, {2, 900}};

/* lo/hi from cuts against n records (-1 = n). */
static void cut(long n, int k, long *lo, long *hi)
{
    *lo = cuts[k][0] < 0 ? n : cuts[k][0];
    *hi = cuts[k][1] < 0 ? n : (cuts[k][1] < n ? cuts[k][1] : n - 1);
    if (*lo > *hi)
        *lo = *hi;
}

/* 1,000 28x28 images: 784 kB, several inflate and skip buffers. */
static void test_idx_ranges(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++) {
        char img[512], lab[512];
        tu_write_idx(tu_dir, gz ? "rz" : "rp", gz, 1000, 28, 28, img, lab);
        dataset whole, part;
        assert_int_equal(data_idx_load(img, lab, 10, &whole, err, sizeof err), 0);
        long n;
        assert_int_equal(data_idx_count(img, &n, err, sizeof err), 0);
        assert_int_equal(n, 1000);
        for (int k = 0; k < (int)(sizeof cuts / sizeof cuts[0]); k++) {
            long lo, hi;
            cut(n, k, &lo, &hi);
            assert_int_equal(data_idx_load_range(img, lab, 10, lo, hi, &part, err, sizeof err),
                             0);
            assert_slice(&whole, &part, lo, hi);
            dataset_free(&part);
        }
        /* Three ranks' blocks. */
        for (int r = 0; r < 3; r++) {
            long lo = n * r / 3, hi = n * (r + 1) / 3;
            assert_int_equal(data_idx_load_range(img, lab, 0, lo, hi, &part, err, sizeof err),
                             0);
            assert_slice(&whole, &part, lo, hi);
            dataset_free(&part);
        }
        assert_int_equal(data_idx_load_range(img, lab, 10, 0, n + 1, &part, err, sizeof err), -1);
        dataset_free(&whole);
    }
}

/* Two gzip members (gzip -c a b) read as one file by the stream too. */
static void test_idx_multi_member(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx(tu_dir, "mm", 1, 300, 28, 28, img, lab);
    size_t li;
    unsigned char *bi = tu_idx_images(300, 300, 28, 28, &li);
    tu_write_gz(tu_dir, "mm-a.gz", bi, li / 2);
    tu_write_gz(tu_dir, "mm-b.gz", bi + li / 2, li - li / 2);
    size_t la, lb;
    unsigned char *a = tu_read(tu_path(tu_dir, "mm-a.gz"), &la);
    unsigned char *b = tu_read(tu_path(tu_dir, "mm-b.gz"), &lb);
    unsigned char *both = malloc(la + lb);
    assert_non_null(both);
    memcpy(both, a, la);
    memcpy(both + la, b, lb);
    tu_write(tu_dir, "mm-images-idx3-ubyte.gz", both, la + lb);
    dataset whole, part;
    assert_int_equal(data_idx_load(img, lab, 10, &whole, err, sizeof err), 0);
    assert_int_equal(data_idx_load_range(img, lab, 10, 140, 170, &part, err, sizeof err), 0);
    assert_slice(&whole, &part, 140, 170);
    dataset_free(&part);
    dataset_free(&whole);
    /* Garbage after the last member: the whole load's message. */
    unsigned char *junk = realloc(both, la + lb + 5);
    assert_non_null(junk);
    memcpy(junk + la + lb, "12345", 5);
    tu_write(tu_dir, "mm-images-idx3-ubyte.gz", junk, la + lb + 5);
    assert_int_equal(data_idx_load(img, lab, 10, &whole, err, sizeof err), -1);
    assert_int_equal(data_idx_load_range(img, lab, 10, 0, 10, &part, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    assert_non_null(strstr(err, "stray bytes"));
    free(junk);
    free(a);
    free(b);
    free(bi);
}

/* Every prefix of an images file (plain and gzipped), every byte of a
 * gzipped one altered, every header bit flipped, extra bytes, a bad label
 * far from the range: the range load's outcome is the whole load's. */
static void assert_same_outcome(const char *img, const char *lab, long lo, long hi)
{
    dataset whole, part;
    int rw = data_idx_load(img, lab, 10, &whole, err, sizeof err);
    int rp = data_idx_load_range(img, lab, 10, lo, hi, &part, err2, sizeof err2);
    assert_int_equal(rp, rw);
    if (rw != 0) {
        assert_string_equal(err2, err);
        return;
    }
    assert_slice(&whole, &part, lo, hi);
    dataset_free(&whole);
    dataset_free(&part);
}

static void test_idx_errors_match(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++) {
        char img[512], lab[512];
        const char *prefix = gz ? "ez" : "ep";
        tu_write_idx(tu_dir, prefix, gz, 9, 3, 3, img, lab);
        size_t len;
        unsigned char *b = tu_read(img, &len);
        const char *base = strrchr(img, '/') + 1;
        for (size_t c = 0; c <= len; c++) {
            tu_write(tu_dir, base, b, c);
            assert_same_outcome(img, lab, 2, 4);
        }
        if (gz) {
            /* Alter each byte of the compressed stream. */
            for (size_t i = 10; i < len; i++) {
                b[i] ^= 0x5a;
                tu_write(tu_dir, base, b, len);
                assert_same_outcome(img, lab, 1, 3);
                b[i] ^= 0x5a;
            }
        } else {
            for (size_t i = 0; i < 16; i++)
                for (int bit = 0; bit < 8; bit++) {
                    b[i] ^= (unsigned char)(1 << bit);
                    tu_write(tu_dir, base, b, len);
                    assert_same_outcome(img, lab, 0, 2);
                    b[i] ^= (unsigned char)(1 << bit);
                }
            unsigned char *more = malloc(len + 4);
            assert_non_null(more);
            memcpy(more, b, len);
            memset(more + len, 7, 4);
            tu_write(tu_dir, base, more, len + 4);
            assert_same_outcome(img, lab, 0, 2);
            free(more);
        }
        tu_write(tu_dir, base, b, len);
        free(b);
        /* A label out of range in record 8, outside [0, 2). */
        size_t ll;
        unsigned char *bl = tu_idx_labels(9, 9, 10, &ll);
        bl[8 + 8] = 12;
        const char *lbase = strrchr(lab, '/') + 1;
        if (gz)
            tu_write_gz(tu_dir, lbase, bl, ll);
        else
            tu_write(tu_dir, lbase, bl, ll);
        assert_same_outcome(img, lab, 0, 2);
        assert_non_null(strstr(err2, "record 9 of 9: label 12 out of range [0, 10)"));
        free(bl);
    }
}

static void test_cifar_ranges(void **state)
{
    (void)state;
    tu_cifar_pair c;
    tu_write_cifar_pair(tu_dir, &c);
    dataset whole, part;
    assert_int_equal(data_cifar10_load(c.paths, 2, 10, &whole, err, sizeof err), 0);
    long n;
    assert_int_equal(data_cifar10_count(c.paths, 2, &n, err, sizeof err), 0);
    assert_int_equal(n, 9);
    const long r[][2] = {{0, 9}, {0, 5}, {4, 6}, {5, 9}, {9, 9}, {3, 3}};
    for (int k = 0; k < 6; k++) {
        assert_int_equal(data_cifar10_load_range(c.paths, 2, 10, r[k][0], r[k][1], &part, err,
                                                 sizeof err), 0);
        assert_slice(&whole, &part, r[k][0], r[k][1]);
        dataset_free(&part);
    }
    assert_int_equal(data_cifar10_load_range(c.paths, 2, 10, 0, 10, &part, err, sizeof err),
                     -1);
    /* A bad label in the second file and a truncated second file fail a
     * range of the first file as they fail the whole load. */
    c.second[3073] = 11;
    tu_write_gz(tu_dir, "data_batch_2.bin.gz", c.second, c.second_len);
    dataset_free(&whole);
    for (int cut = 0; cut < 2; cut++) {
        if (cut)
            tu_write_gz(tu_dir, "data_batch_2.bin.gz", c.second, c.second_len - 100);
        assert_int_equal(data_cifar10_load(c.paths, 2, 10, &whole, err, sizeof err), -1);
        assert_int_equal(data_cifar10_load_range(c.paths, 2, 10, 0, 2, &part, err2,
                                                 sizeof err2), -1);
        assert_string_equal(err, err2);
    }
    assert_non_null(strstr(err, "data_batch_2.bin.gz: truncated record 4"));
    tu_cifar_pair_free(&c);
}

static void test_csv_ranges(void **state)
{
    (void)state;
    char p[512];
    strcpy(p, tu_write(tu_dir, "r.csv", tu_csv_messy, strlen(tu_csv_messy)));
    dataset whole, part;
    assert_int_equal(data_csv_load(p, 0, true, 0, 0, &whole, err, sizeof err), 0);
    long n;
    assert_int_equal(data_csv_count(p, true, &n, err, sizeof err), 0);
    assert_int_equal(n, 5);
    assert_int_equal(whole.n, 5);
    for (long lo = 0; lo <= n; lo++)
        for (long hi = lo; hi <= n; hi++) {
            assert_int_equal(data_csv_load_range(p, 0, true, 0, 0, lo, hi, &part, err,
                                                 sizeof err), 0);
            assert_slice(&whole, &part, lo, hi);
            dataset_free(&part);
        }
    assert_int_equal(data_csv_load_range(p, 0, true, 0, 0, 0, 6, &part, err, sizeof err), -1);
    dataset_free(&whole);
    /* A bad field on line 7 fails a range of the first rows. */
    strcpy(p, tu_write(tu_dir, "bad.csv", tu_csv_bad_line7, strlen(tu_csv_bad_line7)));
    assert_int_equal(data_csv_load(p, 0, true, 3, 2, &whole, err, sizeof err), -1);
    assert_int_equal(data_csv_load_range(p, 0, true, 3, 2, 0, 2, &part, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    assert_string_equal(err, "bad.csv:7: column 1 \"x\" is not a number");
}

static void test_synthetic_ranges(void **state)
{
    (void)state;
    spec_shape sh = {3, {1, 3, 5}};  /* 15 features: draws straddle samples */
    dataset whole, part;
    assert_int_equal(dataset_synthetic(&sh, 40, 7, 99, &whole, err, sizeof err), 0);
    for (long lo = 0; lo <= 40; lo += 3)
        for (long hi = lo; hi <= 40; hi += 5) {
            assert_int_equal(data_synthetic_range(&sh, 40, 7, 99, lo, hi, &part, err,
                                                  sizeof err), 0);
            assert_slice(&whole, &part, lo, hi);
            dataset_free(&part);
        }
    dataset_free(&whole);
}

/* ---- the sets in parts against dataset_load_all ------------------------- */

static const char *dirs[1];
static dataset_roots roots = {dirs, 1};

/* Parts [0, n*k/P) ... of each set, statistics combined as a distributed
 * run combines them, against the whole load. */
static void check_parts(const spec_data *d, const spec_shape *in, int P, double tol)
{
    dataset tr, va, te;
    assert_int_equal(dataset_load_all(d, in, &roots, 7, &tr, &va, &te, err, sizeof err), 0);
    dataset_layout lay;
    assert_int_equal(dataset_layout_of(d, in, &roots, &lay, err, sizeof err), 0);
    assert_int_equal(lay.n_train, tr.n);
    assert_int_equal(lay.n_val, va.n);
    assert_int_equal(lay.n_test, te.n);
    long f = tr.features;
    double *sum = calloc((size_t)f, sizeof *sum), *m2 = calloc((size_t)f, sizeof *m2);
    assert_non_null(sum);
    assert_non_null(m2);
    dataset *tp = calloc((size_t)P, sizeof *tp);
    assert_non_null(tp);
    float max_abs = 0;
    for (int r = 0; r < P; r++) {
        long lo = lay.n_train * r / P, hi = lay.n_train * (r + 1) / P;
        assert_int_equal(dataset_load_part(d, in, &roots, 7, &lay, DATASET_PART_TRAIN, lo, hi,
                                           &tp[r], err, sizeof err), 0);
        dataset_stats_sum(&tp[r], sum);
        max_abs = fmaxf(max_abs, dataset_stats_max_abs(&tp[r]));
    }
    for (long j = 0; j < f; j++)
        sum[j] /= (double)lay.n_train;
    for (int r = 0; r < P; r++)
        dataset_stats_m2(&tp[r], sum, m2);
    dataset_scaling_stats st = {.n = (double)lay.n_train, .mean = sum, .m2 = m2,
                                .max_abs = max_abs};
    for (int r = 0; r < P; r++) {
        long lo = lay.n_train * r / P, hi = lay.n_train * (r + 1) / P;
        dataset v, t;
        long vlo = lay.n_val * r / P, vhi = lay.n_val * (r + 1) / P;
        long tlo = lay.n_test * r / P, thi = lay.n_test * (r + 1) / P;
        assert_int_equal(dataset_load_part(d, in, &roots, 7, &lay, DATASET_PART_VAL, vlo, vhi,
                                           &v, err, sizeof err), 0);
        assert_int_equal(dataset_load_part(d, in, &roots, 7, &lay, DATASET_PART_TEST, tlo, thi,
                                           &t, err, sizeof err), 0);
        assert_int_equal(dataset_apply_scaling(d, &st, &tp[r], &v, &t, err, sizeof err), 0);
        const dataset *pairs[3][2] = {{&tr, &tp[r]}, {&va, &v}, {&te, &t}};
        const long range[3][2] = {{lo, hi}, {vlo, vhi}, {tlo, thi}};
        for (int s = 0; s < 3; s++) {
            const dataset *w = pairs[s][0], *p = pairs[s][1];
            assert_int_equal(p->n, range[s][1] - range[s][0]);
            for (long i = 0; i < p->n * f; i++)
                assert_true(fabsf(p->x[i] - w->x[range[s][0] * f + i]) <= tol);
            if (p->n)
                assert_memory_equal(p->y, w->y + range[s][0], (size_t)p->n * sizeof(int32_t));
        }
        if (tr.shift) {
            for (long j = 0; j < f; j++) {
                assert_true(fabsf(tp[r].shift[j] - tr.shift[j]) <= tol);
                assert_true(fabsf(tp[r].factor[j] - tr.factor[j]) <= tol * fabsf(tr.factor[j]));
            }
        }
        dataset_free(&v);
        dataset_free(&t);
        dataset_free(&tp[r]);
    }
    free(tp);
    free(sum);
    free(m2);
    dataset_free(&tr);
    dataset_free(&va);
    dataset_free(&te);
}

static void test_parts_equal_load_all(void **state)
{
    (void)state;
    dirs[0] = tu_dir;
    char img[512], lab[512];
    assert_int_equal(mkdir(tu_path(tu_dir, "pf"), 0755), 0);
    tu_write_idx(tu_dir, "pf/train", 1, 211, 4, 5, img, lab);
    tu_write_idx(tu_dir, "pf/t10k", 0, 50, 4, 5, img, lab);
    spec_shape in = {3, {1, 4, 5}};
    spec_data d = {.format = DATA_IDX, .train = "pf/train", .test = "pf/t10k", .num_classes = 10,
                   .train_samples = 180, .test_samples = 41, .validation_split = 0.15,
                   .scaling = SCALE_UNIT};
    for (int P = 1; P <= 4; P++)
        check_parts(&d, &in, P, 0.0f);
    d.scaling = SCALE_STANDARD;
    for (int P = 1; P <= 4; P++)
        check_parts(&d, &in, P, P == 1 ? 0.0f : 1e-5f);
    d.scaling = SCALE_NONE;
    check_parts(&d, &in, 3, 0.0f);

    const char csv[] = "y,a,b\n1,1,-20\n2,4,5\n0,0,0\n1,2,2\n0,3,3\n";
    tu_write(tu_dir, "pc.csv", csv, sizeof csv - 1);
    spec_data c = {.format = DATA_CSV, .train = "pc", .header = true, .num_classes = 3,
                   .validation_split = 0.2, .scaling = SCALE_UNIT};
    spec_shape in2 = {1, {2}};
    for (int P = 1; P <= 3; P++)
        check_parts(&c, &in2, P, 0.0f);

    spec_data s = {.format = DATA_SYNTHETIC, .synthetic_train = 64, .synthetic_test = 16,
                   .num_classes = 4, .validation_split = 0.25, .scaling = SCALE_STANDARD};
    spec_shape in3 = {1, {6}};
    for (int P = 1; P <= 3; P++)
        check_parts(&s, &in3, P, P == 1 ? 0.0f : 1e-5f);

    /* Layout errors are the whole load's. */
    d.train_samples = 500;
    dataset_layout lay;
    dataset tr, va, te;
    assert_int_equal(dataset_load_all(&d, &in, &roots, 7, &tr, &va, &te, err, sizeof err), -1);
    assert_int_equal(dataset_layout_of(&d, &in, &roots, &lay, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    /* Samples asked of an empty test set: refused by both, as one. */
    d.train_samples = 0;
    d.test = "pf/none";
    tu_write_idx(tu_dir, d.test, 0, 0, 4, 5, NULL, NULL);
    assert_int_equal(dataset_load_all(&d, &in, &roots, 7, &tr, &va, &te, err, sizeof err), -1);
    assert_int_equal(dataset_layout_of(&d, &in, &roots, &lay, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
    assert_string_equal(err, "data.test_samples: 41 requested but \"pf/none\" has 0 samples");
    d.test = "pf/t10k";
    /* A shape that does not fit model.input is refused by each part. */
    spec_shape wrong = {3, {1, 5, 4}};
    assert_int_equal(dataset_load_all(&d, &wrong, &roots, 7, &tr, &va, &te, err, sizeof err), -1);
    assert_int_equal(dataset_layout_of(&d, &wrong, &roots, &lay, err2, sizeof err2), 0);
    dataset part;
    assert_int_equal(dataset_load_part(&d, &wrong, &roots, 7, &lay, DATASET_PART_TRAIN, 0, 3,
                                       &part, err2, sizeof err2), -1);
    assert_string_equal(err, err2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_ranges),
        cmocka_unit_test(test_idx_multi_member),
        cmocka_unit_test(test_idx_errors_match),
        cmocka_unit_test(test_cifar_ranges),
        cmocka_unit_test(test_csv_ranges),
        cmocka_unit_test(test_synthetic_ranges),
        cmocka_unit_test(test_parts_equal_load_all),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
