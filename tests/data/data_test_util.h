/* data_test_util.h — scratch directories and file builders shared by the
 * engine/data and engine/io tests. */
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

/* n CIFAR-10 records (label byte + 3,072 pixels) in a malloc'd buffer:
 * label (first + i) % 10, pixel k of record i = (first + i + k) % 256. */
unsigned char *tu_cifar_records(int n, int first, size_t *len);

#endif
