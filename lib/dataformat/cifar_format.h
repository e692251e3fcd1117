/* cifar_format.h — CIFAR-10's binary batches: records of one label byte
 * and 3,072 pixel bytes (the 32x32 red, green and blue planes). */
#ifndef PUNCH_CIFAR_FORMAT_H
#define PUNCH_CIFAR_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define CIFARFMT_PIXELS 3072
#define CIFARFMT_RECORD (1 + CIFARFMT_PIXELS)
#define CIFARFMT_CLASSES 10

/* A batch of size bytes: its whole records, and the bytes of a cut last
 * one in *part (0 when the size is whole). */
uint64_t cifarfmt_records(uint64_t size, uint64_t *part);

/* The first of n whole records at recs whose label is not below classes
 * (its index from 0), or -1 when every one is. */
long long cifarfmt_bad_label(const unsigned char *recs, size_t n, int classes);

#endif
