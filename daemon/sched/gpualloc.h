/* gpualloc.h — which GPUs of a single host a job gets.
 *
 * On one host (no hostfile, or a hostfile naming one host) punchcardd hands
 * each GPU job specific devices and passes them as CUDA_VISIBLE_DEVICES, so
 * two jobs never share a device; punch-train then gives each rank the device
 * its node-local rank picks among the visible ones. The devices of a host are
 * 0..GPUALLOC_MAX-1, held as a bit set; the store keeps a started job's set
 * as text ("0,2,3", the CUDA_VISIBLE_DEVICES value) so a restarted daemon
 * knows what its re-adopted jobs hold. Across several hosts GPUs are counted
 * per host by placement.c, without device indices. */
#ifndef PUNCH_GPUALLOC_H
#define PUNCH_GPUALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPUALLOC_MAX 64

/* The lowest `n` devices among 0..total-1 not in `in_use`; false (and *out
 * untouched) when fewer than n are free. n == 0 gives the empty set. */
bool gpualloc_take(uint64_t in_use, int total, int n, uint64_t *out);

/* Number of devices in a set. */
int gpualloc_count(uint64_t set);

/* "0,2,3" for a set; "" for the empty set. False if cap is too small. */
bool gpualloc_format(uint64_t set, char *buf, size_t cap);

/* The set a gpualloc_format() text names; false on anything else (an empty
 * text is the empty set). */
bool gpualloc_parse(const char *text, uint64_t *out);

#endif
