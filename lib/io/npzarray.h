/* npzarray.h — the arrays of a numpy .npz archive, indexed in place: the
 * ZIP central directory and each member's .npy header are read through a
 * positional reader (a file descriptor or a memory buffer), so a large
 * upload is checked and read in bounded memory, never loaded whole.
 * Any plain number dtype numpy writes ('|u1', '<i8', '<f2', '<f4', '>f8', '|b1')
 * is described; npz_array_floats converts a range of elements to float32.
 * Members may be STORED (numpy.savez) or DEFLATED (savez_compressed);
 * every offset and length is checked against the file before use. */
#ifndef PUNCH_NPZARRAY_H
#define PUNCH_NPZARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/npy.h"

/* Read len bytes at off into dst; returns the bytes read (short only at
 * the end of the data) or -1. */
typedef long long (*npz_read_at_fn)(void *ctx, uint64_t off, void *dst, size_t len);

typedef struct npz_array {
    char name[96];         /* the member's name without ".npy" */
    npy_header h;          /* dtype, shape; h.data_start is within the member */
    unsigned method;       /* 0 STORED, 8 DEFLATED */
    uint64_t offset;       /* of the member's bytes (after its local header) */
    uint64_t csize, usize; /* stored and uncompressed sizes */
    uint32_t crc;
} npz_array;

typedef struct npz_index {
    npz_read_at_fn read_at;
    void *ctx;
    uint64_t size;         /* of the whole archive */
    npz_array *arrays;
    int n;
    void *owned_ctx;       /* freed with the index (npz_index_fd's) */
} npz_index;

/* Index the archive of `size` bytes behind read_at: its central directory
 * and every member's .npy header. Messages name the member:
 * "member x_train: truncated (data run past the end of the file)",
 * "not a ZIP archive (no end of central directory)". 0, or -1 with the
 * reason; free with npz_index_free. */
int npz_index_open(npz_read_at_fn read_at, void *ctx, uint64_t size, npz_index *ix,
                   char *err, size_t errlen);
void npz_index_free(npz_index *ix);

/* Index a file: the descriptor stays owned by the caller and must stay
 * open while the index is used. */
int npz_index_fd(int fd, npz_index *ix, char *err, size_t errlen);

/* The array called name, or NULL. */
const npz_array *npz_index_find(const npz_index *ix, const char *name);

/* Read all of a member through (inflating it), checking its length against
 * its header and its CRC-32, in bounded memory. 0 or -1 with
 * "member NAME: reason". */
int npz_array_verify(const npz_index *ix, const npz_array *a, char *err, size_t errlen);

/* The whole member (its .npy bytes, inflated) into a fresh heap buffer of
 * a->usize bytes, CRC checked. 0 or -1 with a reason. */
int npz_array_member(const npz_index *ix, const npz_array *a, unsigned char **out,
                     char *err, size_t errlen);

/* Elements [first, first + n) of the array, converted to float32 (integers
 * and booleans exactly up to 2^24, float16 exactly, float64 rounded). 0 or -1 with
 * "member NAME: reason". */
int npz_array_floats(const npz_index *ix, const npz_array *a, uint64_t first, uint64_t n,
                     float *dst, char *err, size_t errlen);

#endif
