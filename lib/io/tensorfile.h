/* tensorfile.h — named float32 tensors to and from files a notebook loads:
 * safetensors and numpy .npz (a ZIP of .npy members, STORED, CRC-32 from
 * zlib). Writers write atomically (temp file in the same directory, fsync,
 * rename), so a reader never sees half a file. */
#ifndef PUNCH_TENSORFILE_H
#define PUNCH_TENSORFILE_H

#include <stdbool.h>
#include <stddef.h>

#define TENSOR_MAX_RANK 4

typedef struct tensor_entry {
    char name[96];
    int rank;
    long dims[TENSOR_MAX_RANK];
    float *data;      /* product(dims) floats; owned by whoever filled it */
} tensor_entry;

long tensor_entry_size(const tensor_entry *t);
/* Whether a and b have the same rank and dims; t's shape as "[2, 3]"
 * (for messages naming a mismatch). */
bool tensor_entry_same_shape(const tensor_entry *a, const tensor_entry *b);
void tensor_entry_shape_str(const tensor_entry *t, char *buf, size_t len);

/* metadata: string key/value pairs for safetensors' "__metadata__" (may be
 * NULL with n_meta 0). Names must be printable ASCII without quotes or
 * backslashes, unique, and not "__metadata__"; rank 0..4 (0 = a scalar).
 * The safetensors data start 8-byte aligned; the npz has fixed timestamps,
 * so equal tensors give equal bytes. Return 0, or -1 with a message. */
int safetensors_write(const char *path, const tensor_entry *t, int n,
                      const char *const *meta_keys, const char *const *meta_values,
                      int n_meta, char *err, size_t errlen);
int npz_write(const char *path, const tensor_entry *t, int n,
              char *err, size_t errlen);

/* Read every F32 tensor of a safetensors / npz file (as written above, and
 * by numpy.savez or savez_compressed for '<f4' or '>f4' C-order arrays),
 * in file order. *out is an array of *n entries whose data are heap
 * copies; free with tensorfile_free. -1 + "PATH: reason" on any malformed
 * or truncated input, another dtype, rank over 4, or an npz member whose
 * CRC-32 does not match (never trusts a length it did not check). */
int safetensors_read(const char *path, tensor_entry **out, int *n,
                     char *err, size_t errlen);
int npz_read(const char *path, tensor_entry **out, int *n,
             char *err, size_t errlen);
/* npz_read for a path ending in ".npz", safetensors_read otherwise: how
 * every weights file the engine writes or takes is told apart. */
int tensorfile_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen);
void tensorfile_free(tensor_entry *t, int n);

/* Write `len` bytes to `path` atomically: a temporary file in the same
 * directory (mode 0644), fsync, rename over path, fsync the directory. On
 * failure the temporary file is removed and path is untouched. */
int atomic_write_file(const char *path, const void *data, size_t len,
                      char *err, size_t errlen);

/* Remove the temporary files that atomic_write_file leaves in dir when its
 * writer is killed mid-write (".NAME.tmp.XXXXXX"). Only for a directory
 * whose writers are known to be gone (a job's run directory once its
 * processes have ended). Returns how many were removed, -1 when dir cannot
 * be read (a missing dir is 0). */
int atomic_write_sweep(const char *dir);

#endif
