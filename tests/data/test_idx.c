/* test_idx.c — the IDX loader on small generated files, plain and gzipped,
 * and every way an IDX pair can be broken: truncated, wrong magic, count
 * mismatch, label out of range, trailing bytes, empty, corrupt gzip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/data_internal.h"
#include "data/dataset.h"
#include "data_test_util.h"

static char err[512];

static void check_contents(const dataset *d, long n, int rows, int cols)
{
    assert_int_equal(d->n, n);
    assert_int_equal(d->features, rows * cols);
    assert_int_equal(d->shape.rank, 3);
    assert_int_equal(d->shape.dim[0], 1);
    assert_int_equal(d->shape.dim[1], rows);
    assert_int_equal(d->shape.dim[2], cols);
    for (long i = 0; i < n; i++) {
        assert_int_equal(d->y[i], i % 10);
        for (long k = 0; k < d->features; k++)
            assert_true(d->x[i * d->features + k] == (float)((i * 7 + k) % 256));
    }
}

static void test_plain_and_gz(void **state)
{
    (void)state;
    char img[512], lab[512];
    for (int gz = 0; gz < 2; gz++) {
        tu_write_idx_pair(tu_dir, gz ? "g" : "p", gz, 23, 23, 4, 3, 23, 23, 10, img, lab);
        dataset d;
        assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), 0);
        check_contents(&d, 23, 4, 3);
        assert_int_equal(d.num_classes, 10);
        dataset_free(&d);
        /* The labels file name is derived when not given. */
        assert_int_equal(dataset_load_idx(img, NULL, &d, err, sizeof err), 0);
        check_contents(&d, 23, 4, 3);
        dataset_free(&d);
    }
}

/* Concatenated gzip members are one stream (gzip -c a b > c). */
static void test_multi_member_gzip(void **state)
{
    (void)state;
    size_t li, ll;
    unsigned char *bi = tu_idx_images(9, 9, 2, 2, &li);
    unsigned char *bl = tu_idx_labels(9, 9, 10, &ll);
    tu_write_gz(tu_dir, "m1.gz", bi, 20);
    tu_write_gz(tu_dir, "m2.gz", bi + 20, li - 20);
    size_t a, b;
    unsigned char *pa = tu_read(tu_path(tu_dir, "m1.gz"), &a);
    unsigned char *pb = tu_read(tu_path(tu_dir, "m2.gz"), &b);
    unsigned char *cat = malloc(a + b);
    memcpy(cat, pa, a);
    memcpy(cat + a, pb, b);
    char img[512], lab[512];
    strcpy(img, tu_write(tu_dir, "mm-images-idx3-ubyte.gz", cat, a + b));
    strcpy(lab, tu_write(tu_dir, "mm-labels-idx1-ubyte", bl, ll));
    dataset d;
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), 0);
    check_contents(&d, 9, 2, 2);
    dataset_free(&d);
    free(pa);
    free(pb);
    free(cat);
    free(bi);
    free(bl);
}

/* The issue's own example, byte for byte: 1x1 images, 59,872 of 60,000. */
static void test_truncated_images(void **state)
{
    (void)state;
    char img[512], lab[512];
    for (int gz = 0; gz < 2; gz++) {
        tu_write_idx_pair(tu_dir, "train", gz, 60000, 59872, 1, 1, 60000, 60000, 10, img, lab);
        dataset d;
        assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
        assert_string_equal(err, gz ? "train-images-idx3-ubyte.gz: truncated after 59,872 of "
                                      "60,000 images"
                                    : "train-images-idx3-ubyte: truncated after 59,872 of "
                                      "60,000 images");
        assert_null(d.x);
    }
}

static void test_truncated_labels(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "tl", 0, 12, 12, 2, 2, 12, 5, 10, img, lab);
    dataset d;
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "tl-labels-idx1-ubyte: truncated after 5 of 12 labels");
}

/* A gzip file cut short mid-stream: the images it does hold are counted. */
static void test_truncated_gzip_stream(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "cut", 1, 2000, 2000, 8, 8, 2000, 2000, 10, img, lab);
    size_t len;
    unsigned char *b = tu_read(img, &len);
    tu_write(tu_dir, "cut-images-idx3-ubyte.gz", b, len / 2);
    free(b);
    dataset d;
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "cut-images-idx3-ubyte.gz: truncated after "));
    assert_non_null(strstr(err, " of 2,000 images"));
    /* Cut in the 8-byte trailer only: all data is there, the stream is not. */
    tu_write_idx_pair(tu_dir, "cut2", 1, 20, 20, 8, 8, 20, 20, 10, img, lab);
    b = tu_read(img, &len);
    tu_write(tu_dir, "cut2-images-idx3-ubyte.gz", b, len - 3);
    free(b);
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "cut2-images-idx3-ubyte.gz: corrupt gzip data (stream ends "
                             "before its trailer)");
}

static void test_wrong_magic(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "wm", 0, 3, 3, 2, 2, 3, 3, 10, img, lab);
    dataset d;
    /* Labels given where images are expected, and the other way round. */
    assert_int_equal(dataset_load_idx(lab, img, &d, err, sizeof err), -1);
    assert_string_equal(err, "wm-labels-idx1-ubyte: wrong magic 0x00000801, expected "
                             "0x00000803 (IDX images: unsigned bytes, 3 dimensions)");
    assert_int_equal(dataset_load_idx(img, img, &d, err, sizeof err), -1);
    assert_string_equal(err, "wm-images-idx3-ubyte: wrong magic 0x00000803, expected "
                             "0x00000801 (IDX labels: unsigned bytes, 1 dimension)");
    const char text[] = "this is not an IDX file";
    const char *p = tu_write(tu_dir, "text-images-idx3-ubyte", text, sizeof text - 1);
    assert_int_equal(dataset_load_idx(p, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "text-images-idx3-ubyte: wrong magic 0x74686973, expected "
                             "0x00000803 (IDX images: unsigned bytes, 3 dimensions)");
    p = tu_write(tu_dir, "short-images-idx3-ubyte", "\0\0\x08\x03\0\0", 6);
    assert_int_equal(dataset_load_idx(p, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "short-images-idx3-ubyte: truncated header (6 of 16 bytes)");
}

static void test_count_mismatch(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "cm", 1, 1200, 1200, 1, 2, 1199, 1199, 10, img, lab);
    dataset d;
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "cm-images-idx3-ubyte.gz has 1,200 images but "
                             "cm-labels-idx1-ubyte.gz has 1,199 labels");
}

static void test_label_out_of_range(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "lr", 0, 30, 30, 2, 2, 30, 30, 12, img, lab);
    dataset d;
    /* Labels 0..11: the first out of range for 10 classes is record 11. */
    assert_int_equal(data_idx_load(img, lab, 10, &d, err, sizeof err), -1);
    assert_string_equal(err, "lr-labels-idx1-ubyte: record 11 of 30: label 10 out of range "
                             "[0, 10)");
    assert_int_equal(data_idx_load(img, lab, 12, &d, err, sizeof err), 0);
    assert_int_equal(d.num_classes, 12);
    dataset_free(&d);
}

static void test_trailing_bytes(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "tb", 0, 4, 5, 2, 2, 5, 5, 10, img, lab);
    dataset d;
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "tb-images-idx3-ubyte: 4 bytes of unexpected data after 4 images");
}

static void test_empty_and_missing(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "em", 0, 3, 3, 2, 2, 3, 3, 10, img, lab);
    const char *e = tu_write(tu_dir, "empty-images-idx3-ubyte", "", 0);
    dataset d;
    assert_int_equal(dataset_load_idx(e, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "empty-images-idx3-ubyte: empty file");
    e = tu_write_gz(tu_dir, "empty-images-idx3-ubyte.gz", "", 0);
    assert_int_equal(dataset_load_idx(e, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "empty-images-idx3-ubyte.gz: empty file (no data in the gzip "
                             "stream)");
    assert_int_equal(dataset_load_idx(img, tu_path(tu_dir, "nope"), &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "nope: cannot open: No such file or directory"));
}

static void test_corrupt_gzip(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "cg", 1, 500, 500, 8, 8, 500, 500, 10, img, lab);
    size_t len;
    unsigned char *b = tu_read(img, &len);
    /* Garble the middle of the deflate stream. */
    for (size_t i = len / 2; i < len / 2 + 16; i++)
        b[i] ^= 0x5a;
    tu_write(tu_dir, "cg-images-idx3-ubyte.gz", b, len);
    dataset d;
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "cg-images-idx3-ubyte.gz: corrupt gzip data ("));
    /* A wrong CRC in the trailer alone. */
    free(b);
    tu_write_idx_pair(tu_dir, "crc", 1, 5, 5, 2, 2, 5, 5, 10, img, lab);
    b = tu_read(img, &len);
    b[len - 8] ^= 1;
    tu_write(tu_dir, "crc-images-idx3-ubyte.gz", b, len);
    assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "crc-images-idx3-ubyte.gz: corrupt gzip data (incorrect data "
                             "check)");
    free(b);
    /* Named .gz but not gzip at all. */
    const char *p = tu_write(tu_dir, "fake-images-idx3-ubyte.gz", "\0\0\x08\x03", 4);
    assert_int_equal(dataset_load_idx(p, lab, &d, err, sizeof err), -1);
    assert_string_equal(err, "fake-images-idx3-ubyte.gz: corrupt gzip data (no gzip header)");
}

/* Every prefix of a valid gzipped pair fails cleanly (no crash, no
 * success on partial data). */
static void test_every_truncation(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "ev", 1, 7, 7, 3, 3, 7, 7, 10, img, lab);
    size_t len;
    unsigned char *b = tu_read(img, &len);
    for (size_t cut = 0; cut < len; cut++) {
        tu_write(tu_dir, "ev-images-idx3-ubyte.gz", b, cut);
        dataset d;
        assert_int_equal(dataset_load_idx(img, lab, &d, err, sizeof err), -1);
        assert_non_null(strstr(err, "ev-images-idx3-ubyte.gz: "));
    }
    free(b);
}

/* Every single-bit flip in the headers of a plain pair: each is refused
 * with a message or (for a flipped bit that keeps the file consistent,
 * none here) loads; never a crash. */
static void test_header_bit_flips(void **state)
{
    (void)state;
    char img[512], lab[512];
    tu_write_idx_pair(tu_dir, "bf", 0, 6, 6, 3, 2, 6, 6, 10, img, lab);
    size_t li, ll;
    unsigned char *bi = tu_read(img, &li), *bl = tu_read(lab, &ll);
    for (int which = 0; which < 2; which++) {
        unsigned char *b = which ? bl : bi;
        size_t header = which ? 8 : 16;
        for (size_t i = 0; i < header; i++) {
            for (int bit = 0; bit < 8; bit++) {
                b[i] ^= (unsigned char)(1 << bit);
                tu_write(tu_dir, which ? "bf-labels-idx1-ubyte" : "bf-images-idx3-ubyte", b,
                         which ? ll : li);
                dataset d;
                assert_int_equal(data_idx_load(img, lab, 10, &d, err, sizeof err), -1);
                assert_non_null(strstr(err, "bf-"));
                b[i] ^= (unsigned char)(1 << bit);
            }
        }
        tu_write(tu_dir, which ? "bf-labels-idx1-ubyte" : "bf-images-idx3-ubyte", b,
                 which ? ll : li);
    }
    free(bi);
    free(bl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_gz),
        cmocka_unit_test(test_multi_member_gzip),
        cmocka_unit_test(test_truncated_images),
        cmocka_unit_test(test_truncated_labels),
        cmocka_unit_test(test_truncated_gzip_stream),
        cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_count_mismatch),
        cmocka_unit_test(test_label_out_of_range),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_empty_and_missing),
        cmocka_unit_test(test_corrupt_gzip),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_header_bit_flips),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
