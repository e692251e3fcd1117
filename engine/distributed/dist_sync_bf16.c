/* dist_sync_bf16.c — distributed.compression "bf16": the allreduce
 * trainer's gradients on the wire as bfloat16, half the bytes of fp32.
 *
 * Error feedback keeps the sum over steps unbiased: each rank sends
 * q = bf16(g + e) and keeps e = (g + e) - q for its next step, so after K
 * steps the values it sent sum to sum(g) + e_0 - e_K: the rounding errors
 * do not accumulate, the gap stays within one rounding of the last value.
 *
 * MPI has no bf16 datatype (Open MPI 4.1), so the payload travels as
 * MPI_UINT16_T and a commutative user MPI_Op adds two bf16 values in fp32
 * and rounds the sum back to bf16: once per reduction hop (one hop on 2
 * ranks, log2 or N-1 of them on more, by the algorithm MPI picks). Those
 * roundings of the partial sums are not fed back: they are round-to-nearest
 * even, so unbiased on average, within 2^-9 of the partial sum each. The
 * addition of two values is the same whichever operand comes first, so
 * every rank receives the same bits and the replicas stay identical. */
#include <stdint.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_sync_bf16.h"

uint16_t dist_bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    /* A NaN stays a (quiet) NaN: rounding its payload could make it inf. */
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float dist_bf16_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

void dist_bf16_quantize(const float *g, float factor, float *residual, uint16_t *q, long n)
{
    for (long i = 0; i < n; i++) {
        float v = factor * g[i] + residual[i];
        q[i] = dist_bf16_round(v);
        residual[i] = v - dist_bf16_float(q[i]);
    }
}

void dist_bf16_dequantize(const uint16_t *q, float *out, long n)
{
    for (long i = 0; i < n; i++)
        out[i] = dist_bf16_float(q[i]);
}

/* MPI_User_function: inout = bf16(in + inout), summed in fp32. */
static void dist_bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = dist_bf16_round(dist_bf16_float(a[i]) + dist_bf16_float(b[i]));
}

int dist_bf16_op_create(MPI_Op *op)
{
    return MPI_Op_create(dist_bf16_sum, 1, op);
}
