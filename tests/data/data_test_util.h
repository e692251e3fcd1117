/* data_test_util.h — scratch directories and file builders shared by the
 * engine/data and lib/io tests. */
#ifndef PUNCH_DATA_TEST_UTIL_H
#define PUNCH_DATA_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A fresh directory under $TMPDIR (or /tmp); removed with tu_rmtree. */
char *tu_mkdtemp(void);
void tu_rmtree(const char *dir);

/* A cmocka group fixture: tu_dir_setup makes tu_dir a fresh directory for
 * the group's tests, tu_dir_teardown removes it. */
extern char *tu_dir;
int tu_dir_setup(void **state);
int tu_dir_teardown(void **state);

/* dir/name into buf (static storage rotated over 8 slots). */
const char *tu_path(const char *dir, const char *name);

/* Write bytes to dir/name, plain or gzip-compressed (by zlib's gzwrite);
 * abort the test on failure. Return the path. */
const char *tu_write(const char *dir, const char *name, const void *data, size_t len);
const char *tu_write_gz(const char *dir, const char *name, const void *data, size_t len);

/* Read a whole file (malloc'd; *len set). */
unsigned char *tu_read(const char *path, size_t *len);

/* Build IDX images (n records of rows*cols bytes, header claiming
 * claimed_n) and labels in malloc'd buffers; pixel(i, k) = (i * 7 + k) % 256
 * and label(i) = i % classes. */
unsigned char *tu_idx_images(uint32_t claimed_n, uint32_t n, uint32_t rows, uint32_t cols,
                             size_t *len);
unsigned char *tu_idx_labels(uint32_t claimed_n, uint32_t n, int classes, size_t *len);

/* Write an IDX pair to dir as PREFIX-images-idx3-ubyte and
 * PREFIX-labels-idx1-ubyte (with ".gz", gzipped, when gz): the images of
 * tu_idx_images(claimed, n, rows, cols) and the labels of
 * tu_idx_labels(claimed_labels, n_labels, classes), so a test can break
 * the pair's counts. The paths go into img and lab unless they are NULL. */
void tu_write_idx_pair(const char *dir, const char *prefix, int gz, uint32_t claimed, uint32_t n,
                       uint32_t rows, uint32_t cols, uint32_t claimed_labels, uint32_t n_labels,
                       int classes, char img[512], char lab[512]);
/* A well-formed pair: n records of rows x cols, labels i % 10. */
void tu_write_idx(const char *dir, const char *prefix, int gz, uint32_t n, uint32_t rows,
                  uint32_t cols, char img[512], char lab[512]);

/* n CIFAR-10 records (label byte + 3,072 pixels) in a malloc'd buffer:
 * label (first + i) % 10, pixel k of record i = (first + i + k) % 256. */
unsigned char *tu_cifar_records(int n, int first, size_t *len);

/* Two CIFAR-10 batches in dir: data_batch_1.bin (records 0-4, plain) and
 * data_batch_2.bin.gz (records 5-8, gzipped), as tu_cifar_records makes
 * them. second keeps the second batch's bytes so a test can break and
 * rewrite it. */
typedef struct tu_cifar_pair {
    const char *paths[2];   /* malloc'd */
    unsigned char *second;  /* second_len bytes, malloc'd */
    size_t second_len;
} tu_cifar_pair;
void tu_write_cifar_pair(const char *dir, tu_cifar_pair *out);
void tu_cifar_pair_free(tu_cifar_pair *p);

/* A CSV file with a header, label in column 0, blank and whitespace-only
 * lines, a CRLF line and no final newline: 5 rows of 2 features. */
extern const char tu_csv_messy[];
/* A header and 6 rows whose sixth (line 7) has a field "x" that is not a
 * number. */
extern const char tu_csv_bad_line7[];

#endif
