/* bench_load.c — how long loading a dataset takes: `bench_load ROOT NAME`
 * (IDX format), e.g. `bench_load /usr/share/datasets fashion-mnist/train`.
 * Prints samples, features and wall time for the raw load and for
 * dataset_load_all with unit scaling. Not a test: it prints figures. */
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
    return 0;
}
