/* resolve.c — dataset names to files, under the configured roots only.
 * A name must pass spec_dataset_name_ok (relative, no "..", no hidden
 * components), and the file it finds must still lie under the root once
 * every symlink is followed (realpath), so neither a crafted name nor a
 * symlink planted in a dataset directory reaches anything else. */
#include "data_internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io_file.h"

typedef enum { FOUND_NONE, FOUND_FILE, FOUND_DIR } found_kind;

/* Does root_real/rel exist, and does it stay inside root_real? Returns the
 * kind found (with its real path in real) or FOUND_NONE; -1 with a message
 * when it exists but escapes the root. */
static int resolve_inside(const char *root_real, const char *rel, const char *name,
                          char *real, char *err, size_t errlen)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", root_real, rel);
    struct stat st;
    if (stat(path, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
        return FOUND_NONE;
    if (!realpath(path, real))
        return FOUND_NONE;
    size_t rl = strlen(root_real);
    int inside = strcmp(root_real, "/") == 0 ||
                 (strncmp(real, root_real, rl) == 0 && real[rl] == '/');
    if (!inside)
        return io_errf(err, errlen, "dataset \"%s\": %s leads outside the dataset root %s "
                       "(symlink to %s)", name, rel, root_real, real);
    return S_ISDIR(st.st_mode) ? FOUND_DIR : FOUND_FILE;
}

/* Try rel with each suffix; first match wins. */
static int resolve_try(const char *root_real, const char *name, const char *rel,
                       const char *const *suffixes, found_kind want, char *out, size_t outlen,
                       char *err, size_t errlen)
{
    for (int i = 0; suffixes[i]; i++) {
        char cand[PATH_MAX], real[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof cand, "%s%s", rel, suffixes[i]) >= sizeof cand)
            continue;
        int k = resolve_inside(root_real, cand, name, real, err, errlen);
        if (k < 0)
            return -1;
        if (k != (int)want)
            continue;
        if (strlen(real) >= outlen)
            return io_errf(err, errlen, "dataset \"%s\": path too long", name);
        strcpy(out, real);
        return 1;
    }
    return 0;
}

static const char *const idx_suffixes[] = {"", ".gz", NULL};

/* IDX: "dir/train" is dir/train-images-idx3-ubyte[.gz] with its labels;
 * a name that already ends in -images-idx3-ubyte[.gz] is taken as is. */
static int resolve_idx(const char *root_real, const char *name, char *p1, char *p2,
                       size_t len, char *err, size_t errlen)
{
    static const char *const styles[][2] = {
        {"-images-idx3-ubyte", "-labels-idx1-ubyte"},
        {"-images.idx3-ubyte", "-labels.idx1-ubyte"},
    };
    char stem[PATH_MAX];
    snprintf(stem, sizeof stem, "%s", name);
    size_t sl = strlen(stem);
    if (sl > 3 && strcmp(stem + sl - 3, ".gz") == 0)
        stem[sl -= 3] = 0;
    for (int s = 0; s < 2; s++) {
        size_t tl = strlen(styles[s][0]);
        if (sl > tl && strcmp(stem + sl - tl, styles[s][0]) == 0) {
            stem[sl - tl] = 0;
            break;
        }
    }
    for (int s = 0; s < 2; s++) {
        char rel[PATH_MAX];
        snprintf(rel, sizeof rel, "%s%s", stem, styles[s][0]);
        int rc = resolve_try(root_real, name, rel, idx_suffixes, FOUND_FILE, p1, len, err,
                             errlen);
        if (rc <= 0) {
            if (rc < 0)
                return -1;
            continue;
        }
        snprintf(rel, sizeof rel, "%s%s", stem, styles[s][1]);
        rc = resolve_try(root_real, name, rel, idx_suffixes, FOUND_FILE, p2, len, err, errlen);
        if (rc == 0)
            return io_errf(err, errlen, "dataset \"%s\": found %s but no labels file %s[.gz] "
                           "next to it", name, io_basename(p1), io_basename(rel));
        return rc;
    }
    return 0;
}

static const char *const csv_suffixes[] = {"", ".csv", ".csv.gz", ".gz", NULL};
static const char *const npz_suffixes[] = {"", ".npz", NULL};
static const char *const ctf_suffixes[] = {"", ".ctf", ".txt", ".ctf.txt", NULL};
static const char *const text_suffixes[] = {"", ".txt", NULL};

/* The suffixes a single-file format's names may leave out. */
static const char *const *resolve_suffixes(spec_data_format f)
{
    return f == DATA_NPZ ? npz_suffixes
         : f == DATA_CTF ? ctf_suffixes
         : f == DATA_TEXT ? text_suffixes
                          : csv_suffixes;
}
static const char *const bin_suffixes[] = {"", ".bin", ".bin.gz", NULL};
static const char *const dir_suffixes[] = {"", NULL};

/* CIFAR-10: a directory of data_batch_*.bin, a single batch file, or
 * "dir/train" / "dir/test" for dir's data batches / test_batch.bin. */
static int resolve_cifar(const char *root_real, const char *name, char *p1, size_t len,
                         char *err, size_t errlen)
{
    int rc = resolve_try(root_real, name, name, dir_suffixes, FOUND_DIR, p1, len, err, errlen);
    if (rc == 0)
        rc = resolve_try(root_real, name, name, bin_suffixes, FOUND_FILE, p1, len, err, errlen);
    if (rc != 0)
        return rc;
    const char *base = io_basename(name);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%.*s", (int)(base - name), name);
    if (!parent[0])
        return 0;
    if (strcmp(base, "train") == 0)
        return resolve_try(root_real, name, parent, dir_suffixes, FOUND_DIR, p1, len, err,
                           errlen);
    if (strcmp(base, "test") == 0) {
        strncat(parent, "test_batch", sizeof parent - strlen(parent) - 1);
        return resolve_try(root_real, name, parent, bin_suffixes, FOUND_FILE, p1, len, err,
                           errlen);
    }
    return 0;
}

/* What was looked for, with the name filled in, for the not-found message. */
static void resolve_looked_for(spec_data_format f, const char *name, char *buf, size_t len)
{
    switch (f) {
    case DATA_IDX:
        snprintf(buf, len, "%s-images-idx3-ubyte[.gz] and %s-labels-idx1-ubyte[.gz]", name,
                 io_basename(name));
        break;
    case DATA_CIFAR10:
        snprintf(buf, len, "a directory %s of data_batch_*.bin, or %s[.bin]", name, name);
        break;
    case DATA_NPZ:
        snprintf(buf, len, "%s[.npz]", name);
        break;
    case DATA_CTF:
        snprintf(buf, len, "%s[.ctf][.txt]", name);
        break;
    case DATA_TEXT:
        snprintf(buf, len, "%s[.txt]", name);
        break;
    default:
        snprintf(buf, len, "%s[.csv][.gz]", name);
        break;
    }
}

int dataset_resolve(spec_data_format format, const char *name, const dataset_roots *roots,
                    char *path1, char *path2, size_t pathlen, char *err, size_t errlen)
{
    if (pathlen > 0) {
        path1[0] = 0;
        if (path2)
            path2[0] = 0;
    }
    if (format == DATA_SYNTHETIC)
        return 0;
    const char *why = NULL;
    if (!name)
        return io_errf(err, errlen, "no dataset name given");
    if (!spec_dataset_name_ok(name, &why))
        return io_errf(err, errlen, "dataset name \"%.80s\" %s", name, why);
    if (format == DATA_IDX && !path2)
        return io_errf(err, errlen, "dataset \"%s\": IDX needs two paths", name);
    if (!roots || roots->n <= 0)
        return io_errf(err, errlen, "dataset \"%s\": no dataset roots configured", name);

    char searched[1024] = "";
    for (int r = 0; r < roots->n; r++) {
        const char *root = roots->dirs[r];
        size_t used = strlen(searched);
        snprintf(searched + used, sizeof searched - used, "%s%s", used ? ", " : "", root);
        char root_real[PATH_MAX];
        if (!root || !realpath(root, root_real))
            continue;
        int rc = 0;
        if (format == DATA_IDX)
            rc = resolve_idx(root_real, name, path1, path2, pathlen, err, errlen);
        else if (format == DATA_CIFAR10)
            rc = resolve_cifar(root_real, name, path1, pathlen, err, errlen);
        else
            rc = resolve_try(root_real, name, name, resolve_suffixes(format), FOUND_FILE,
                             path1, pathlen, err, errlen);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    char looked[700];
    resolve_looked_for(format, name, looked, sizeof looked);
    return io_errf(err, errlen, "dataset \"%s\" (%s) not found: looked for %s under %s", name,
                   spec_data_format_name(format), looked, searched);
}

/* Is path, with symlinks followed, inside one of the roots? */
int data_path_under_roots(const char *path, const dataset_roots *roots)
{
    char real[PATH_MAX], root_real[PATH_MAX];
    if (!realpath(path, real))
        return 0;
    for (int r = 0; r < roots->n; r++) {
        if (!roots->dirs[r] || !realpath(roots->dirs[r], root_real))
            continue;
        size_t rl = strlen(root_real);
        if (strcmp(root_real, "/") == 0 ||
            (strncmp(real, root_real, rl) == 0 && real[rl] == '/'))
            return 1;
    }
    return 0;
}
