/* test_tensorfile.c — safetensors and npz: round trips of every rank
 * (including scalars and empty tensors), writer input checks, and readers
 * fed every truncation and every single-byte corruption of a valid file
 * (they must fail cleanly or return well-formed tensors, never crash);
 * specific malformed headers; atomic_write_file. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "data_test_util.h"
#include "io/tensorfile.h"

static char err[1024];

#define N_T 5
static tensor_entry tensors[N_T];
static float storage[64];

static int setup(void **state)
{
    tu_dir_setup(state);
    for (int i = 0; i < 64; i++)
        storage[i] = (float)i * 0.25f - 3.0f;
    storage[7] = -0.0f;
    storage[8] = 1e-38f;
    storage[9] = INFINITY;
    tensors[0] = (tensor_entry){"0.dense.weight", 2, {3, 4}, storage};
    tensors[1] = (tensor_entry){"0.dense.bias", 1, {5}, storage + 12};
    tensors[2] = (tensor_entry){"scalar", 0, {0}, storage + 17};
    tensors[3] = (tensor_entry){"2.conv2d.weight", 4, {2, 1, 3, 2}, storage + 18};
    tensors[4] = (tensor_entry){"empty", 2, {0, 3}, storage};
    return 0;
}

static void check_same(const tensor_entry *got, int n)
{
    assert_int_equal(n, N_T);
    for (int i = 0; i < N_T; i++) {
        assert_string_equal(got[i].name, tensors[i].name);
        assert_int_equal(got[i].rank, tensors[i].rank);
        for (int d = 0; d < tensors[i].rank; d++)
            assert_int_equal(got[i].dims[d], tensors[i].dims[d]);
        long size = tensor_entry_size(&tensors[i]);
        assert_int_equal(tensor_entry_size(&got[i]), size);
        if (size)
            assert_memory_equal(got[i].data, tensors[i].data, (size_t)size * sizeof(float));
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *keys[2] = {"format", "epoch"}, *vals[2] = {"pt", "5"};
    char st[600], nz[600];
    strcpy(st, tu_path(tu_dir, "w.safetensors"));
    strcpy(nz, tu_path(tu_dir, "w.npz"));
    assert_int_equal(safetensors_write(st, tensors, N_T, keys, vals, 2, err, sizeof err), 0);
    assert_int_equal(npz_write(nz, tensors, N_T, err, sizeof err), 0);
    tensor_entry *got;
    int n;
    assert_int_equal(safetensors_read(st, &got, &n, err, sizeof err), 0);
    check_same(got, n);
    tensorfile_free(got, n);
    assert_int_equal(npz_read(nz, &got, &n, err, sizeof err), 0);
    check_same(got, n);
    tensorfile_free(got, n);

    /* Header: 8-byte aligned data, metadata present. */
    size_t len;
    unsigned char *b = tu_read(st, &len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    assert_int_equal(hlen % 8, 0);
    assert_int_equal(len, 8 + hlen + (12 + 5 + 1 + 12) * 4);
    char *header = strndup((const char *)b + 8, hlen);
    assert_non_null(strstr(header, "\"__metadata__\":{\"format\":\"pt\",\"epoch\":\"5\"}"));
    assert_non_null(strstr(header, "\"0.dense.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],"
                                   "\"data_offsets\":[0,48]}"));
    free(header);
    free(b);

    /* Same tensors, same bytes: the npz carries no timestamps. */
    unsigned char *a1 = tu_read(nz, &len);
    assert_int_equal(npz_write(nz, tensors, N_T, err, sizeof err), 0);
    size_t len2;
    unsigned char *a2 = tu_read(nz, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(a1, a2, len);
    free(a1);
    free(a2);
    /* An empty file set is valid too. */
    assert_int_equal(npz_write(nz, NULL, 0, err, sizeof err), 0);
    assert_int_equal(npz_read(nz, &got, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    tensorfile_free(got, n);
}

static void test_writer_checks(void **state)
{
    (void)state;
    const char *p = tu_path(tu_dir, "bad.safetensors");
    tensor_entry t[2] = {{"a", 1, {2}, storage}, {"a", 1, {2}, storage}};
    assert_int_equal(safetensors_write(p, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "tensor a: duplicate name"));
    assert_int_equal(npz_write(p, t, 2, err, sizeof err), -1);
    t[1] = (tensor_entry){"b\"c", 1, {2}, storage};
    assert_int_equal(npz_write(p, t, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "invalid name"));
    t[1] = (tensor_entry){"b", 5, {2}, storage};
    assert_int_equal(safetensors_write(p, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "tensor b: invalid shape (rank 5)"));
    t[1] = (tensor_entry){"b", 1, {-2}, storage};
    assert_int_equal(safetensors_write(p, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    t[1] = (tensor_entry){"b", 1, {2}, NULL};
    assert_int_equal(safetensors_write(p, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "tensor b: no data"));
    t[1] = (tensor_entry){"__metadata__", 1, {2}, storage};
    assert_int_equal(safetensors_write(p, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    assert_int_equal(safetensors_write("/nonexistent-dir/x.safetensors", t, 1, NULL, NULL, 0,
                                       err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/x.safetensors: cannot create temporary file"));
}

typedef int (*reader_fn)(const char *, tensor_entry **, int *, char *, size_t);

/* Whatever a reader returns for damaged input must be well formed. */
static void read_damaged(reader_fn read, const char *path, int *ok, int *failed)
{
    tensor_entry *got = NULL;
    int n = -1;
    if (read(path, &got, &n, err, sizeof err) == 0) {
        for (int i = 0; i < n; i++) {
            long size = tensor_entry_size(&got[i]);
            assert_true(size >= 0);
            for (long k = 0; k < size; k++)
                (void)got[i].data[k]; /* ASan checks the bounds */
        }
        tensorfile_free(got, n);
        (*ok)++;
    } else {
        assert_null(got);
        assert_int_equal(n, 0);
        assert_true(strlen(err) > 0);
        (*failed)++;
    }
}

static void damage_all(const char *name, reader_fn read, int expect_flips_fail)
{
    const char *path = tu_path(tu_dir, name);
    size_t len;
    unsigned char *good = tu_read(path, &len);
    int ok = 0, failed = 0;
    for (size_t cut = 0; cut < len; cut++) {
        tu_write(tu_dir, name, good, cut);
        read_damaged(read, path, &ok, &failed);
    }
    assert_int_equal(ok, 0); /* every strict prefix is refused */
    unsigned char *bad = malloc(len);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(bad, good, len);
            bad[i] ^= (unsigned char)(1 << bit);
            tu_write(tu_dir, name, bad, len);
            read_damaged(read, path, &ok, &failed);
        }
    }
    /* npz members carry a CRC: a flipped data bit must be caught. */
    if (expect_flips_fail)
        assert_true(failed > (int)len);
    tu_write(tu_dir, name, good, len);
    free(bad);
    free(good);
}

static void test_damaged_files(void **state)
{
    (void)state;
    assert_int_equal(safetensors_write(tu_path(tu_dir, "d.safetensors"), tensors, N_T, NULL, NULL,
                                       0, err, sizeof err), 0);
    assert_int_equal(npz_write(tu_path(tu_dir, "d.npz"), tensors, N_T, err, sizeof err), 0);
    damage_all("d.safetensors", safetensors_read, 0);
    damage_all("d.npz", npz_read, 1);
}

static void expect_st(const char *header, size_t data_len, const char *msg)
{
    size_t hl = strlen(header);
    unsigned char buf[512] = {0};
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    const char *p = tu_write(tu_dir, "m.safetensors", buf, 8 + hl + data_len);
    tensor_entry *got;
    int n;
    assert_int_equal(safetensors_read(p, &got, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, msg));
}

static void test_malformed_safetensors(void **state)
{
    (void)state;
    expect_st("[1,2]", 0, "header is not a JSON object");
    expect_st("{\"a\":", 0, "invalid JSON header");
    expect_st("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
              "tensor a: dtype F16 not supported (F32 only)");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8,
              "tensor a: data_offsets [0, 16] outside the 8 data bytes");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
              "tensor a: data_offsets span 8 bytes but the shape needs 12");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],"
              "\"data_offsets\":[0,0]}}", 8, "tensor a: invalid dimension 0");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2,2,2,2],\"data_offsets\":[0,128]}}",
              128, "tensor a: shape must be an array of at most 4 dims");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,0]}}", 8,
              "data_offsets [4, 0] outside");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
              "invalid JSON header: duplicate object key");
    /* A header length beyond the file. */
    unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    const char *p = tu_write(tu_dir, "h.safetensors", huge, sizeof huge);
    tensor_entry *got;
    int n;
    assert_int_equal(safetensors_read(p, &got, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "header length 9223372036854775807 exceeds the file (16 bytes)"));
}

static void test_atomic_write(void **state)
{
    (void)state;
    char path[600];
    strcpy(path, tu_path(tu_dir, "atomic.json"));
    assert_int_equal(atomic_write_file(path, "first", 5, err, sizeof err), 0);
    assert_int_equal(atomic_write_file(path, "second!", 7, err, sizeof err), 0);
    size_t len;
    unsigned char *b = tu_read(path, &len);
    assert_int_equal(len, 7);
    assert_memory_equal(b, "second!", 7);
    free(b);
    /* No temporary files are left behind. */
    DIR *d = opendir(tu_dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        assert_null(strstr(e->d_name, ".tmp."));
    closedir(d);
    assert_int_equal(atomic_write_file("/nonexistent-dir/f", "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/f: cannot create temporary file: No such file"));
    /* A directory in the way: the rename fails and the temp file goes. */
    char sub[600];
    strcpy(sub, tu_path(tu_dir, "adir"));
    assert_int_equal(mkdir(sub, 0755), 0);
    tu_write(sub, "inner", "x", 1);
    assert_int_equal(atomic_write_file(sub, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "rename failed"));
    d = opendir(tu_dir);
    while ((e = readdir(d)) != NULL)
        assert_null(strstr(e->d_name, ".tmp."));
    closedir(d);
}

/* What a writer killed mid-write leaves (".NAME.tmp.XXXXXX") is swept;
 * files that only look alike are kept. */
static void test_atomic_sweep(void **state)
{
    (void)state;
    char dir[600];
    strcpy(dir, tu_path(tu_dir, "sweep"));
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_write(dir, ".ckpt.bin.tmp.a1B2c3", "half", 4);
    tu_write(dir, ".weights-epoch-001.safetensors.tmp.ZZZZZZ", "half", 4);
    tu_write(dir, "ckpt.bin", "whole", 5);
    tu_write(dir, "notes.tmp.abcdef", "kept: not hidden", 16);
    tu_write(dir, ".x.tmp.abc", "kept: not six", 13);
    tu_write(dir, ".x.tmp.abc-ef", "kept: not alphanumeric", 22);
    assert_int_equal(atomic_write_sweep(dir), 2);
    assert_int_equal(atomic_write_sweep(dir), 0);
    int left = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        left += e->d_name[0] != '.' || strlen(e->d_name) > 2;
    closedir(d);
    assert_int_equal(left, 4);
    assert_int_equal(atomic_write_sweep(tu_path(tu_dir, "no-such-dir")), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_writer_checks),
        cmocka_unit_test(test_damaged_files),
        cmocka_unit_test(test_malformed_safetensors),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_atomic_sweep),
    };
    return cmocka_run_group_tests(tests, setup, tu_dir_teardown);
}
