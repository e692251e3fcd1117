/* cpu_sum.h — the CPU backend's fixed-order sum (cpu_sum.c). */
#ifndef PUNCH_CPU_SUM_H
#define PUNCH_CPU_SUM_H

/* Sum of x[0 .. n-1] in a fixed order that vectorises: 16 running lanes
 * (lane j takes the elements i = j mod 16), then the lanes in order. */
float cpu_sum(const float *x, long n);

#endif
