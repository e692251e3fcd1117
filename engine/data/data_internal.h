/* data_internal.h — internal to engine/data: whole-file reads with
 * transparent gunzip, count formatting for messages, the data PRNG, the
 * loaders' full forms (with the label range check dataset_load_all needs),
 * and the steps dataset_load_all and the parts share: named sources,
 * layout and scaling. Not part of the public engine API. */
#ifndef PUNCH_DATA_INTERNAL_H
#define PUNCH_DATA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

/* A file's contents, gunzipped when it starts with the gzip magic. */
typedef struct data_buf {
    unsigned char *p;  /* len bytes plus a terminating NUL */
    size_t len;
    /* The gzip stream ended before its end marker: p holds what could be
     * decompressed. Parsers report the shortfall in their own terms
     * ("truncated after 59,872 of 60,000 images"). */
    bool gz_truncated;
} data_buf;

/* Read path (gzipped or not). Errors: "NAME: empty file", "NAME: corrupt
 * gzip data (reason)", I/O errors; NAME is the file's base name. */
int data_file_read(const char *path, data_buf *out, char *err, size_t errlen);
void data_buf_free(data_buf *b);

/* v with thousands separators ("59,872") into buf; returns buf. */
const char *data_fmt_count(long long v, char buf[32]);

/* xoshiro256** seeded through splitmix64: a fixed, documented generator so
 * shuffles and synthetic data are the same on every platform and libc. */
typedef struct data_rng {
    uint64_t s[4];
} data_rng;

/* Seed from (seed, stream): distinct streams give independent sequences. */
void data_rng_seed(data_rng *r, uint64_t seed, uint64_t stream);
uint64_t data_rng_next(data_rng *r);
/* Uniform in [0, bound), bound > 0, without modulo bias. */
uint64_t data_rng_below(data_rng *r, uint64_t bound);

/* The public loaders with a label check: labels must be in
 * [0, num_classes) (num_classes <= 0: no check). The CSV form also takes
 * the expected features per row (0: whatever the first row has). */
int data_idx_load(const char *images_path, const char *labels_path, int num_classes,
                  dataset *out, char *err, size_t errlen);
int data_cifar10_load(const char *const *paths, int n_paths, int num_classes,
                      dataset *out, char *err, size_t errlen);
int data_csv_load(const char *path, int label_column, int header, int num_classes,
                  long expected_features, dataset *out, char *err, size_t errlen);

/* A file read sequentially in bounded memory, gunzipped on the fly when
 * it starts with the gzip magic (data_stream.c). Messages match
 * data_file_read's. */
typedef struct data_stream data_stream;

int data_stream_open(const char *path, data_stream **out, char *err, size_t errlen);
void data_stream_close(data_stream *s);
/* Up to n bytes into dst; *got is short only at the end of the data. */
int data_stream_read(data_stream *s, void *dst, size_t n, size_t *got, char *err,
                     size_t errlen);
/* Pass over n bytes (plain files: a seek); *skipped short only at the end. */
int data_stream_skip(data_stream *s, uint64_t n, uint64_t *skipped, char *err,
                     size_t errlen);
/* The most (uncompressed) bytes the file can hold: its size, or for gzip
 * its size times deflate's largest ratio (1032:1). A loader checks a
 * header's claim against it before allocating for it. */
uint64_t data_stream_max_size(const data_stream *s);
/* Read to the end: *total is the whole (uncompressed) length and
 * *truncated whether a gzip stream ended before its trailer; fails on
 * corrupt gzip data and on a gzip stream without data. */
int data_stream_finish(data_stream *s, uint64_t *total, bool *truncated, char *err,
                       size_t errlen);

/* The records a load keeps: [lo, hi), or, when rows is set, the m records
 * rows[0] < rows[1] < ... < rows[m - 1] (lo and hi unused). Sample i of
 * the result is the i-th record kept. */
typedef struct data_pick {
    long lo, hi;
    const int64_t *rows;
    long m;
    /* With rows, for byte-valued formats (IDX, CIFAR-10, synthetic): when
     * set, the kept samples' values go here as bytes (m x features) and
     * out->x stays NULL: a quarter of the floats' memory. */
    uint8_t *bytes;
} data_pick;

/* The dataset of a pick's `count` samples: x (unless pick->bytes) and y. */
int data_pick_alloc(const data_pick *p, dataset *d, long count, long features);
/* Samples a pick keeps, and one past the last record it keeps. */
long data_pick_count(const data_pick *p);
long data_pick_end(const data_pick *p);
/* -1 with a message unless the pick is well formed (lo <= hi, rows
 * ascending without repeats, nothing negative); `what` names the file. */
int data_pick_check(const data_pick *p, const char *what, char *err, size_t errlen);
/* The sample record `rec` becomes, or -1 when the pick drops it. Records
 * must be asked in ascending order with the same *cursor (start at 0). */
long data_pick_row(const data_pick *p, long rec, long *cursor);

/* Pick forms of the loaders (the range forms below are their [lo, hi)
 * cases). */
int data_idx_load_pick(const char *images_path, const char *labels_path, int num_classes,
                       const data_pick *pick, dataset *out, char *err, size_t errlen);
int data_cifar10_load_pick(const char *const *paths, int n_paths, int num_classes,
                           const data_pick *pick, dataset *out, char *err, size_t errlen);
/* pick NULL: every row. header: SPEC_HEADER_*; label_column -1: the last
 * column; targets: the label column holds regression targets (dataset.t,
 * num_classes must be 1), not classes. */
int data_csv_load_pick(const char *path, int label_column, int header, int num_classes,
                       bool targets, long expected_features, const data_pick *pick,
                       dataset *out, char *err, size_t errlen);
int data_synthetic_pick(const spec_shape *shape, long n, int num_classes, unsigned long seed,
                        const data_pick *pick, dataset *out, char *err, size_t errlen);

/* Range forms of the loaders: records [lo, hi) of the file(s), 0 <= lo <=
 * hi, with every check of the whole load (the whole file's structure and
 * every label are still checked, so the result, or the message, is the
 * whole load's sliced). hi past the records the file has is an error. */
int data_idx_load_range(const char *images_path, const char *labels_path, int num_classes,
                        long lo, long hi, dataset *out, char *err, size_t errlen);
/* Records the images file's header announces (the header alone is read). */
int data_idx_count(const char *images_path, long *n, char *err, size_t errlen);
int data_cifar10_load_range(const char *const *paths, int n_paths, int num_classes, long lo,
                            long hi, dataset *out, char *err, size_t errlen);
/* Records in the batches (plain files: their sizes; gzip: read through). */
int data_cifar10_count(const char *const *paths, int n_paths, long *n, char *err,
                       size_t errlen);
/* hi < 0: every row (data_csv_load). */
int data_csv_load_range(const char *path, int label_column, int header, int num_classes,
                        long expected_features, long lo, long hi, dataset *out, char *err,
                        size_t errlen);
/* Data rows (non-blank lines after the header); the rows are not parsed. */
int data_csv_count(const char *path, int header, long *n, char *err, size_t errlen);
int data_synthetic_range(const spec_shape *shape, long n, int num_classes, unsigned long seed,
                         long lo, long hi, dataset *out, char *err, size_t errlen);

/* npz (npzset.c): the x/y pair of `field` ("data.train", "data.test",
 * "data.validation"; each falls back to x/y): its records, or the pick's
 * (NULL: all), raw, shaped for `input` (NHWC transposed when it says
 * [C, H, W]); labels checked against data->num_classes, or float y
 * under data->float_targets kept as regression targets (dataset.t). */
int data_npz_count(const char *path, const char *field, long *n, char *err, size_t errlen);
int data_npz_load_pick(const char *path, const char *field, const spec_data *data,
                       const spec_shape *input, const data_pick *pick, dataset *out, char *err,
                       size_t errlen);

/* Sequences (sequence.c). data_seq_alloc: n samples of shape {T, F}, x
 * zeroed (padding), len (n), y of n labels or, per_step, n * T; sets
 * shape, features and label_steps; -1 when out of memory (d freed). */
int data_seq_alloc(dataset *d, long n, const spec_shape *shape, bool per_step);
/* Sample i of src into sample j of dst (same shape and label_steps): x,
 * its labels and its length. */
void data_seq_copy_sample(const dataset *src, long i, dataset *dst, long j);
/* The pick's samples of a set loaded whole (pick NULL: all of it, moved);
 * whole is freed either way; `what` names the file in messages. */
int data_seq_keep_pick(dataset *whole, const data_pick *pick, const char *what,
                       dataset *out, char *err, size_t errlen);

/* Text (text.c): the windows of the text at path, all or the pick's;
 * train_path is the training text, whose characters are the char
 * tokenizer's vocabulary. data_text_vocab: those characters, ascending
 * (malloc'd; *n of them). */
int data_text_load_pick(const char *path, const char *train_path, const spec_data *data,
                        const spec_shape *input, const data_pick *pick, dataset *out,
                        char *err, size_t errlen);
int data_text_vocab(const char *train_path, uint32_t **chars, int *n, char *err,
                    size_t errlen);

/* CTF (ctf.c): the sequences of a CNTK Text Format file, all or the
 * pick's. */
int data_ctf_load_pick(const char *path, const spec_data *data, const spec_shape *input,
                       const data_pick *pick, dataset *out, char *err, size_t errlen);

/* Allocate x (n * features floats) and y (n labels) of d, label_steps 1;
 * -1 when out of memory or the sizes overflow. */
int data_alloc(dataset *d, long n, long features);

/* 1 if path, with every symlink followed, lies inside one of the roots. */
int data_path_under_roots(const char *path, const dataset_roots *roots);

/* d->num_classes = num_classes, or 1 + the largest label when <= 0. */
void data_set_classes(dataset *d, int num_classes);

/* Synthetic test data draws from seed ^ this, so it is apart from the
 * train data drawn from seed ("TEST"). */
#define DATA_SYNTHETIC_TEST_SEED 0x54455354ULL

/* The data_batch_N.bin[.gz] files of a CIFAR-10 directory, in the order of
 * N (cifar10_dir.c), each checked to lie under the roots; `name` is the
 * dataset name for messages. *paths holds *n_paths >= 1 malloc'd paths;
 * free them with data_cifar10_dir_free. */
int data_cifar10_dir(const char *name, const char *dir, const dataset_roots *roots,
                     char ***paths, int *n_paths, char *err, size_t errlen);
void data_cifar10_dir_free(char **paths, int n);

/* One named set of the spec (source.c): `name` (data->train, ->test or
 * ->validation) resolved under the roots, `field` ("data.train") naming it
 * in messages. data_source_count counts its records (CTF and text, read
 * whole to count, need model.input); data_source_load
 * reads them, all (pick NULL) or the pick's, raw, and checks the samples
 * against model.input (`input`), whose shape they then take. */
int data_source_count(const spec_data *data, const char *field, const char *name,
                      const spec_shape *input, const dataset_roots *roots, long *n, char *err,
                      size_t errlen);
int data_source_load(const spec_data *data, const char *field, const char *name,
                     const spec_shape *input, const dataset_roots *roots, const data_pick *pick,
                     dataset *out, char *err, size_t errlen);

/* The layout of sets whose sources hold n_train, n_val (data.validation's)
 * and n_test records (layout.c): the subsets and the validation split,
 * with dataset_load_all's messages. */
int data_layout_cut(const spec_data *data, long n_train, long n_val, long n_test,
                    dataset_layout *out, char *err, size_t errlen);
/* Cut whole sets to lay: test and train to their first n_test and n_train
 * samples, and, when lay splits, train's records [val_first, val_first +
 * n_val) copied into val (empty before). */
int data_layout_apply(const dataset_layout *lay, dataset *train, dataset *val, dataset *test,
                      char *err, size_t errlen);

/* Scale the three sets with statistics of the whole train set in memory
 * (scaling.c); dataset_apply_scaling with what a whole load knows. */
int data_scaling_whole(const spec_data *data, dataset *train, dataset *val, dataset *test,
                       char *err, size_t errlen);

#endif
