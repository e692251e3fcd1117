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

#include "spec.h"

typedef struct dataset {
    long n;            /* samples */
    long features;     /* floats per sample = spec_shape_size(&shape) */
    spec_shape shape;  /* per-sample shape: {C, H, W} for images, {F} for CSV */
    int num_classes;
    float *x;          /* (n, features), already scaled */
    int32_t *y;        /* (n,) class labels in [0, num_classes) */
} dataset;

/* Roots that dataset names resolve under. */
typedef struct dataset_roots {
    const char *const *dirs;
    int n;
} dataset_roots;

/* Load the train, validation and test sets of `data` as the spec says:
 * train (first train_samples of it), a validation set (data.validation or
 * the last validation_split of train, before any shuffle), test (may be
 * empty when data.test is NULL). Scaling statistics come from the train
 * part only and are applied to all three. `input` is model.input: loaded
 * samples must have that many features (a mismatch is an error that gives
 * both shapes). On error return -1 with a one-line message in err naming
 * the file and record ("train-images-idx3-ubyte.gz: truncated after 59,872
 * of 60,000 images"); nothing is left allocated. */
int dataset_load_all(const spec_data *data, const spec_shape *input,
                     const dataset_roots *roots, unsigned long seed,
                     dataset *train, dataset *val, dataset *test,
                     char *err, size_t errlen);

/* Single loaders, used by dataset_load_all and the tests. `path` is a full
 * path (already resolved); for IDX it is the images file and the labels
 * file is derived by the usual naming (…-images-idx3-ubyte[.gz] →
 * …-labels-idx1-ubyte[.gz]). Raw values, unscaled (bytes become 0..255). */
int dataset_load_idx(const char *images_path, const char *labels_path,
                     dataset *out, char *err, size_t errlen);
int dataset_load_cifar10(const char *const *batch_paths, int n_paths,
                         dataset *out, char *err, size_t errlen);
int dataset_load_csv(const char *path, int label_column, bool header,
                     int num_classes, dataset *out, char *err, size_t errlen);
int dataset_synthetic(const spec_shape *shape, long n, int num_classes,
                      unsigned long seed, dataset *out, char *err, size_t errlen);

/* Resolve a dataset name for `format` under the roots: for IDX the name
 * "fashion-mnist/train" is the pair fashion-mnist/train-images-idx3-ubyte[.gz]
 * and …/train-labels-idx1-ubyte[.gz]; for CIFAR-10 a directory of
 * data_batch_*.bin (train) or a single .bin file; for CSV the file itself
 * (".csv" optional). Writes the resolved paths; -1 with a message if the
 * name is unsafe or not found. */
int dataset_resolve(spec_data_format format, const char *name,
                    const dataset_roots *roots,
                    char *path1, char *path2, size_t pathlen,
                    char *err, size_t errlen);

void dataset_free(dataset *d);

/* The permutation of [0, n) used in `epoch` for `seed`: the same for any
 * number of ranks, so a rank takes its shard as a slice of it. perm has n
 * entries. Deterministic (its own PRNG, not rand()). */
void dataset_epoch_permutation(long n, unsigned long seed, int epoch, int64_t *perm);

#endif
