/* test_resolve.c — dataset names resolve under the roots and nowhere else:
 * IDX pairs with and without .gz, CIFAR-10 directories and files, CSV,
 * several roots in order; unsafe names, absolute paths and symlinks that
 * lead out of a root are refused; a missing name lists the roots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "data/dataset.h"
#include "data_test_util.h"

static char root1[600], root2[600], outside[600]; /* under tu_dir */
static char p1[4096], p2[4096], err[2048];

static void mk(const char *path)
{
    assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
    tu_dir_setup(state);
    snprintf(root1, sizeof root1, "%s/root1", tu_dir);
    snprintf(root2, sizeof root2, "%s/root2", tu_dir);
    snprintf(outside, sizeof outside, "%s/outside", tu_dir);
    mk(root1);
    mk(root2);
    mk(outside);
    mk(tu_path(root1, "fm"));
    mk(tu_path(root2, "mn"));
    mk(tu_path(root2, "cifar"));
    /* One-byte stand-ins: resolution looks at names, not contents. */
    const struct {
        const char *dir, *name;
    } files[] = {
        {root1, "fm/train-images-idx3-ubyte.gz"}, {root1, "fm/train-labels-idx1-ubyte.gz"},
        {root1, "fm/t10k-images-idx3-ubyte"},     {root1, "fm/t10k-labels-idx1-ubyte.gz"},
        {root1, "fm/lonely-images-idx3-ubyte"},   {root2, "mn/train-images.idx3-ubyte"},
        {root2, "mn/train-labels.idx1-ubyte"},    {root2, "cifar/data_batch_1.bin"},
        {root2, "cifar/test_batch.bin"},          {root2, "table.csv"},
        {outside, "secret-images-idx3-ubyte"},    {outside, "secret-labels-idx1-ubyte"},
        {outside, "secret.csv"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        tu_write(files[i].dir, files[i].name, "x", 1);
    /* Symlinks: one escaping the root, one staying inside it. */
    assert_int_equal(symlink(tu_path(outside, "secret.csv"), tu_path(root1, "escape.csv")), 0);
    assert_int_equal(symlink(outside, tu_path(root1, "outdir")), 0);
    assert_int_equal(symlink(tu_path(root2, "table.csv"), tu_path(root2, "alias.csv")), 0);
    return 0;
}

static int resolve(spec_data_format f, const char *name)
{
    const char *dirs[2] = {root1, root2};
    dataset_roots roots = {dirs, 2};
    return dataset_resolve(f, name, &roots, p1, p2, sizeof p1, err, sizeof err);
}

/* Does path end with suffix? (The roots themselves may be reached through
 * a symlinked TMPDIR, so compare tails.) */
static int ends_with(const char *path, const char *suffix)
{
    size_t a = strlen(path), b = strlen(suffix);
    return a >= b && strcmp(path + a - b, suffix) == 0;
}

static void test_idx_pairs(void **state)
{
    (void)state;
    assert_int_equal(resolve(DATA_IDX, "fm/train"), 0);
    assert_true(ends_with(p1, "/root1/fm/train-images-idx3-ubyte.gz"));
    assert_true(ends_with(p2, "/root1/fm/train-labels-idx1-ubyte.gz"));
    /* Mixed: plain images, gzipped labels. */
    assert_int_equal(resolve(DATA_IDX, "fm/t10k"), 0);
    assert_true(ends_with(p1, "/root1/fm/t10k-images-idx3-ubyte"));
    assert_true(ends_with(p2, "/root1/fm/t10k-labels-idx1-ubyte.gz"));
    /* The images file named in full. */
    assert_int_equal(resolve(DATA_IDX, "fm/train-images-idx3-ubyte.gz"), 0);
    assert_true(ends_with(p2, "/root1/fm/train-labels-idx1-ubyte.gz"));
    /* Second root, dotted MNIST naming. */
    assert_int_equal(resolve(DATA_IDX, "mn/train"), 0);
    assert_true(ends_with(p1, "/root2/mn/train-images.idx3-ubyte"));
    assert_true(ends_with(p2, "/root2/mn/train-labels.idx1-ubyte"));
}

static void test_idx_missing(void **state)
{
    (void)state;
    assert_int_equal(resolve(DATA_IDX, "fm/trian"), -1);
    char want[2048];
    snprintf(want, sizeof want, "dataset \"fm/trian\" (idx) not found: looked for "
             "fm/trian-images-idx3-ubyte[.gz] and trian-labels-idx1-ubyte[.gz] under %s, %s",
             root1, root2);
    assert_string_equal(err, want);
    assert_int_equal(resolve(DATA_IDX, "fm/lonely"), -1);
    assert_string_equal(err, "dataset \"fm/lonely\": found lonely-images-idx3-ubyte but no "
                             "labels file lonely-labels-idx1-ubyte[.gz] next to it");
}

static void test_unsafe_names(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "../outside/secret", "fm/../../outside/secret", "/etc/passwd", "fm//train",
        ".hidden", "fm/", "", "a\\b",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(resolve(DATA_IDX, bad[i]), -1);
        assert_non_null(strstr(err, "dataset name \""));
        assert_int_equal(resolve(DATA_CSV, bad[i]), -1);
    }
    assert_int_equal(resolve(DATA_CSV, "../x"), -1);
    assert_string_equal(err, "dataset name \"../x\" contains \"..\"; dataset names cannot "
                             "leave their root");
    char abs[700];
    snprintf(abs, sizeof abs, "%s/secret.csv", outside);
    assert_int_equal(resolve(DATA_CSV, abs), -1);
    assert_non_null(strstr(err, "is an absolute path"));
}

static void test_symlinks(void **state)
{
    (void)state;
    assert_int_equal(resolve(DATA_CSV, "escape"), -1);
    assert_non_null(strstr(err, "dataset \"escape\": escape.csv leads outside the dataset root"));
    assert_int_equal(resolve(DATA_IDX, "outdir/secret"), -1);
    assert_non_null(strstr(err, "leads outside the dataset root"));
    /* A link that stays inside its root is fine. */
    assert_int_equal(resolve(DATA_CSV, "alias"), 0);
    assert_true(ends_with(p1, "/root2/table.csv"));
}

static void test_cifar_and_csv(void **state)
{
    (void)state;
    struct stat st;
    assert_int_equal(resolve(DATA_CIFAR10, "cifar"), 0);
    assert_true(ends_with(p1, "/root2/cifar"));
    assert_int_equal(stat(p1, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(resolve(DATA_CIFAR10, "cifar/train"), 0);
    assert_true(ends_with(p1, "/root2/cifar"));
    assert_int_equal(resolve(DATA_CIFAR10, "cifar/test"), 0);
    assert_true(ends_with(p1, "/root2/cifar/test_batch.bin"));
    assert_int_equal(resolve(DATA_CIFAR10, "cifar/test_batch"), 0);
    assert_true(ends_with(p1, "/root2/cifar/test_batch.bin"));
    assert_int_equal(resolve(DATA_CSV, "table"), 0);
    assert_true(ends_with(p1, "/root2/table.csv"));
    assert_int_equal(resolve(DATA_CSV, "table.csv"), 0);
    assert_int_equal(resolve(DATA_CSV, "nope"), -1);
    assert_non_null(strstr(err, "dataset \"nope\" (csv) not found: looked for nope[.csv][.gz] "
                                "under "));
}

static void test_no_roots(void **state)
{
    (void)state;
    dataset_roots none = {NULL, 0};
    assert_int_equal(dataset_resolve(DATA_IDX, "fm/train", &none, p1, p2, sizeof p1, err,
                                     sizeof err), -1);
    assert_string_equal(err, "dataset \"fm/train\": no dataset roots configured");
    /* A root that does not exist is skipped but still listed. */
    const char *dirs[2] = {"/nonexistent-root", root1};
    dataset_roots roots = {dirs, 2};
    assert_int_equal(dataset_resolve(DATA_IDX, "fm/train", &roots, p1, p2, sizeof p1, err,
                                     sizeof err), 0);
    assert_int_equal(dataset_resolve(DATA_IDX, "fm/none", &roots, p1, p2, sizeof p1, err,
                                     sizeof err), -1);
    assert_non_null(strstr(err, "under /nonexistent-root, "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_pairs),
        cmocka_unit_test(test_idx_missing),
        cmocka_unit_test(test_unsafe_names),
        cmocka_unit_test(test_symlinks),
        cmocka_unit_test(test_cifar_and_csv),
        cmocka_unit_test(test_no_roots),
    };
    return cmocka_run_group_tests(tests, setup, tu_dir_teardown);
}
