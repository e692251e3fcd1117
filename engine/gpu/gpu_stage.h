/* gpu_stage.h — the order in which host<->device copies take the two pinned
 * staging chunks. Plain C with no CUDA dependence, so the sequence is
 * unit-tested on machines without a GPU.
 *
 * The sequence lives in the backend context and runs on across calls: a
 * copy's first chunk takes the slot after the previous copy's last one.
 * Restarting at slot 0 for every copy made a one-chunk upload (the targets)
 * wait for the slot still held by the upload just before it (the inputs),
 * so two consecutive uploads never overlapped. */
#ifndef PUNCH_GPU_STAGE_H
#define PUNCH_GPU_STAGE_H

/* Floats per pinned staging chunk. */
#define GPU_STAGE_FLOATS (1L << 20)

typedef struct gpu_stage_seq {
    int next; /* slot (0 or 1) the next chunk takes */
} gpu_stage_seq;

/* Chunks a copy of n floats goes through (0 for n <= 0). */
long gpu_stage_chunks(long n);

/* Slot of chunk k (0-based) of a copy starting now; does not advance. */
int gpu_stage_slot(const gpu_stage_seq *s, long k);

/* Marks a copy of `chunks` chunks as issued: the next copy starts on the
 * slot after its last chunk. */
void gpu_stage_advance(gpu_stage_seq *s, long chunks);

/* gpu_stage_slot then gpu_stage_advance by one: the slot of the next
 * chunk, for copies issued one chunk at a time. */
int gpu_stage_take(gpu_stage_seq *s);

#endif
