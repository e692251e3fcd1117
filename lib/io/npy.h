/* npy.h — internal: one float32 array in numpy's .npy format, the members
 * of an .npz archive. */
#ifndef PUNCH_NPY_H
#define PUNCH_NPY_H

#include <stddef.h>

#include "io/tensorfile.h"

/* Longest .npy prefix npy_format_header writes (magic, version, length,
 * padded dict): four dims of 19 digits fit comfortably. */
#define NPY_MAX_PREFIX 256

/* Write the v1.0 prefix for a '<f4' C-order array of t's shape into buf
 * (NPY_MAX_PREFIX bytes); returns its length, a multiple of 64. */
size_t npy_format_header(const tensor_entry *t, unsigned char *buf);

/* Parse a whole .npy member (v1, v2 or v3; '<f4' or '>f4', C order) into
 * e->rank, e->dims and a heap copy in e->data. -1 + message otherwise. */
int npy_parse(const unsigned char *p, size_t len, tensor_entry *e,
              char *err, size_t errlen);

#endif
