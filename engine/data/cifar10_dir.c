/* cifar10_dir.c — the batch files of a CIFAR-10 directory: every
 * data_batch_N.bin[.gz] in it, in batch order. The order is N's numeric
 * order, not readdir's or the names' (data_batch_10 comes after
 * data_batch_9), because it fixes record numbers, and so which records a
 * subset, a split or a distributed rank gets. */
#include "data_internal.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

/* The N of "data_batch_N.bin" or "data_batch_N.bin.gz"; -1 for other
 * files (test_batch.bin, batches.meta.txt, ...). */
static long cifar_dir_batch_number(const char *fname)
{
    if (strncmp(fname, "data_batch_", 11) != 0)
        return -1;
    char *end;
    long k = strtol(fname + 11, &end, 10);
    if (end == fname + 11 || (strcmp(end, ".bin") != 0 && strcmp(end, ".bin.gz") != 0))
        return -1;
    return k;
}

static int cifar_dir_cmp(const void *a, const void *b)
{
    const char *const *pa = a, *const *pb = b;
    long x = cifar_dir_batch_number(io_basename(*pa));
    long y = cifar_dir_batch_number(io_basename(*pb));
    return (x > y) - (x < y);
}

void data_cifar10_dir_free(char **paths, int n)
{
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
}

int data_cifar10_dir(const char *name, const char *dir, const dataset_roots *roots,
                     char ***paths, int *n_paths, char *err, size_t errlen)
{
    *paths = NULL;
    *n_paths = 0;
    DIR *d = opendir(dir);
    if (!d)
        return io_errf(err, errlen, "dataset \"%s\": cannot open %s", name, dir);
    char **list = NULL;
    int n = 0, cap = 0, rc = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (cifar_dir_batch_number(e->d_name) < 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            char **nl = realloc(list, (size_t)cap * sizeof *nl);
            if (!nl) {
                io_errf(err, errlen, "dataset \"%s\": out of memory", name);
                goto done;
            }
            list = nl;
        }
        int len = snprintf(NULL, 0, "%s/%s", dir, e->d_name);
        if (len < 0 || len >= PATH_MAX) {
            io_errf(err, errlen, "dataset \"%s\": path too long", name);
            goto done;
        }
        list[n] = malloc((size_t)len + 1);
        if (!list[n]) {
            io_errf(err, errlen, "dataset \"%s\": out of memory", name);
            goto done;
        }
        snprintf(list[n], (size_t)len + 1, "%s/%s", dir, e->d_name);
        n++;
        /* A batch may itself be a symlink: it too must stay under a root. */
        if (!data_path_under_roots(list[n - 1], roots)) {
            io_errf(err, errlen, "dataset \"%s\": %s leads outside the dataset roots", name,
                    e->d_name);
            goto done;
        }
    }
    if (n == 0) {
        io_errf(err, errlen, "dataset \"%s\": no data_batch_*.bin files in %s", name, dir);
        goto done;
    }
    qsort(list, (size_t)n, sizeof *list, cifar_dir_cmp);
    *paths = list;
    *n_paths = n;
    list = NULL;
    rc = 0;
done:
    closedir(d);
    data_cifar10_dir_free(list, n);
    return rc;
}
