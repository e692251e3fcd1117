/* sitelist.c — the site's datasets listed from the `datasets` roots. Only
 * headers are read (an IDX file's first 20 bytes, an npz's central
 * directory and .npy headers; a CIFAR-10 batch's size), so listing costs
 * directory reads, not data reads. Names follow the engine's rules
 * (engine/data/resolve.c): an IDX pair is DIR/STEM, an npz or CSV file its
 * path without the suffix, a CIFAR-10 directory DIR/train and DIR/test. */
#include "api/sitelist.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "io/npzarray.h"

#define SL_DEPTH 3
#define SL_MAX_VISITS 100000
#define SL_CIFAR_RECORD 3073

typedef struct sl_scan {
    json_t *list;  /* the answer */
    json_t *seen;  /* names listed so far, as keys: an earlier root wins */
    int limit;
    long visits;   /* directory entries looked at, bounded by SL_MAX_VISITS */
    bool full;     /* the limit or the visit bound was reached */
    char root[PATH_MAX];
} sl_scan;

static bool sl_ends(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Stat path's real target when it lies inside the current root; false for
 * one that escapes it (a symlink out), is missing or is neither a file nor
 * a directory. */
static bool sl_inside(const sl_scan *s, const char *path, struct stat *st)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || stat(real, st) != 0)
        return false;
    size_t rl = strlen(s->root);
    bool inside = strcmp(s->root, "/") == 0 || (strncmp(real, s->root, rl) == 0 &&
                                                 real[rl] == '/');
    return inside && (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode));
}

static json_t *sl_shape(int rank, const long long *dims)
{
    json_t *a = json_array();
    for (int i = 0; a && i < rank; i++)
        json_array_append_new(a, json_integer(dims[i]));
    return a;
}

/* An IDX file's shape from its header (gzipped or not): NULL when the
 * header is not an unsigned-byte IDX one. */
static json_t *sl_idx_shape(const char *path, long long *rows)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char h[4 + 4 * 4];
    int got = gzread(f, h, 4);
    int rank = got == 4 && h[0] == 0 && h[1] == 0 && h[2] == 0x08 ? h[3] : 0;
    if (rank < 1 || rank > 4 || gzread(f, h + 4, (unsigned)rank * 4) != rank * 4) {
        gzclose(f);
        return NULL;
    }
    gzclose(f);
    long long dims[4];
    for (int i = 0; i < rank; i++) {
        const unsigned char *p = h + 4 + 4 * i;
        dims[i] = (long long)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                              (uint32_t)p[2] << 8 | p[3]);
    }
    *rows = dims[0];
    return sl_shape(rank, dims);
}

/* Every member's shape of an npz, and its sample count (x_train's rows,
 * else x's; -1 when neither is there). NULL when it is no npz. */
static json_t *sl_npz_shapes(const char *path, long long *rows)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    npz_index ix;
    char why[200];
    if (npz_index_fd(fd, &ix, why, sizeof why) != 0) {
        close(fd);
        return NULL;
    }
    json_t *shapes = json_object();
    *rows = -1;
    for (int i = 0; shapes && i < ix.n; i++) {
        const npz_array *a = &ix.arrays[i];
        long long dims[TENSOR_MAX_RANK];
        for (int k = 0; k < a->h.rank; k++)
            dims[k] = a->h.dims[k];
        json_object_set_new(shapes, a->name, sl_shape(a->h.rank, dims));
        bool x = strcmp(a->name, "x_train") == 0 || (strcmp(a->name, "x") == 0 && *rows < 0);
        if (x && a->h.rank > 0)
            *rows = a->h.dims[0];
    }
    npz_index_free(&ix);
    close(fd);
    return shapes;
}

/* One dataset into the answer (shapes owned), unless an earlier root had
 * its name or the answer is full. */
static void sl_add(sl_scan *s, const char *name, const char *format, long long records,
                   json_t *shapes)
{
    if (json_object_get(s->seen, name)) {
        json_decref(shapes);
        return;
    }
    if ((int)json_array_size(s->list) >= s->limit) {
        s->full = true;
        json_decref(shapes);
        return;
    }
    json_object_set_new(s->seen, name, json_true());
    json_array_append_new(
        s->list, json_pack("{s:s, s:s, s:o, s:o}", "name", name, "format", format, "records",
                           records >= 0 ? json_integer(records) : json_null(), "shapes",
                           shapes ? shapes : json_null()));
}

/* "rel/leaf" (or leaf at the root), without the last cut bytes of leaf. */
static bool sl_name(char *buf, size_t len, const char *rel, const char *leaf, size_t cut)
{
    int n = snprintf(buf, len, "%s%s%.*s", rel, *rel ? "/" : "", (int)(strlen(leaf) - cut),
                     leaf);
    return n > 0 && (size_t)n < len;
}

/* An IDX pair's images file (either naming style, gzipped or not) with its
 * labels beside it: DIR/STEM. */
static void sl_idx(sl_scan *s, const char *dir, const char *rel, const char *leaf)
{
    static const char *const styles[][2] = {{"-images-idx3-ubyte", "-labels-idx1-ubyte"},
                                            {"-images.idx3-ubyte", "-labels.idx1-ubyte"}};
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++) {
        const char *gz = sl_ends(leaf, ".gz") ? ".gz" : "";
        char suffix[64], path[PATH_MAX], lpath[PATH_MAX], name[PATH_MAX];
        snprintf(suffix, sizeof suffix, "%s%s", styles[i][0], gz);
        if (!sl_ends(leaf, suffix) || strlen(leaf) == strlen(suffix))
            continue;
        size_t stem = strlen(leaf) - strlen(suffix);
        struct stat st;
        bool have = false;
        /* The labels file may be gzipped where the images are not, or the
         * other way round: the engine looks for each on its own. */
        for (int z = 0; z < 2 && !have; z++)
            have = snprintf(lpath, sizeof lpath, "%s/%.*s%s%s", dir, (int)stem, leaf,
                              styles[i][1], z ? ".gz" : "") < (int)sizeof lpath &&
                     sl_inside(s, lpath, &st) && S_ISREG(st.st_mode);
        if (!have || snprintf(path, sizeof path, "%s/%s", dir, leaf) >= (int)sizeof path ||
            !sl_name(name, sizeof name, rel, leaf, strlen(suffix)))
            return;
        long long rows = -1, lrows = -1;
        json_t *images = sl_idx_shape(path, &rows), *labels = sl_idx_shape(lpath, &lrows);
        if (!images || !labels) {
            json_decref(images);
            json_decref(labels);
            return;
        }
        sl_add(s, name, "idx", rows, json_pack("{s:o, s:o}", "images", images, "labels", labels));
        return;
    }
}

/* A single file that a single-file format names by its path less suffix. */
static void sl_file(sl_scan *s, const char *dir, const char *rel, const char *leaf)
{
    static const struct {
        const char *suffix, *format;
    } kinds[] = {{".npz", "npz"}, {".csv.gz", "csv"}, {".csv", "csv"},
                 {".ctf.txt", "ctf"}, {".ctf", "ctf"}, {".txt", "text"}};
    char name[PATH_MAX], path[PATH_MAX];
    if (strstr(leaf, "-idx3-ubyte") || strstr(leaf, ".idx3-ubyte")) {
        sl_idx(s, dir, rel, leaf);
        return;
    }
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t k = strlen(kinds[i].suffix);
        if (!sl_ends(leaf, kinds[i].suffix) || strlen(leaf) == k ||
            !sl_name(name, sizeof name, rel, leaf, k))
            continue;
        long long rows = -1;
        json_t *shapes = NULL;
        if (strcmp(kinds[i].format, "npz") == 0) {
            int pn = snprintf(path, sizeof path, "%s/%s", dir, leaf);
            if (pn < 0 || (size_t)pn >= sizeof path || !(shapes = sl_npz_shapes(path, &rows)))
                return;
        }
        sl_add(s, name, kinds[i].format, rows, shapes);
        return;
    }
}

static int sl_visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* root/rel: its files, then (depth permitting) its directories; a
 * directory of CIFAR-10 batches adds rel/train and rel/test. */
static void sl_dir(sl_scan *s, const char *rel, int depth)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s%s%s", s->root, *rel ? "/" : "", rel) >= (int)sizeof dir)
        return;
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, sl_visible, alphasort);
    if (n < 0)
        return;
    long long train = 0, test = 0;
    for (int i = 0; i < n; i++) {
        const char *leaf = ents[i]->d_name;
        char path[PATH_MAX], sub[PATH_MAX];
        struct stat st;
        if (s->full || ++s->visits > SL_MAX_VISITS) {
            s->full = true;
            continue;
        }
        if (snprintf(path, sizeof path, "%s/%s", dir, leaf) >= (int)sizeof path ||
            !sl_inside(s, path, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < SL_DEPTH && sl_name(sub, sizeof sub, rel, leaf, 0))
                sl_dir(s, sub, depth + 1);
        } else if (strncmp(leaf, "data_batch_", 11) == 0 && sl_ends(leaf, ".bin")) {
            train += st.st_size / SL_CIFAR_RECORD;
        } else if (strcmp(leaf, "test_batch.bin") == 0) {
            test += st.st_size / SL_CIFAR_RECORD;
        } else {
            sl_file(s, dir, rel, leaf);
        }
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    long long parts[2] = {train, test};
    for (int p = 0; p < 2 && *rel; p++) {
        char name[PATH_MAX];
        long long dims[4] = {parts[p], 3, 32, 32};
        if (parts[p] > 0 && sl_name(name, sizeof name, rel, p ? "test" : "train", 0))
            sl_add(s, name, "cifar10", parts[p], json_pack("{s:o}", "images", sl_shape(4, dims)));
    }
}

json_t *sitelist_scan(const char *roots, int limit, bool *truncated)
{
    sl_scan s = {.list = json_array(), .seen = json_object(), .limit = limit};
    if (!s.list || !s.seen) {
        json_decref(s.list);
        json_decref(s.seen);
        return NULL;
    }
    for (const char *root = roots; *root && !s.full;) {
        size_t len = strcspn(root, ":");
        char given[PATH_MAX];
        if (len > 0 && len < sizeof given) {
            memcpy(given, root, len);
            given[len] = '\0';
            if (realpath(given, s.root))
                sl_dir(&s, "", 1);
        }
        root += len;
        if (*root == ':')
            root++;
    }
    json_decref(s.seen);
    *truncated = s.full;
    return s.list;
}
