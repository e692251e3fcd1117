/* checkpoint_file.h — the one writer of DIR/checkpoints/ckpt.bin. The
 * single trainer (checkpoint.c) and the distributed trainers
 * (distributed/dist_checkpoint.c) keep different contents, each behind
 * its own magic number, but write them the same way: the whole file
 * assembled in memory at its exact size, then put in place atomically
 * (io/tensorfile.h atomic_write_file), so a crash mid-write leaves the
 * previous checkpoint whole. */
#ifndef PUNCH_TRAIN_CHECKPOINT_FILE_H
#define PUNCH_TRAIN_CHECKPOINT_FILE_H

#include <stddef.h>

typedef struct checkpoint_file {
    unsigned char *buf;
    size_t size;    /* bytes the file will have */
    size_t used;    /* bytes filled so far */
} checkpoint_file;

/* DIR/checkpoints/ckpt.bin into path. */
void checkpoint_file_path(const char *dir, char *path, size_t len);

/* Room for a file of exactly `size` bytes. 0, or -1 with "checkpoint: out
 * of memory (N bytes)". */
int checkpoint_file_open(checkpoint_file *f, size_t size, char *err, size_t errlen);

/* The next n bytes of the file, for the caller to fill (e.g. with
 * model_get_params); the caller's sizes must add up to the size given to
 * open. */
void *checkpoint_file_next(checkpoint_file *f, size_t n);

/* Append n bytes copied from src. */
void checkpoint_file_put(checkpoint_file *f, const void *src, size_t n);

/* Append the CRC-32 (zlib's, little-endian u32) of every byte so far. */
void checkpoint_file_put_crc(checkpoint_file *f);

/* Create DIR/checkpoints if missing and replace ckpt.bin there with the
 * filled bytes; frees the buffer either way. 0, or -1 with a message. */
int checkpoint_file_commit(checkpoint_file *f, const char *dir, char *err, size_t errlen);

#endif
