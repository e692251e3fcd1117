/* fuzz.h — what the fuzz targets of tests/fuzz share. Each target is one
 * file defining LLVMFuzzerTestOneInput, linked either with libFuzzer
 * (scripts/fuzz: clang -fsanitize=fuzzer) or with replay.c, which feeds it
 * every file of the seed corpus (the `fuzz` test suite). A target must
 * accept any bytes: it returns 0 and frees what it allocated, and only a
 * crash, a sanitizer report or an abort() on a broken invariant counts as a
 * finding. */
#ifndef PUNCH_FUZZ_H
#define PUNCH_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Readers that take a path get the input through this: a memory-backed
 * file (memfd) per slot (0..FUZZ_FILE_SLOTS-1), rewritten to hold exactly
 * data[0..size), reached as /proc/self/fd/N. No disk I/O, nothing left
 * behind. Aborts if the kernel refuses (the run would prove nothing). */
#define FUZZ_FILE_SLOTS 2
const char *fuzz_file(int slot, const uint8_t *data, size_t size);

/* A stream for output the target does not look at ("/dev/null"). */
FILE *fuzz_null_stream(void);

/* The first byte of the input as a small choice (0 when empty), consumed. */
unsigned fuzz_take_byte(const uint8_t **data, size_t *size);

/* Abort unless every tensor a reader returned is whole: rank 0..4,
 * non-negative dims, data present; its first and last value are read, so
 * the sanitizer checks both ends of the allocation. */
struct tensor_entry;
void fuzz_check_tensors(const struct tensor_entry *t, int n);

#endif
