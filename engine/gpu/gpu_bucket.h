/* gpu_bucket.h — how the flat gradient buffer is cut into NCCL allreduce
 * buckets. Plain C, unit-tested without a GPU.
 *
 * Why buckets: the backward pass produces gradients last layer first. If
 * the buffer is averaged in pieces, each piece can go on the wire as soon as
 * the layers it covers are done, overlapping communication with the rest of
 * the backward pass (as PyTorch DDP does). Pieces must be big enough that
 * per-call latency does not dominate (the `bucket_mb` of the job spec,
 * default 4 MiB) and must not split a layer, so "layer i is done" maps to a
 * whole number of buckets.
 *
 * The parameters are one flat buffer with each layer's parameters
 * contiguous and layers in model order; a layer with no parameters has
 * count 0 and belongs to no bucket. */
#ifndef PUNCH_GPU_BUCKET_H
#define PUNCH_GPU_BUCKET_H

#include <stdbool.h>
#include <stddef.h>

/* One layer's slice of the flat buffer, in floats. */
typedef struct gpu_param_span {
    long offset;
    long count;
} gpu_param_span;

typedef struct gpu_bucket {
    long offset;        /* first float of the bucket in the flat buffer */
    long count;         /* floats */
    int first_layer;    /* lowest layer index with parameters in it */
    int last_layer;     /* highest */
    int n_param_layers; /* layers with parameters in it: the bucket is ready
                           once that many of them have finished backward */
} gpu_bucket;

typedef struct gpu_bucket_plan {
    int n_buckets;
    gpu_bucket *buckets; /* in launch order: the bucket holding the last
                            layer first, the first layer's bucket last */
    int n_layers;
    int *bucket_of;      /* per layer: its bucket, or -1 (no parameters) */
} gpu_bucket_plan;

/* Plans buckets of at most bucket_floats floats (a layer bigger than that
 * gets a bucket of its own), walking layers from last to first. Spans must
 * be in model order, contiguous and non-overlapping (offset of layer i+1 =
 * offset + count of layer i, skipping empty layers). False with a message
 * when they are not or memory runs out. */
bool gpu_bucket_plan_build(const gpu_param_span *spans, int n_layers, long bucket_floats,
                           gpu_bucket_plan *plan, char *err, size_t errlen);
void gpu_bucket_plan_free(gpu_bucket_plan *plan);

/* bucket_mb (MiB, from spec->distributed) as floats, at least 1. */
long gpu_bucket_floats(double bucket_mb);

/* The launch bookkeeping of one step. NCCL needs the same sequence of
 * collectives on every rank, so buckets go out strictly in plan order,
 * each once every layer in it has finished backward, whatever order the
 * layers report in. */
typedef struct gpu_bucket_progress {
    const gpu_bucket_plan *plan;
    int *pending;       /* per bucket: layers still in backward */
    int cap;            /* allocated entries (grows, never shrinks) */
    int next;           /* the next bucket to launch */
} gpu_bucket_progress;

/* Starts a step of `plan` (which must outlive it). Allocates only when
 * the plan has more buckets than any before; false when that fails. */
bool gpu_bucket_progress_begin(gpu_bucket_progress *p, const gpu_bucket_plan *plan);
/* Layer `layer` has finished backward; report each layer once per step
 * (out-of-range layers and layers without parameters are ignored). */
void gpu_bucket_progress_layer_done(gpu_bucket_progress *p, int layer);
/* The next bucket to launch now, advancing past it, or -1 when the next
 * one in plan order still waits for a layer. With `all` (the end of the
 * backward pass) every remaining bucket is returned in order. */
int gpu_bucket_progress_next(gpu_bucket_progress *p, bool all);
void gpu_bucket_progress_free(gpu_bucket_progress *p);

#endif
