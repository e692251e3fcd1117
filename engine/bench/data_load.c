/* data_load.c — how long loading a dataset takes: `punch-bench-load ROOT NAME`
 * (IDX format), e.g. `punch-bench-load /usr/share/datasets fashion-mnist/train`.
 * Prints samples, features and wall time for the raw load and for
 * dataset_load_all with unit scaling, and for dataset_load_rows of one
 * asynchronous worker's epoch slice (half and a third of a permutation,
 * as bytes). Not a test: it prints figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/dataset.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_load ROOT NAME\n");
        return 2;
    }
    const char *dirs[1] = {argv[1]};
    dataset_roots roots = {dirs, 1};
    char p1[4096], p2[4096], err[1024];
    if (dataset_resolve(DATA_IDX, argv[2], &roots, p1, p2, sizeof p1, err, sizeof err) != 0) {
        fprintf(stderr, "bench_load: %s\n", err);
        return 1;
    }
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        dataset d;
        if (dataset_load_idx(p1, p2, &d, err, sizeof err) != 0) {
            fprintf(stderr, "bench_load: %s\n", err);
            return 1;
        }
        double t1 = now();
        printf("dataset_load_idx %s: %ld samples x %ld features (%.1f MB of bytes) in %.3f s\n",
               argv[2], d.n, d.features, d.n * d.features / 1e6, t1 - t0);
        dataset_free(&d);
    }
    spec_data data;
    memset(&data, 0, sizeof data);
    data.format = DATA_IDX;
    data.train = argv[2];
    data.scaling = SCALE_UNIT;
    data.num_classes = 10;
    data.validation_split = 0.1;
    dataset tr, va, te;
    double t0 = now();
    spec_shape input = {3, {1, 28, 28}};
    if (dataset_load_all(&data, &input, &roots, 1, &tr, &va, &te, err, sizeof err) != 0) {
        fprintf(stderr, "bench_load: %s\n", err);
        return 1;
    }
    printf("dataset_load_all (unit scaling, validation_split 0.1): %ld train + %ld val in %.3f s\n",
           tr.n, va.n, now() - t0);
    dataset_free(&tr);
    dataset_free(&va);
    dataset_free(&te);
    data.validation_split = 0;
    dataset_layout lay;
    if (dataset_layout_of(&data, &input, &roots, &lay, err, sizeof err) != 0) {
        fprintf(stderr, "bench_load: %s\n", err);
        return 1;
    }
    long n = lay.n_train;
    int64_t *perm = malloc((size_t)n * sizeof *perm), *rows = malloc((size_t)n * sizeof *rows);
    char *take = malloc((size_t)n);
    uint8_t *bytes = malloc((size_t)n * 784);
    if (!perm || !rows || !take || !bytes)
        return 1;
    dataset_epoch_permutation(n, 1, 0, perm);
    for (int W = 2; W <= 3; W++) {
        memset(take, 0, (size_t)n);
        for (long p = 0; p < n / W; p++)
            take[perm[p]] = 1;
        long m = 0;
        for (long g = 0; g < n; g++)
            if (take[g])
                rows[m++] = g;
        for (int rep = 0; rep < 3; rep++) {
            dataset d;
            t0 = now();
            if (dataset_load_rows(&data, &input, &roots, 1, &lay, rows, m, bytes, &d, err,
                                  sizeof err) != 0) {
                fprintf(stderr, "bench_load: %s\n", err);
                return 1;
            }
            printf("dataset_load_rows: a worker's slice of %d (%ld samples, bytes) in %.3f s\n",
                   W, m, now() - t0);
            dataset_free(&d);
        }
    }
    free(perm);
    free(rows);
    free(take);
    free(bytes);
    return 0;
}
