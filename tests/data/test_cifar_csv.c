/* test_cifar_csv.c — the CIFAR-10 binary and CSV loaders on small
 * generated files, and their bad-data messages (FILE:LINE for CSV, FILE and
 * record for CIFAR-10). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/data_internal.h"
#include "data/dataset.h"
#include "data_test_util.h"

static char err[512];

/* n CIFAR records: label (first + i) % 10, pixel k of record i = (i + k) % 256. */
static unsigned char *cifar_records(int n, int first, size_t *len)
{
    *len = (size_t)n * 3073;
    unsigned char *b = malloc(*len);
    assert_non_null(b);
    for (int i = 0; i < n; i++) {
        b[i * 3073] = (unsigned char)((first + i) % 10);
        for (int k = 0; k < 3072; k++)
            b[i * 3073 + 1 + k] = (unsigned char)((i + k) % 256);
    }
    return b;
}

static void test_cifar_batches(void **state)
{
    (void)state;
    size_t l1, l2;
    unsigned char *b1 = cifar_records(3, 0, &l1), *b2 = cifar_records(2, 3, &l2);
    char p1[512], p2[512];
    strcpy(p1, tu_write(tu_dir, "data_batch_1.bin", b1, l1));
    strcpy(p2, tu_write_gz(tu_dir, "data_batch_2.bin.gz", b2, l2));
    const char *paths[2] = {p1, p2};
    dataset d;
    assert_int_equal(dataset_load_cifar10(paths, 2, &d, err, sizeof err), 0);
    assert_int_equal(d.n, 5);
    assert_int_equal(d.features, 3072);
    assert_int_equal(d.shape.rank, 3);
    assert_int_equal(d.shape.dim[0], 3);
    assert_int_equal(d.shape.dim[1], 32);
    for (int i = 0; i < 5; i++) {
        int local = i < 3 ? i : i - 3;
        assert_int_equal(d.y[i], i % 10);
        /* CHW as stored: red plane first; pixel 1024 is green (0, 0). */
        assert_true(d.x[(size_t)i * 3072 + 0] == (float)(local % 256));
        assert_true(d.x[(size_t)i * 3072 + 1024] == (float)((local + 1024) % 256));
        assert_true(d.x[(size_t)i * 3072 + 3071] == (float)((local + 3071) % 256));
    }
    dataset_free(&d);
    free(b1);
    free(b2);
}

static void test_cifar_bad(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = cifar_records(4, 0, &len);
    const char *p = tu_write(tu_dir, "data_batch_3.bin", b, len - 1000);
    const char *paths[1] = {p};
    dataset d;
    assert_int_equal(dataset_load_cifar10(paths, 1, &d, err, sizeof err), -1);
    assert_string_equal(err, "data_batch_3.bin: truncated record 4 (2,073 of 3,073 bytes)");
    b[2 * 3073] = 12;
    p = tu_write(tu_dir, "data_batch_4.bin", b, len);
    paths[0] = p;
    assert_int_equal(data_cifar10_load(paths, 1, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "data_batch_4.bin: record 3 of 4: label 12 out of range [0, 10)");
    p = tu_write(tu_dir, "data_batch_5.bin", "", 0);
    paths[0] = p;
    assert_int_equal(dataset_load_cifar10(paths, 1, &d, err, sizeof err), -1);
    assert_string_equal(err, "data_batch_5.bin: empty file");
    free(b);
}

static void test_csv_ok(void **state)
{
    (void)state;
    const char text[] = "label,a,b,c\r\n"
                        "3, 1.5,2,-4e1\r\n"
                        "\n"
                        "0,0,0,0.25\r\n"
                        "9,7,8,9";
    const char *p = tu_write(tu_dir, "ok.csv", text, sizeof text - 1);
    dataset d;
    assert_int_equal(dataset_load_csv(p, 0, true, 10, &d, err, sizeof err), 0);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.features, 3);
    assert_int_equal(d.shape.rank, 1);
    assert_int_equal(d.shape.dim[0], 3);
    assert_int_equal(d.y[0], 3);
    assert_int_equal(d.y[1], 0);
    assert_int_equal(d.y[2], 9);
    const float want[9] = {1.5f, 2, -40, 0, 0, 0.25f, 7, 8, 9};
    for (int i = 0; i < 9; i++)
        assert_true(d.x[i] == want[i]);
    dataset_free(&d);

    /* Label in the last column, gzipped, no header. */
    const char text2[] = "1,2,3\n4,5,6\n";
    p = tu_write_gz(tu_dir, "last.csv.gz", text2, sizeof text2 - 1);
    assert_int_equal(dataset_load_csv(p, 2, false, 10, &d, err, sizeof err), 0);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.y[0], 3);
    assert_int_equal(d.y[1], 6);
    assert_true(d.x[2] == 4 && d.x[3] == 5);
    dataset_free(&d);
}

/* The example: line 17 one feature short of 784. */
static void test_csv_short_row(void **state)
{
    (void)state;
    size_t cap = 40 * 784 * 4 + 64, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, "label");
    for (int k = 0; k < 784; k++)
        len += (size_t)snprintf(text + len, cap - len, ",px%d", k);
    len += (size_t)snprintf(text + len, cap - len, "\n");
    for (int line = 2; line <= 30; line++) {
        len += (size_t)snprintf(text + len, cap - len, "%d", line % 10);
        for (int k = 0; k < (line == 17 ? 783 : 784); k++)
            len += (size_t)snprintf(text + len, cap - len, ",%d", (line + k) % 256);
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    const char *p = tu_write(tu_dir, "data.csv", text, len);
    dataset d;
    assert_int_equal(dataset_load_csv(p, 0, true, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "data.csv:17: 783 features, expected 784");
    assert_null(d.x);
    /* With the expected count given, even the first row is checked. */
    assert_int_equal(data_csv_load(p, 0, true, 10, 785, &d, err, sizeof err), -1);
    assert_string_equal(err, "data.csv:2: 784 features, expected 785");
    free(text);
}

static void test_csv_bad_fields(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"1,2,3\n1,abc,3\n", "bad.csv:2: column 1 \"abc\" is not a number"},
        {"1,2,3\n1,,3\n", "bad.csv:2: column 1 \"\" is not a number"},
        {"1,2,nan\n", "bad.csv:1: column 2 \"nan\" is not a number"},
        {"1,2,1e999\n", "bad.csv:1: column 2 \"1e999\" is not a number"},
        {"1,2,3\n1,2,3 4\n", "bad.csv:2: column 2 \"3 4\" is not a number"},
        {"x,2,3\n", "bad.csv:1: label (column 0) \"x\" is not a number: class labels are "
                    "integers 0, 1, ... (map class names to numbers first)"},
        {"1.5,2,3\n", "bad.csv:1: label (column 0) 1.5 is not an integer class (a regression "
                      "target needs training.loss \"mse\")"},
        {"1,2,3\n10,2,3\n", "bad.csv:2: label 10 out of range [0, 10)"},
        {"-1,2,3\n", "bad.csv:1: label -1 out of range [0, 10)"},
        {"1,2,3\n4,5,6,7\n", "bad.csv:2: 3 features, expected 2"},
        {"a,b,c\n", "bad.csv:1: label (column 0) \"a\" is not a number: class labels are "
                    "integers 0, 1, ... (map class names to numbers first)"},
        {"\n\n  \n", "bad.csv: no data rows"},
        {"1,2\0,3\n", "bad.csv:1: NUL byte (binary file?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].text);
        if (strstr(cases[i].msg, "NUL"))
            len = 7;
        const char *p = tu_write(tu_dir, "bad.csv", cases[i].text, len);
        dataset d;
        assert_int_equal(dataset_load_csv(p, 0, false, 10, &d, err, sizeof err), -1);
        assert_string_equal(err, cases[i].msg);
    }
    const char *p = tu_write(tu_dir, "empty.csv", "", 0);
    dataset d;
    assert_int_equal(dataset_load_csv(p, 0, false, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "empty.csv: empty file");
    p = tu_write(tu_dir, "hdr.csv", "label,x\n", 8);
    assert_int_equal(dataset_load_csv(p, 0, true, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "hdr.csv: no data rows");
    p = tu_write(tu_dir, "col.csv", "1,2\n", 4);
    assert_int_equal(dataset_load_csv(p, 5, false, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "col.csv:1: no column 5 for data.label_column (the line has columns "
                             "0 to 1)");
}

/* Issue 31 #5: a float label column under mse is a regression target; a
 * header is recognised as uploads recognise it; label_column -1 is the
 * last column. */
static void test_csv_regression_header(void **state)
{
    (void)state;
    const char text[] = "price,rooms,area\n2.5,1,2\n\n-0.75,3,4\n";
    const char *p = tu_write(tu_dir, "reg.csv", text, sizeof text - 1);
    dataset d;
    assert_int_equal(data_csv_load_pick(p, 0, SPEC_HEADER_AUTO, 1, true, 0, NULL, &d, err,
                                        sizeof err), 0);
    assert_int_equal(d.n, 2);
    assert_non_null(d.t);
    assert_true(d.t[0] == 2.5f && d.t[1] == -0.75f);
    assert_true(d.x[0] == 1 && d.x[1] == 2 && d.x[2] == 3 && d.x[3] == 4);
    dataset_free(&d);
    long n = 0;
    assert_int_equal(data_csv_count(p, SPEC_HEADER_AUTO, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    /* Said to be data, the header is an error naming its column. */
    assert_int_equal(data_csv_load_pick(p, 0, SPEC_HEADER_NO, 1, true, 0, NULL, &d, err,
                                        sizeof err), -1);
    assert_string_equal(err, "reg.csv:1: column 0 \"price\" is not a number");
    /* One target column: num_classes 1. */
    assert_int_equal(data_csv_load_pick(p, 0, SPEC_HEADER_AUTO, 3, true, 0, NULL, &d, err,
                                        sizeof err), -1);
    assert_non_null(strstr(err, "data.num_classes must be 1, not 3"));
    /* auto: an all-number first line is data. */
    const char plain[] = "1,2,3\n4,5,6\n";
    p = tu_write(tu_dir, "plain.csv", plain, sizeof plain - 1);
    assert_int_equal(data_csv_load(p, -1, SPEC_HEADER_AUTO, 10, 0, &d, err, sizeof err), 0);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.y[0], 3);
    assert_int_equal(d.y[1], 6);
    assert_true(d.x[0] == 1 && d.x[1] == 2 && d.x[2] == 4 && d.x[3] == 5);
    dataset_free(&d);
    assert_int_equal(data_csv_count(p, SPEC_HEADER_AUTO, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
}

static void test_csv_corrupt_gzip(void **state)
{
    (void)state;
    char text[4000];
    size_t len = 0;
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%d,%d\n", i % 10, i, i * 3);
    const char *p = tu_write_gz(tu_dir, "z.csv.gz", text, len);
    size_t glen;
    unsigned char *g = tu_read(p, &glen);
    tu_write(tu_dir, "z.csv.gz", g, glen / 2);
    dataset d;
    assert_int_equal(dataset_load_csv(p, 0, false, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "z.csv.gz: corrupt gzip data (stream ends before its trailer)");
    g[12] ^= 0xff;
    g[13] ^= 0xff;
    tu_write(tu_dir, "z.csv.gz", g, glen);
    assert_int_equal(dataset_load_csv(p, 0, false, 10, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "z.csv.gz: corrupt gzip data ("));
    free(g);
}

/* Random short texts over a CSV-ish alphabet: each loads cleanly or fails
 * with a FILE-prefixed message; what loads has labels in range. */
static void test_csv_random(void **state)
{
    (void)state;
    static const char alphabet[] = "0123456789,,,,..-e \n\n\r\tx+";
    unsigned long long r = 88172645463325252ULL;
    char text[64];
    for (int iter = 0; iter < 3000; iter++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        size_t len = r % sizeof text;
        for (size_t i = 0; i < len; i++) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            text[i] = alphabet[r % (sizeof alphabet - 1)];
        }
        const char *p = tu_write(tu_dir, "rnd.csv", text, len);
        dataset d;
        if (dataset_load_csv(p, 0, iter % 2, 10, &d, err, sizeof err) == 0) {
            assert_true(d.n > 0);
            for (long i = 0; i < d.n; i++)
                assert_in_range(d.y[i], 0, 9);
            dataset_free(&d);
        } else {
            assert_true(strncmp(err, "rnd.csv", 7) == 0);
            assert_null(d.x);
        }
    }
}

static void test_synthetic(void **state)
{
    (void)state;
    spec_shape s = {3, {2, 3, 4}};
    dataset a, b, c;
    assert_int_equal(dataset_synthetic(&s, 50, 7, 42, &a, err, sizeof err), 0);
    assert_int_equal(dataset_synthetic(&s, 50, 7, 42, &b, err, sizeof err), 0);
    assert_int_equal(dataset_synthetic(&s, 50, 7, 43, &c, err, sizeof err), 0);
    assert_int_equal(a.features, 24);
    assert_int_equal(a.shape.dim[2], 4);
    assert_memory_equal(a.x, b.x, 50 * 24 * sizeof(float));
    assert_memory_equal(a.y, b.y, 50 * sizeof(int32_t));
    assert_memory_not_equal(a.x, c.x, 50 * 24 * sizeof(float));
    int seen[7] = {0};
    for (int i = 0; i < 50; i++) {
        assert_in_range(a.y[i], 0, 6);
        seen[a.y[i]]++;
    }
    for (int k = 0; k < 7; k++)
        assert_true(seen[k] > 0);
    for (int i = 0; i < 50 * 24; i++)
        assert_true(a.x[i] >= 0 && a.x[i] <= 255 && a.x[i] == (float)(int)a.x[i]);
    dataset_free(&a);
    dataset_free(&b);
    dataset_free(&c);
    assert_int_equal(dataset_synthetic(&s, 0, 7, 42, &a, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cifar_batches),
        cmocka_unit_test(test_cifar_bad),
        cmocka_unit_test(test_csv_ok),
        cmocka_unit_test(test_csv_short_row),
        cmocka_unit_test(test_csv_bad_fields),
        cmocka_unit_test(test_csv_regression_header),
        cmocka_unit_test(test_csv_corrupt_gzip),
        cmocka_unit_test(test_csv_random),
        cmocka_unit_test(test_synthetic),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
