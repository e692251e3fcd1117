/* test_dataformat.c — lib/dataformat's rules on bytes in memory: the
 * pieces the daemon's upload check and the engine's loaders share, each
 * checked at its edges (a header one byte short, a record one byte cut, a
 * field that is almost a number, a pair missing its half). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataformat/cifar_format.h"
#include "dataformat/csv_format.h"
#include "dataformat/ctf_format.h"
#include "dataformat/idx_format.h"

static void test_idx_header(void **state)
{
    (void)state;
    /* 2 images of 2x3: a 16-byte header and 12 body bytes. */
    const unsigned char head[16] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
    idxfmt_header h;
    assert_int_equal(idxfmt_header_parse(head, 3, &h), 4);
    assert_int_equal(idxfmt_header_parse(head, 15, &h), 16);
    assert_int_equal(idxfmt_header_parse(head, 16, &h), 0);
    assert_int_equal(h.rank, 3);
    assert_int_equal(h.dims[0], 2);
    assert_int_equal(h.header_len, 16);
    assert_int_equal(h.record_bytes, 6);
    uint64_t have, extra;
    assert_int_equal(idxfmt_body_check(&h, 12, &have, &extra), IDXFMT_BODY_OK);
    assert_int_equal(idxfmt_body_check(&h, 11, &have, &extra), IDXFMT_BODY_SHORT);
    assert_int_equal(have, 1);
    assert_int_equal(idxfmt_body_check(&h, 15, &have, &extra), IDXFMT_BODY_EXTRA);
    assert_int_equal(extra, 3);
    /* Not unsigned bytes (0x09: signed), rank 0 and rank 5: bad magic. */
    const unsigned char f32[4] = {0, 0, 9, 1}, r0[4] = {0, 0, 8, 0}, r5[4] = {0, 0, 8, 5};
    assert_int_equal(idxfmt_header_parse(f32, 4, &h), -1);
    assert_int_equal(idxfmt_header_parse(r0, 4, &h), -1);
    assert_int_equal(idxfmt_header_parse(r5, 4, &h), -1);
}

static void test_cifar_records(void **state)
{
    (void)state;
    unsigned char recs[3 * CIFARFMT_RECORD] = {0};
    uint64_t part;
    assert_int_equal(cifarfmt_records(sizeof recs, &part), 3);
    assert_int_equal(part, 0);
    assert_int_equal(cifarfmt_records(sizeof recs - 1, &part), 2);
    assert_int_equal(part, CIFARFMT_RECORD - 1);
    recs[CIFARFMT_RECORD] = 9;
    assert_int_equal(cifarfmt_bad_label(recs, 3, CIFARFMT_CLASSES), -1);
    recs[2 * CIFARFMT_RECORD] = 10;
    assert_int_equal(cifarfmt_bad_label(recs, 3, CIFARFMT_CLASSES), 2);
    /* A smaller class count (data.num_classes) judges the 9 too. */
    assert_int_equal(cifarfmt_bad_label(recs, 3, 5), 1);
}

static void test_csv_fields(void **state)
{
    (void)state;
    double v;
    const char *ok = " 1.5\t", *nan = "nan", *big = "1e999", *tail = "2x";
    assert_int_equal(csvfmt_number(ok, ok + strlen(ok), &v), 0);
    assert_true(v == 1.5);
    assert_int_equal(csvfmt_number(nan, nan + 3, &v), -1);
    assert_int_equal(csvfmt_number(big, big + 5, &v), -1);
    assert_int_equal(csvfmt_number(tail, tail + 2, &v), -1);
    assert_int_equal(csvfmt_number(tail, tail + 1, &v), 0); /* "2" of "2x" */
    const char *line = "0, 1,cat ,3", *bs, *be;
    long fields;
    assert_int_equal(csvfmt_first_bad(line, line + strlen(line), &fields, &bs, &be), 2);
    assert_int_equal(fields, 4);
    assert_int_equal(be - bs, 4);
    assert_memory_equal(bs, "cat ", 4);
    assert_false(csvfmt_all_numbers(line, line + strlen(line)));
    const char *row = "1,2,,3";
    assert_int_equal(csvfmt_fields(row, row + strlen(row)), 4);
    assert_int_equal(csvfmt_first_bad(row, row + strlen(row), &fields, &bs, &be), 2);
}

static void test_ctf_heads(void **state)
{
    (void)state;
    ctffmt_head h, prev;
    const char *a = "  7 |x 3:1 |y 1\r", *b = "7\t|x 4:1", *c = "|x 1", *bad = "7 x 1";
    assert_int_equal(ctffmt_head_parse(a, a + strlen(a), &prev), 0);
    assert_int_equal(prev.id_len, 1);
    assert_int_equal(*prev.bar, '|');
    assert_int_equal(ctffmt_head_parse(b, b + strlen(b), &h), 0);
    assert_false(ctffmt_new_seq(h.id, h.id_len, prev.id, prev.id_len, false));
    assert_true(ctffmt_new_seq(h.id, h.id_len, prev.id, prev.id_len, true));
    assert_int_equal(ctffmt_head_parse(c, c + strlen(c), &h), 0);
    assert_int_equal(h.id_len, 0);
    /* A line without an id is a sequence by itself. */
    assert_true(ctffmt_new_seq(h.id, h.id_len, h.id, h.id_len, false));
    assert_int_equal(ctffmt_head_parse(bad, bad + strlen(bad), &h), -1);
    assert_true(ctffmt_blank(" \t\r", " \t\r" + 3));
    assert_false(ctffmt_blank(" x", " x" + 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_header),
        cmocka_unit_test(test_cifar_records),
        cmocka_unit_test(test_csv_fields),
        cmocka_unit_test(test_ctf_heads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
