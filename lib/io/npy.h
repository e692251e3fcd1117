/* npy.h — internal: one float32 array in numpy's .npy format, the members
 * of an .npz archive. */
#ifndef PUNCH_NPY_H
#define PUNCH_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "io/tensorfile.h"

/* Longest .npy prefix npy_format_header writes (magic, version, length,
 * padded dict): four dims of 19 digits fit comfortably. */
#define NPY_MAX_PREFIX 256

/* Write the v1.0 prefix for a '<f4' C-order array of t's shape into buf
 * (NPY_MAX_PREFIX bytes); returns its length, a multiple of 64. */
size_t npy_format_header(const tensor_entry *t, unsigned char *buf);

/* The prefix of a .npy array: its dtype (kind 'u', 'i', 'f' or 'b' and
 * size in bytes, as numpy's descr '<f4', '|u1', '>i8' says), shape, and
 * where the data start. */
typedef struct npy_header {
    char kind;
    int itemsize;
    int big_endian;
    int rank;
    long dims[TENSOR_MAX_RANK];
    uint64_t count;      /* elements: the product of dims */
    size_t data_start;   /* bytes before the data */
} npy_header;

/* Parse the prefix at p (len bytes available, at least the whole header):
 * v1, v2 or v3, a plain number dtype, C order, rank <= 4. 0, or -1 with
 * a reason. */
int npy_parse_header(const unsigned char *p, size_t len, npy_header *h, char *err,
                     size_t errlen);

/* n elements of h's dtype and byte order at src, as float32 (integers and
 * booleans exact up to 2^24, float16 exactly, float64 rounded). */
void npy_to_floats(const npy_header *h, const unsigned char *src, size_t n, float *dst);

/* Parse a whole .npy member (v1, v2 or v3; '<f4' or '>f4', C order) into
 * e->rank, e->dims and a heap copy in e->data. -1 + message otherwise. */
int npy_parse(const unsigned char *p, size_t len, tensor_entry *e,
              char *err, size_t errlen);

#endif
