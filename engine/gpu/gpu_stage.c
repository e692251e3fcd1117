/* gpu_stage.c — the staging slot sequence; see gpu_stage.h. */
#include "gpu/gpu_stage.h"

long gpu_stage_chunks(long n)
{
    return n > 0 ? (n + GPU_STAGE_FLOATS - 1) / GPU_STAGE_FLOATS : 0;
}

int gpu_stage_slot(const gpu_stage_seq *s, long k)
{
    return (int)(((long)s->next + k) & 1);
}

void gpu_stage_advance(gpu_stage_seq *s, long chunks)
{
    if (chunks > 0)
        s->next = gpu_stage_slot(s, chunks);
}

int gpu_stage_take(gpu_stage_seq *s)
{
    int slot = gpu_stage_slot(s, 0);
    gpu_stage_advance(s, 1);
    return slot;
}
