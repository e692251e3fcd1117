/* fuzz_data.h — what the dataset reader targets (IDX, CSV, CIFAR-10 of
 * engine/data) share: cutting one input into files and checking what a
 * loader returned. */
#ifndef PUNCH_FUZZ_DATA_H
#define PUNCH_FUZZ_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

/* Cut the input in two files: a u16 little-endian length L, then L bytes
 * (clamped to what is there) for slot 0 and the rest for slot 1. */
void fuzz_data_split(const uint8_t *data, size_t size, const char **first,
                     const char **second);

/* A range [*lo, *hi) within [0, n) chosen by two bytes of the input. */
void fuzz_data_range(const uint8_t **data, size_t *size, long n, long *lo, long *hi);

/* Abort unless d is a whole dataset of want_n samples (-1: any number):
 * features = the shape's size, x and y of that size (both ends read), and
 * every label in [0, num_classes) when num_classes > 0 (the
 * loaders check no range otherwise). Then free it. */
void fuzz_data_check(dataset *d, long want_n, int num_classes);

/* Take the (up to) two bytes that choose a range off the front of the input. */
void fuzz_data_pick(const uint8_t **data, size_t *size, const uint8_t **pick,
                    size_t *pick_size);

/* One reader's three calls on one input (in: what the target's adapters
 * read their paths and options from). Each returns 0 on success. */
typedef struct fuzz_reader {
    int (*load)(const void *in, dataset *d, char *err, size_t errlen);
    int (*count)(const void *in, long *n, char *err, size_t errlen);
    int (*load_range)(const void *in, long lo, long hi, dataset *d, char *err,
                      size_t errlen);
    int classes; /* labels checked in [0, classes) when > 0 */
} fuzz_reader;

/* Abort unless r's calls on in keep their promises: what loads is a whole
 * dataset (fuzz_data_check); an input that loads whole also counts, to the
 * same number, and loads in any range (chosen by pick) with exactly the
 * range's samples. */
void fuzz_data_agree(const fuzz_reader *r, const void *in, const uint8_t *pick,
                     size_t pick_size);

/* fuzz_data_agree on two files: the range's bytes taken off the front
 * (fuzz_data_pick), the rest cut in two (fuzz_data_split) and handed to
 * r's calls as a const char *[2]. */
void fuzz_data_agree_two(const fuzz_reader *r, const uint8_t *data, size_t size);

#endif
