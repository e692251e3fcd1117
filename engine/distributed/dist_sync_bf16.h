/* dist_sync_bf16.h — bf16 gradient compression with error feedback. */
#ifndef PUNCH_DIST_SYNC_BF16_H
#define PUNCH_DIST_SYNC_BF16_H

#include <stdint.h>
#include <mpi.h>

/* fp32 -> bf16, rounding to nearest even (NaN stays NaN), and back. */
uint16_t dist_bf16_round(float x);
float dist_bf16_float(uint16_t h);
/* Error feedback over n values: v = factor * g + residual, q = bf16(v),
 * residual = v - q (the carry for the next step). */
void dist_bf16_quantize(const float *g, float factor, float *residual, uint16_t *q, long n);
void dist_bf16_dequantize(const uint16_t *q, float *out, long n);
/* The commutative MPI_Op summing MPI_UINT16_T bf16 values in fp32, one
 * rounding per hop; free with MPI_Op_free. Returns MPI's code. */
int dist_bf16_op_create(MPI_Op *op);

#endif
