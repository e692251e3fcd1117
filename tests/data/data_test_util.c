/* data_test_util.c — helpers for the data and io tests: temporary
 * directories and small generated IDX/CIFAR-10/gzip files. */
#include "data_test_util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

static void tu_die(const char *what, const char *path)
{
    fprintf(stderr, "test setup: %s %s failed\n", what, path);
    abort();
}

char *tu_mkdtemp(void)
{
    const char *tmp = getenv("TMPDIR");
    char buf[512];
    snprintf(buf, sizeof buf, "%s/punch-data-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(buf))
        tu_die("mkdtemp", buf);
    char *dir = strdup(buf);
    if (!dir)
        tu_die("strdup", buf);
    return dir;
}

static int tu_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *dir)
{
    nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_dir;

int tu_dir_setup(void **state)
{
    (void)state;
    tu_dir = tu_mkdtemp();
    return 0;
}

int tu_dir_teardown(void **state)
{
    (void)state;
    tu_rmtree(tu_dir);
    free(tu_dir);
    tu_dir = NULL;
    return 0;
}

const char *tu_path(const char *dir, const char *name)
{
    static char slots[8][1024];
    static int next;
    char *p = slots[next++ % 8];
    snprintf(p, sizeof slots[0], "%s/%s", dir, name);
    return p;
}

const char *tu_write(const char *dir, const char *name, const void *data, size_t len)
{
    const char *path = tu_path(dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
        tu_die("write", path);
    return path;
}

const char *tu_write_gz(const char *dir, const char *name, const void *data, size_t len)
{
    const char *path = tu_path(dir, name);
    gzFile g = gzopen(path, "wb6");
    if (!g || (len && gzwrite(g, data, (unsigned)len) != (int)len) || gzclose(g) != Z_OK)
        tu_die("gzwrite", path);
    return path;
}

unsigned char *tu_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        tu_die("open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        tu_die("read", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void tu_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

unsigned char *tu_idx_images(uint32_t claimed_n, uint32_t n, uint32_t rows, uint32_t cols,
                             size_t *len)
{
    size_t px = (size_t)rows * cols;
    *len = 16 + (size_t)n * px;
    unsigned char *b = malloc(*len);
    if (!b)
        tu_die("malloc", "images");
    tu_be32(b, 0x803);
    tu_be32(b + 4, claimed_n);
    tu_be32(b + 8, rows);
    tu_be32(b + 12, cols);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < px; k++)
            b[16 + i * px + k] = (unsigned char)((i * 7 + k) % 256);
    return b;
}

unsigned char *tu_idx_labels(uint32_t claimed_n, uint32_t n, int classes, size_t *len)
{
    *len = 8 + (size_t)n;
    unsigned char *b = malloc(*len);
    if (!b)
        tu_die("malloc", "labels");
    tu_be32(b, 0x801);
    tu_be32(b + 4, claimed_n);
    for (uint32_t i = 0; i < n; i++)
        b[8 + i] = (unsigned char)(i % (uint32_t)classes);
    return b;
}

/* path into out[512]; a longer path is a broken test setup. */
static void tu_copy_path(char *out, const char *path)
{
    if (snprintf(out, 512, "%s", path) >= 512)
        tu_die("copy (path too long)", path);
}

void tu_write_idx_pair(const char *dir, const char *prefix, int gz, uint32_t claimed, uint32_t n,
                       uint32_t rows, uint32_t cols, uint32_t claimed_labels, uint32_t n_labels,
                       int classes, char img[512], char lab[512])
{
    size_t li, ll;
    unsigned char *bi = tu_idx_images(claimed, n, rows, cols, &li);
    unsigned char *bl = tu_idx_labels(claimed_labels, n_labels, classes, &ll);
    char ni[256], nl[256];
    snprintf(ni, sizeof ni, "%s-images-idx3-ubyte%s", prefix, gz ? ".gz" : "");
    snprintf(nl, sizeof nl, "%s-labels-idx1-ubyte%s", prefix, gz ? ".gz" : "");
    const char *pi = gz ? tu_write_gz(dir, ni, bi, li) : tu_write(dir, ni, bi, li);
    if (img)
        tu_copy_path(img, pi);
    const char *pl = gz ? tu_write_gz(dir, nl, bl, ll) : tu_write(dir, nl, bl, ll);
    if (lab)
        tu_copy_path(lab, pl);
    free(bi);
    free(bl);
}

void tu_write_idx(const char *dir, const char *prefix, int gz, uint32_t n, uint32_t rows,
                  uint32_t cols, char img[512], char lab[512])
{
    tu_write_idx_pair(dir, prefix, gz, n, n, rows, cols, n, n, 10, img, lab);
}

unsigned char *tu_cifar_records(int n, int first, size_t *len)
{
    *len = (size_t)n * 3073;
    unsigned char *b = malloc(*len);
    if (!b)
        tu_die("malloc", "CIFAR records");
    for (int i = 0; i < n; i++) {
        b[i * 3073] = (unsigned char)((first + i) % 10);
        for (int k = 0; k < 3072; k++)
            b[i * 3073 + 1 + k] = (unsigned char)((first + i + k) % 256);
    }
    return b;
}

void tu_write_cifar_pair(const char *dir, tu_cifar_pair *out)
{
    size_t l1;
    unsigned char *b1 = tu_cifar_records(5, 0, &l1);
    out->second = tu_cifar_records(4, 5, &out->second_len);
    out->paths[0] = strdup(tu_write(dir, "data_batch_1.bin", b1, l1));
    out->paths[1] = strdup(tu_write_gz(dir, "data_batch_2.bin.gz", out->second,
                                       out->second_len));
    if (!out->paths[0] || !out->paths[1])
        tu_die("strdup", dir);
    free(b1);
}

void tu_cifar_pair_free(tu_cifar_pair *p)
{
    free((void *)p->paths[0]);
    free((void *)p->paths[1]);
    free(p->second);
}

const char tu_csv_messy[] = "label,a,b\n1,0.5,2\n\n0,3,-4\r\n2,1,1\n  \n1,7,8\n0,9,9";
const char tu_csv_bad_line7[] = "label,a,b\n1,0.5,2\n0,3,-4\n2,1,1\n1,7,8\n0,9,9\n1,x,2\n";
