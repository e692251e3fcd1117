/* tensorfile_tool.c — the C side of check_numpy.py, which checks our files
 * against numpy and Python's own parsers:
 *   tensorfile_tool write DIR          write DIR/w.safetensors and DIR/w.npz
 *   tensorfile_tool dump FILE          print every tensor read from FILE
 *   tensorfile_tool perm N SEED EPOCH  print dataset_epoch_permutation
 *   tensorfile_tool idx ROOT NAME      load an IDX pair raw, print sums
 * The values written are t[i][k] = (k - 7) * 0.125 + i, float32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "io/tensorfile.h"

static int tool_write(const char *dir)
{
    static const struct {
        const char *name;
        int rank;
        long dims[4];
    } shapes[] = {
        {"0.dense.weight", 2, {6, 5}},
        {"0.dense.bias", 1, {5}},
        {"2.conv2d.weight", 4, {4, 2, 3, 3}},
        {"3.batchnorm.running_var", 1, {4}},
        {"step", 0, {0}},
    };
    enum { N = sizeof shapes / sizeof shapes[0] };
    tensor_entry t[N];
    for (int i = 0; i < N; i++) {
        memset(&t[i], 0, sizeof t[i]);
        strcpy(t[i].name, shapes[i].name);
        t[i].rank = shapes[i].rank;
        memcpy(t[i].dims, shapes[i].dims, sizeof t[i].dims);
        long size = tensor_entry_size(&t[i]);
        t[i].data = malloc((size_t)size * sizeof(float));
        if (!t[i].data)
            return 1;
        for (long k = 0; k < size; k++)
            t[i].data[k] = (float)(k - 7) * 0.125f + (float)i;
    }
    char path[4096], err[1024];
    const char *keys[1] = {"writer"}, *vals[1] = {"punch"};
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    int rc = safetensors_write(path, t, N, keys, vals, 1, err, sizeof err);
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/w.npz", dir);
        rc = npz_write(path, t, N, err, sizeof err);
    }
    if (rc != 0)
        fprintf(stderr, "tensorfile_tool: %s\n", err);
    for (int i = 0; i < N; i++)
        free(t[i].data);
    return rc == 0 ? 0 : 1;
}

static int tool_dump(const char *path)
{
    tensor_entry *t;
    int n;
    char err[1024];
    size_t len = strlen(path);
    int npz = len > 4 && strcmp(path + len - 4, ".npz") == 0;
    if ((npz ? npz_read : safetensors_read)(path, &t, &n, err, sizeof err) != 0) {
        printf("error %s\n", err);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        printf("%s", t[i].name);
        printf(" %d", t[i].rank);
        for (int d = 0; d < t[i].rank; d++)
            printf(" %ld", t[i].dims[d]);
        long size = tensor_entry_size(&t[i]);
        for (long k = 0; k < size; k++)
            printf(" %.9g", (double)t[i].data[k]);
        printf("\n");
    }
    tensorfile_free(t, n);
    return 0;
}

static int tool_perm(long n, unsigned long seed, int epoch)
{
    int64_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p)
        return 1;
    dataset_epoch_permutation(n, seed, epoch, p);
    for (long i = 0; i < n; i++)
        printf("%lld%c", (long long)p[i], i + 1 < n ? ' ' : '\n');
    free(p);
    return 0;
}

static int tool_idx(const char *root, const char *name)
{
    const char *dirs[1] = {root};
    dataset_roots roots = {dirs, 1};
    char p1[4096], p2[4096], err[2048];
    dataset d;
    if (dataset_resolve(DATA_IDX, name, &roots, p1, p2, sizeof p1, err, sizeof err) != 0 ||
        dataset_load_idx(p1, p2, &d, err, sizeof err) != 0) {
        printf("error %s\n", err);
        return 1;
    }
    double px = 0, first = 0;
    long long labels = 0;
    for (long i = 0; i < d.n * d.features; i++)
        px += d.x[i];
    for (long k = 0; k < d.features; k++)
        first += d.x[k] * (double)(k + 1);
    for (long i = 0; i < d.n; i++)
        labels += (long long)d.y[i] * (i % 7 + 1);
    printf("%ld %ld %d %d %d %.0f %.0f %lld\n", d.n, d.features, d.shape.dim[0],
           d.shape.dim[1], d.shape.dim[2], px, first, labels);
    dataset_free(&d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return tool_write(argv[2]);
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return tool_dump(argv[2]);
    if (argc == 5 && strcmp(argv[1], "perm") == 0)
        return tool_perm(atol(argv[2]), strtoul(argv[3], NULL, 10), atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "idx") == 0)
        return tool_idx(argv[2], argv[3]);
    fprintf(stderr, "usage: tensorfile_tool write DIR | dump FILE | perm N SEED EPOCH | "
                    "idx ROOT NAME\n");
    return 2;
}
