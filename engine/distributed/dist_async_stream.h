/* dist_async_stream.h — an asynchronous worker's epochs read from the files. */
#ifndef PUNCH_DIST_ASYNC_STREAM_H
#define PUNCH_DIST_ASYNC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "distributed/dist_ctx.h"

typedef struct dist_stream dist_stream;

/* Read epoch 0's slice, positions [lo, hi) of its permutation (raw
 * values: the scaling statistics are not known yet). NULL + message on
 * failure. The thread that later reads ahead uses c's spec, options and
 * layout, which must outlive the stream. */
dist_stream *dist_stream_open(const dist_ctx *c, long lo, long hi, char *err, size_t errlen);
void dist_stream_close(dist_stream *s);
/* The slice read at open: its features, shape and class count. */
const dataset *dist_stream_first(const dist_stream *s);
/* That slice's contributions to the scaling statistics (dataset.h's
 * dataset_stats_*): the slices of one epoch partition the train part. */
void dist_stream_stats_sum(const dist_stream *s, double *sum);
void dist_stream_stats_m2(const dist_stream *s, const double *mean, double *m2);
float dist_stream_stats_max_abs(const dist_stream *s);
/* The global statistics (copied): every sample is scaled with them. */
int dist_stream_set_scaling(dist_stream *s, const dataset_scaling_stats *st, char *err,
                            size_t errlen);
/* Make epoch e's slice current (waiting for its read if it is not done;
 * ending the job with the read's message if it failed) and start reading
 * epoch e + 1. */
void dist_stream_epoch(dist_stream *s, int epoch);
/* The batch at positions [first, first + b) of the permutation: *data and
 * the rows of it to load. */
const int64_t *dist_stream_batch(dist_stream *s, long first, int b, const dataset **data);
uint64_t dist_stream_hash(const dist_stream *s);
/* Seconds training waited for reads (epoch 1's, read at start-up, aside). */
double dist_stream_waited(const dist_stream *s);
/* CPU seconds the reads after start-up took on the read thread (0 while a
 * read is under way). */
double dist_stream_read_cpu(const dist_stream *s);
/* Samples resident at most: the slice training and the one being read. */
long dist_stream_held(const dist_stream *s);

#endif
