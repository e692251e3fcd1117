/* idx_format.h — the IDX format's rules (MNIST's files): a magic of two
 * zero bytes, a type byte (0x08, unsigned bytes: the only type read) and
 * the rank, then one big-endian u32 per dimension, then the records, each
 * the product of the dimensions after the first. */
#ifndef PUNCH_IDX_FORMAT_H
#define PUNCH_IDX_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDXFMT_MAX_RANK 4
#define IDXFMT_IMAGES_MAGIC 0x00000803u /* 3-D unsigned-byte images */
#define IDXFMT_LABELS_MAGIC 0x00000801u /* 1-D unsigned-byte labels */

typedef struct idxfmt_header {
    int rank;                        /* 1 to IDXFMT_MAX_RANK */
    uint32_t dims[IDXFMT_MAX_RANK];  /* dims[0] is the record count */
    size_t header_len;               /* 4 + 4 * rank */
    uint64_t record_bytes;           /* the product of dims[1..] (1 for rank 1) */
} idxfmt_header;

/* How a body compares with its header's count. */
typedef enum { IDXFMT_BODY_OK, IDXFMT_BODY_SHORT, IDXFMT_BODY_EXTRA } idxfmt_body;

uint32_t idxfmt_be32(const unsigned char *p);

/* Whether the first 4 bytes are an unsigned-byte IDX magic of rank 1 to 4. */
bool idxfmt_magic_ok(const unsigned char *p, size_t len);

/* The header in the first len bytes of p: 0; -1 when the magic is wrong
 * (idxfmt_magic_ok); or the header's length when len is shorter. */
long idxfmt_header_parse(const unsigned char *p, size_t len, idxfmt_header *h);

/* A body of body_bytes after h: whole records in *have, bytes past the
 * count's records in *extra (0 unless EXTRA). */
idxfmt_body idxfmt_body_check(const idxfmt_header *h, uint64_t body_bytes, uint64_t *have,
                              uint64_t *extra);

#endif
