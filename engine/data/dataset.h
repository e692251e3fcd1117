/* dataset.h — training data in memory: loaders for IDX (MNIST, Fashion-MNIST;
 * gzipped or not), CIFAR-10 binary batches, CSV and synthetic data, scaling,
 * validation split and the seeded per-epoch shuffle.
 *
 * Dataset names from the spec resolve under the configured roots only (see
 * spec_dataset_name_ok); a name that is not found under any root is an error
 * naming the roots searched. */
#ifndef PUNCH_DATASET_H
#define PUNCH_DATASET_H

#include <stdint.h>

#include "io/tensorfile.h"
#include "jobspec/spec.h"

typedef struct dataset {
    long n;            /* samples */
    long features;     /* floats per sample = spec_shape_size(&shape) */
    spec_shape shape;  /* per-sample shape: {C, H, W} for images, {F} for CSV */
    int num_classes;
    float *x;          /* (n, features), already scaled */
    int32_t *y;        /* (n,) class labels in [0, num_classes) */
    /* Regression: (n, num_classes) float targets, the model's wanted
     * outputs as they are (npz float y under training.loss mse); y then
     * holds zeros. NULL for class labels. */
    float *t;
    /* The train set only: the scaling that was applied, per feature, as
     * x' = (x - shift) * factor, so that whoever uses the trained model can
     * prepare new inputs the same way (saved with the weights as
     * input.shift and input.factor). NULL when data.scaling is none. */
    float *shift, *factor;
    /* Sequences (shape {T, F}): each sample's real length in [1, T], its
     * steps from there on zero; NULL when every sample is T long (and for
     * images and tables). */
    int32_t *len;
    /* 1, or T when each step has its own label (data.per_step_labels): y
     * is then (n, T) with -1 at padding steps, t (n, T, num_classes). */
    long label_steps;
} dataset;

/* Roots that dataset names resolve under. */
typedef struct dataset_roots {
    const char *const *dirs;
    int n;
} dataset_roots;

/* Load the train, validation and test sets of `data` as the spec says:
 * train (first train_samples of it), a validation set (data.validation or
 * the last validation_split of train, before any shuffle, split at
 * Keras's int(n * (1 - split))), test (first test_samples; n = 0 and
 * x = NULL when data.test is NULL; likewise val without a split). Scaling
 * statistics come from the train part only and are applied to all three:
 * unit divides byte data (IDX, CIFAR-10, synthetic) by 255 and CSV by the
 * largest absolute train value; standard uses the per-feature train mean
 * and (population) standard deviation. Synthetic data draws from `seed`.
 * Each set's shape becomes model.input. `input` is model.input: loaded
 * samples must have that many features (a mismatch is an error that gives
 * both shapes). On error return -1 with a one-line message in err naming
 * the file and record ("train-images-idx3-ubyte.gz: truncated after 59,872
 * of 60,000 images"); nothing is left allocated. */
int dataset_load_all(const spec_data *data, const spec_shape *input,
                     const dataset_roots *roots, unsigned long seed,
                     dataset *train, dataset *val, dataset *test,
                     char *err, size_t errlen);

/* Single loaders, used by dataset_load_all and the tests. `path` is a full
 * path (already resolved); for IDX it is the images file and, when
 * labels_path is NULL, the labels file is derived by the usual naming
 * (…-images-idx3-ubyte[.gz] → …-labels-idx1-ubyte[.gz]). Any file may be
 * gzipped (detected by its magic bytes). Raw values, unscaled (bytes become
 * 0..255). These do not check labels against a class count (except CSV,
 * which takes num_classes; <= 0 means no check): dataset_load_all does.
 * Messages name the file's base name and the record, 1-based:
 *   "t10k-images-idx3-ubyte.gz: truncated after 9,000 of 10,000 images"
 *   "train-labels-idx1-ubyte.gz: record 17 of 60,000: label 12 out of range [0, 10)"
 *   "data_batch_3.bin: truncated record 10,000 (2,073 of 3,073 bytes)"
 *   "data.csv:17: 783 features, expected 784" (CSV: line numbers)
 *   "data.csv:4: field 3 "abc" is not a number"
 *   "x.gz: corrupt gzip data (invalid distance too far back)", "x: empty file"
 * CSV: fields are comma separated, blank lines skipped, CRLF accepted, the
 * label an integral number; CIFAR-10 samples are {3, 32, 32}, IDX
 * {1, rows, cols}, CSV {features}. Synthetic inputs are whole numbers in
 * 0..255 (scaled like bytes) and labels uniform in [0, num_classes), both
 * from (seed) alone. */
int dataset_load_idx(const char *images_path, const char *labels_path,
                     dataset *out, char *err, size_t errlen);
int dataset_load_cifar10(const char *const *batch_paths, int n_paths,
                         dataset *out, char *err, size_t errlen);
int dataset_load_csv(const char *path, int label_column, int header,
                     int num_classes, dataset *out, char *err, size_t errlen);
int dataset_synthetic(const spec_shape *shape, long n, int num_classes,
                      unsigned long seed, dataset *out, char *err, size_t errlen);

/* Resolve a dataset name for `format` under the roots, tried in order: for
 * IDX the name "fashion-mnist/train" is the pair
 * fashion-mnist/train-images-idx3-ubyte[.gz] and
 * …/train-labels-idx1-ubyte[.gz] (the images file may also be named in
 * full; "-images.idx3-ubyte" naming is accepted too); for CIFAR-10 a
 * directory of data_batch_*.bin (path1 is the directory), a single file
 * NAME[.bin][.gz], or "DIR/train" (DIR's batches) and "DIR/test"
 * (DIR/test_batch.bin); for CSV NAME[.csv][.gz]; npz NAME[.npz]; CTF
 * NAME[.ctf][.txt]; text NAME[.txt]. Writes real paths (every
 * symlink followed) into path1 (and path2, the IDX labels; "" otherwise);
 * nothing for synthetic data. -1 with a message if the name is unsafe
 * (spec_dataset_name_ok), if what it finds leads outside its root through
 * a symlink, or if it is not found (the message lists the roots). */
int dataset_resolve(spec_data_format format, const char *name,
                    const dataset_roots *roots,
                    char *path1, char *path2, size_t pathlen,
                    char *err, size_t errlen);

void dataset_free(dataset *d);

/* The char tokenizer's vocabulary (data.format text, data.tokenizer
 * char): the distinct code points of data.train in ascending order, token
 * id i being (*chars)[i]; *chars is malloc'd, *n entries. For any other
 * data, *chars = NULL and *n = 0. -1 with a message naming the file
 * (file:line for invalid UTF-8). */
int dataset_text_vocab(const spec_data *data, const dataset_roots *roots, uint32_t **chars,
                       int *n, char *err, size_t errlen);

/* ---- the sets in parts ------------------------------------------------
 * A distributed run loads each rank's share instead of whole sets: the
 * sets are numbered as dataset_load_all defines them (train_samples and
 * the validation split on the train source's records), each rank loads a
 * range, and the scaling statistics, which must come from the whole train
 * part, are combined from per-part sums by the caller. This module stays
 * free of MPI. */

/* Where the sets lie, from the sources' record counts (headers and file
 * sizes; a CSV file is scanned for rows, gzip data read through). */
typedef struct dataset_layout {
    long n_train;     /* the train part: records [0, n_train) of the train source */
    long n_val;       /* validation samples (0: none) */
    long val_first;   /* >= 0: the split, records [val_first, val_first + n_val)
                         of the train source; -1: data.validation's own records */
    long n_test;      /* test: records [0, n_test) of the test source (0: none) */
} dataset_layout;

/* The layout of `data`; errors as dataset_load_all's (subset sizes, an
 * empty split, a missing set). */
int dataset_layout_of(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, dataset_layout *out, char *err,
                      size_t errlen);

typedef enum dataset_part {
    DATASET_PART_TRAIN,
    DATASET_PART_VAL,
    DATASET_PART_TEST,
} dataset_part;

/* Samples [lo, hi) of one set, raw (unscaled), equal to that slice of
 * dataset_load_all's set before scaling. The files are checked as in a
 * whole load (structure, gzip integrity, every label), so a range fails
 * with the whole load's message; memory is the range's floats plus small
 * buffers (IDX: seek or streamed gunzip; CIFAR-10: one batch file at a
 * time; CSV: the file's text while parsing; CTF and text: the whole set
 * while parsing, a record's place being known only from what precedes
 * it). Sequences keep their lengths (len) and per-step labels. An empty
 * range still gives features, shape and num_classes. */
int dataset_load_part(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, unsigned long seed,
                      const dataset_layout *lay, dataset_part part, long lo, long hi,
                      dataset *out, char *err, size_t errlen);

/* Train samples at a list of records: sample i of out is record rows[i] of
 * the train part (rows ascending without repeats, each below
 * lay->n_train), raw (unscaled) and equal to that sample of
 * dataset_load_part's train part, the files checked as a range load
 * checks them (same messages). The files are read once, keeping only
 * those records: IDX seeks to each record of a plain file and inflates a
 * gzipped one once through; CIFAR-10 reads one batch file at a time; CSV
 * the file's text. With `bytes` (byte-valued data only, see
 * dataset_byte_valued), the values go there, m x features bytes, and
 * out->x is NULL: a quarter of the floats' memory. */
int dataset_load_rows(const spec_data *data, const spec_shape *input,
                      const dataset_roots *roots, unsigned long seed,
                      const dataset_layout *lay, const int64_t *rows, long m, uint8_t *bytes,
                      dataset *out, char *err, size_t errlen);
/* Whether data's raw values are whole numbers in 0..255 (IDX, CIFAR-10,
 * synthetic; not CSV, nor npz, whose unit scaling divides by the largest
 * |x| of train, 255 for typical uint8 images). */
bool dataset_byte_valued(const spec_data *data);

/* Scaling statistics of a part, to be combined over parts: per-feature
 * sums (add into sum), squared deviations from a given mean (add into
 * m2), and the largest absolute value (combine with max). */
void dataset_stats_sum(const dataset *d, double *sum);
void dataset_stats_m2(const dataset *d, const double *mean, double *m2);
float dataset_stats_max_abs(const dataset *d);

/* Statistics of the whole train part. */
typedef struct dataset_scaling_stats {
    double n;             /* train samples */
    const double *mean;   /* standard: per-feature sum / n */
    const double *m2;     /* standard: per-feature squared deviations from mean */
    float max_abs;        /* unit scaling of CSV data: the largest |x| of train */
} dataset_scaling_stats;

/* Scale the sets as data.scaling says with the given statistics (the
 * arithmetic of dataset_load_all's) and record the scaling on train (its
 * features and shape must be set; n may be 0). val/test may be empty. */
int dataset_apply_scaling(const spec_data *data, const dataset_scaling_stats *st,
                          dataset *train, dataset *val, dataset *test, char *err,
                          size_t errlen);

/* The train set's scaling as two tensors of the sample shape, "input.shift"
 * and "input.factor", pointing into `train` (written next to the weights).
 * Returns how many entries it filled: 2, or 0 when no scaling was applied. */
int dataset_scaling_tensors(const dataset *train, tensor_entry out[2]);

/* The permutation of [0, n) used in `epoch` for `seed`: the same for any
 * number of ranks, so a rank takes its shard as a slice of it. perm has n
 * entries. Deterministic (its own PRNG, not rand()): Fisher-Yates from the
 * end with xoshiro256** seeded by splitmix64 from (seed, epoch); see
 * engine/data/rng.c and the Python twin in tests/data/check_numpy.py. */
void dataset_epoch_permutation(long n, unsigned long seed, int epoch, int64_t *perm);

/* data.bucket_by_length: rearrange positions [lo, hi) of an epoch's order
 * so that each batch of `batch` positions from lo holds sequences of
 * similar lengths (len[record], record ids as perm holds them). The range
 * is cut into chunks of 64 batches, each sorted by length (ties keep the
 * shuffled order), and the full batches are then shuffled from (seed, lo,
 * epoch); a short last batch stays last. Every record stays in [lo, hi),
 * so a trainer's slices keep their samples; deterministic, so every rank
 * and a resumed run compute the same order. len NULL or a single batch:
 * nothing changes. -1 when out of memory (perm unchanged). */
int dataset_bucket_order(int64_t *perm, long lo, long hi, const int32_t *len, long batch,
                         unsigned long seed, int epoch);
/* Steps a batch runs over when padded to its longest sequence, summed over
 * the batches of perm[0, n) (the measure bucketing lowers). */
long dataset_padded_steps(const int64_t *perm, long n, const int32_t *len, long batch);

/* ---- augmentation (data.augment) --------------------------------------- */

/* Whether a asks for any transform. */
bool dataset_augment_on(const spec_augment *a);

/* Transform one training sample x (shape's floats, already scaled; the
 * spec library has checked that shape is {C, H, W} with room for the
 * crop) in place: with probability flip_prob mirror every row left-right, then with
 * probability crop_prob keep a crop_size square at a uniformly drawn
 * position and set everything outside it to 0. The draws depend on
 * (seed, epoch, sample) alone. */
void dataset_augment_sample(const spec_augment *a, const spec_shape *shape, unsigned long seed,
                            int epoch, int64_t sample, float *x);

#endif
