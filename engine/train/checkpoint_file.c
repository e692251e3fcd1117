/* checkpoint_file.c — assemble a checkpoint in memory and write it
 * atomically; see checkpoint_file.h. */
#include "train/checkpoint_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/io_file.h"
#include "io/tensorfile.h"

void checkpoint_file_path(const char *dir, char *path, size_t len)
{
    snprintf(path, len, "%s/checkpoints/ckpt.bin", dir);
}

int checkpoint_file_open(checkpoint_file *f, size_t size, char *err, size_t errlen)
{
    f->buf = malloc(size > 0 ? size : 1);
    f->size = size;
    f->used = 0;
    if (!f->buf) {
        snprintf(err, errlen, "checkpoint: out of memory (%zu bytes)", size);
        return -1;
    }
    return 0;
}

void *checkpoint_file_next(checkpoint_file *f, size_t n)
{
    void *p = f->buf + f->used;
    f->used += n;
    return p;
}

void checkpoint_file_put(checkpoint_file *f, const void *src, size_t n)
{
    if (n > 0)
        memcpy(checkpoint_file_next(f, n), src, n);
}

void checkpoint_file_put_crc(checkpoint_file *f)
{
    uint32_t crc = (uint32_t)crc32_z(0L, f->buf, f->used);
    io_put_le32(checkpoint_file_next(f, 4), crc);
}

int checkpoint_file_commit(checkpoint_file *f, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    int rc = -1;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    } else {
        checkpoint_file_path(dir, path, sizeof path);
        rc = atomic_write_file(path, f->buf, f->used, err, errlen);
    }
    free(f->buf);
    f->buf = NULL;
    return rc;
}
